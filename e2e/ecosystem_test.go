package e2e

// Where users already look (issue 16): GitHub Actions annotations and step summaries.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/scenario"
)

// runEnv runs the built binary like stsdiagRun, with extra environment variables.
func runEnv(t *testing.T, cfg *envconf.Config, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, stsdiag, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+cfg.KubeconfigFile(), "NO_COLOR=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", args, err)
	}
	t.Logf("$ %v %s → exit %d\n%s%s", env, strings.Join(args, " "), code, out.String(), errOut.String())
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// linesWith returns the lines of s that start with prefix.
func linesWith(s, prefix string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// TestGitHubActions: under GITHUB_ACTIONS=true, check and wait annotate each error finding and
// append a Markdown table to $GITHUB_STEP_SUMMARY; stdout stays the document asked for.
func TestGitHubActions(t *testing.T) {
	const ns = "gha-stuck"
	f := features.New("GitHub Actions output").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if err := scenario.StuckRollout(ctx, cs, ns, "web", 2); err != nil {
				t.Fatal(err)
			}
			provenStuck(ctx, t, cs, ns, "web", 30*time.Second)
			return ctx
		}).
		Assess("check: one ::error line per error finding, the summary appended", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			summary := filepath.Join(t.TempDir(), "step-summary.md")
			if err := os.WriteFile(summary, []byte("## earlier step\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary}
			r := runEnv(t, cfg, env, "check", "-n", ns, "-o", "json")
			if r.code != 1 {
				t.Fatalf("exit %d, want 1", r.code)
			}
			rep := decodeReport(t, r) // stdout is still exactly the JSON document
			if len(rep.Findings) != 1 || rep.Findings[0].Code != apiv1.StaleRevisionStuck {
				t.Fatalf("findings %v", codes(rep))
			}
			got := rep.Findings[0]
			want := "::error title=StaleRevisionStuck::gha-stuck/web/web-0: " + got.Message + " — kubectl delete pod web-0 -n gha-stuck"
			if lines := linesWith(r.stderr, "::"); len(lines) != 1 || lines[0] != want {
				t.Errorf("annotations %q,\nwant exactly %q", lines, want)
			}
			body, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"## earlier step\n### stsdiag check\n\n1 finding (1 error, 0 warnings, 0 info) in 1 StatefulSet checked (1 stuck).\n\n",
				"| 🔴 error | StaleRevisionStuck | gha-stuck/web | web-0 | ",
				" | `kubectl delete pod web-0 -n gha-stuck` |\n",
			} {
				if !strings.Contains(string(body), want) {
					t.Errorf("step summary lacks %q:\n%s", want, body)
				}
			}
			plain := stsdiagRun(t, cfg, "check", "-n", ns)
			if strings.Contains(plain.stderr+plain.stdout, "::error") {
				t.Errorf("annotations without GITHUB_ACTIONS=true:\n%s", plain.stderr)
			}
			return ctx
		}).
		Assess("wait: the same annotation and a Stuck summary", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			summary := filepath.Join(t.TempDir(), "step-summary.md")
			env := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary}
			r := runEnv(t, cfg, env, "wait", "web", "-n", ns, "--stuck-grace", "2s", "--timeout", "1m", "-o", "json")
			if r.code != 1 {
				t.Fatalf("exit %d, want 1", r.code)
			}
			lines := linesWith(r.stderr, "::")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "::error title=StaleRevisionStuck::gha-stuck/web/web-0: ") ||
				!strings.HasSuffix(lines[0], " — kubectl delete pod web-0 -n gha-stuck") {
				t.Errorf("annotations %q", lines)
			}
			body, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(body), "### stsdiag wait\n\n**Stuck** after ") ||
				!strings.Contains(string(body), "| 🔴 error | StaleRevisionStuck | gha-stuck/web | web-0 | ") {
				t.Errorf("step summary:\n%s", body)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
