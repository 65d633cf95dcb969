package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/rollout"
)

// TestOnSignal: once a signal cancelled the command's context, the exit is 130 whatever the run
// returned; a cancellation is 130 however wrapped; without either the code is kept.
func TestOnSignal(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want int
	}{
		{"fix --wait interrupted, mapped to a timeout", cancelled, withCode(ExitTimeout, fmt.Errorf("web: %w", rollout.ErrTimeout)), ExitInterrupted},
		{"check interrupted mid-LIST", cancelled, withCode(ExitError, fmt.Errorf("listing pods: %w", context.Canceled)), ExitInterrupted},
		{"findings, then a signal", cancelled, withCode(ExitFindings, nil), ExitInterrupted},
		{"a cancellation without a signal", live, fmt.Errorf("a: %w", fmt.Errorf("b: %w", context.Canceled)), ExitInterrupted},
		{"finished before the signal", cancelled, nil, ExitOK},
		{"a timeout", live, withCode(ExitTimeout, rollout.ErrTimeout), ExitTimeout},
		{"findings", live, withCode(ExitFindings, nil), ExitFindings},
		{"an error", live, errors.New("forbidden"), ExitError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, _ := exitCode(onSignal(c.ctx, c.err)); got != c.want {
				t.Errorf("exit %d, want %d", got, c.want)
			}
		})
	}
}

// TestSignalExits130: SIGINT while a command waits for the API server exits 130 at once, for
// every command that talks to the API (fix without --wait included).
func TestSignalExits130(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	kubeconfig := kubeconfigFor(t, hang.URL)
	for _, args := range [][]string{
		{"check"},
		{"check", "--contexts", "east,west"},
		{"fix", "--yes"},
		{"fix", "--yes", "--wait=1m"},
		{"wait", "web"},
		{"wait", "web", "--contexts", "east,west"},
		{"check", "--cluster-profiles", "fleet", "--clusterprofile-provider-file", providerFile(t)},
		{"wait", "web", "--all-cluster-profiles", "--clusterprofile-provider-file", providerFile(t)},
		{"canary", "web", "--steps", "1"},
		{"migrate", "web", "--pod-management-policy", "Parallel", "--yes"},
		{"migrate", "web", "--status"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			var out, errOut bytes.Buffer
			start := time.Now()
			code := run(ctx, append(args, "--kubeconfig", kubeconfig), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			if code != ExitInterrupted {
				t.Errorf("exit %d, want 130\nstdout %s\nstderr %s", code, out.String(), errOut.String())
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s after the signal", took)
			}
		})
	}
}

func TestWaitExit(t *testing.T) {
	cases := map[apiv1.Verdict]int{
		apiv1.WaitComplete: ExitOK, apiv1.WaitStuck: ExitFindings, apiv1.WaitRolledBack: ExitFindings, apiv1.WaitNotObserved: ExitFindings, apiv1.WaitTimedOut: ExitTimeout,
		apiv1.WaitInterrupted: ExitInterrupted, apiv1.WaitNotFound: ExitError, apiv1.WaitUnevaluable: ExitError,
	}
	for result, want := range cases {
		t.Run(string(result), func(t *testing.T) {
			if got, _ := exitCode(waitExit(model.NewWaitResult(result, "m"), nil, nil)); got != want {
				t.Errorf("exit %d, want %d", got, want)
			}
		})
	}
}

// TestHoldFlag: --hold is the one name on wait and watch; the former names still set it, with
// each command's default, and say they are deprecated on stderr (never on stdout).
func TestHoldFlag(t *testing.T) {
	kubeconfig := kubeconfigFor(t, "https://127.0.0.1:1")
	streams := genericiooptions.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	waitHold := func(args ...string) time.Duration {
		f := newWaitFlags(configFlagsFor(kubeconfig), streams)
		if err := f.command().ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		o, err := f.ToOptions([]string{"web"})
		if err != nil {
			t.Fatal(err)
		}
		return o.wait.Hold
	}
	watchHold := func(args ...string) time.Duration {
		f := newWatchFlags(configFlagsFor(kubeconfig), streams)
		if err := f.command().ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		o, err := f.ToOptions(nil)
		if err != nil {
			t.Fatal(err)
		}
		return o.serve.Watch.Hold
	}
	cases := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"wait default", waitHold(), 30 * time.Second},
		{"wait --hold", waitHold("--hold", "7s"), 7 * time.Second},
		{"wait --stuck-grace", waitHold("--stuck-grace", "8s"), 8 * time.Second},
		{"watch default", watchHold(), 2 * time.Minute},
		{"watch --hold", watchHold("--hold", "9s"), 9 * time.Second},
		{"watch --min-stuck", watchHold("--min-stuck", "10s"), 10 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("hold %s, want %s", c.got, c.want)
			}
		})
	}

	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"wait", "web", "--stuck-grace", "-1s", "--kubeconfig", kubeconfig}, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	want := "Flag --stuck-grace has been deprecated, use --hold instead\nerror: --hold must not be negative\n"
	if code != ExitError || out.Len() != 0 || errOut.String() != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, stderr %q", code, out.String(), errOut.String(), want)
	}
}

// TestScopeFlags: one validation and one wording of the scope flags on every command.
func TestScopeFlags(t *testing.T) {
	kubeconfig := kubeconfigFor(t, "https://127.0.0.1:1")
	namesWithA := "error: StatefulSet names cannot be combined with --all-namespaces: names are looked up in one namespace\n"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"check", "web", "-A"}, namesWithA},
		{[]string{"fix", "web", "-A"}, namesWithA},
		{[]string{"wait", "web", "-A"}, namesWithA},
		{[]string{"check", "--contexts", "east", "--all-contexts"}, "error: --contexts cannot be combined with --all-contexts\n"},
		{[]string{"wait", "web", "--contexts", "east", "--context", "west"}, "error: --context cannot be combined with --contexts or --all-contexts\n"},
		{[]string{"fix", "--contexts", "east,west"}, "error: " + errFleetFix.Error() + "\n"},
		{[]string{"fix", "--all-contexts"}, "error: " + errFleetFix.Error() + "\n"},
		{[]string{"fix", "--cluster-profiles", "fleet", "--clusterprofile-provider-file", "/nonexistent.json"}, "error: " + errFleetFix.Error() + "\n"},
		{[]string{"check", "--cluster-profiles", "fleet"}, "error: --cluster-profiles needs --clusterprofile-provider-file: the exec plugins that get each access provider's credentials (docs/fleet.md)\n"},
		{[]string{"wait", "web", "--all-cluster-profiles", "--cluster-profiles", "fleet"}, "error: --cluster-profiles cannot be combined with --all-cluster-profiles\n"},
		{[]string{"check", "--cluster-profiles", "fleet", "--contexts", "east"}, "error: --cluster-profiles and --all-cluster-profiles cannot be combined with --contexts or --all-contexts: the fleet is the hub's ClusterProfiles or the kubeconfig's contexts\n"},
		{[]string{"check", "--clusterprofile-provider-file", "p.json"}, "error: --clusterprofile-provider-file goes with --cluster-profiles NAMESPACE or --all-cluster-profiles\n"},
		{[]string{"check", "--contexts", "east", "--cluster-concurrency", "0"}, "error: --cluster-concurrency must be at least 1\n"},
		{[]string{"check", "--cluster-profiles", "fleet", "--clusterprofile-provider-file", "/nonexistent.json"}, "error: reading the ClusterProfile provider file: open /nonexistent.json: no such file or directory\n"},
		{[]string{"explain", "web", "--cluster-profiles", "fleet"}, "error: unknown flag: --cluster-profiles\n"},
		{[]string{"wait", "-A"}, "error: name the StatefulSets to wait for, or select them with -l\n"},
		{[]string{"watch", "web"}, "error: unknown command \"web\" for \"kubectl stsdiag watch\"\n"},
		{[]string{"version", "-o", "wide"}, "error: unknown output format \"wide\": want one of table, json, yaml, kyaml\n"},
		{[]string{"wait", "web", "--openshift", "perhaps"}, ""},
		{[]string{"watch", "--openshift", "perhaps"}, ""},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append(c.args, "--kubeconfig", kubeconfig), genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
			if code != ExitError || out.Len() != 0 || strings.Count(errOut.String(), "\n") != 1 || !strings.HasPrefix(errOut.String(), "error: ") {
				t.Fatalf("exit %d, stdout %q, stderr %q: want exit 2 and one error line", code, out.String(), errOut.String())
			}
			if c.want != "" && errOut.String() != c.want {
				t.Errorf("stderr %q, want %q", errOut.String(), c.want)
			}
		})
	}
}

// TestWaitAllNamespaces: wait -A -l waits for the selected StatefulSets of every namespace.
func TestWaitAllNamespaces(t *testing.T) {
	f := newWaitFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), genericiooptions.IOStreams{})
	if err := f.command().ParseFlags([]string{"-A", "-l", "tier=db"}); err != nil {
		t.Fatal(err)
	}
	o, err := f.ToOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.scope.Namespace != "" || o.scope.Selector.String() != "tier=db" || !o.scope.allNamespaces {
		t.Errorf("scope %+v, want every namespace and tier=db", o.scope)
	}
}

// TestToOptionsLeavesFlags: building the options twice from the same flags gives the same
// options, and the flags as typed are unchanged (parsing never writes back).
func TestToOptionsLeavesFlags(t *testing.T) {
	f := newCheckFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), genericiooptions.IOStreams{})
	if err := f.command().ParseFlags([]string{"--feature-gates", "MaxUnavailableStatefulSet=false", "-l", "app=web", "--fail-on", "warning"}); err != nil {
		t.Fatal(err)
	}
	first, err := f.ToOptions([]string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.ToOptions([]string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Diagnosis.FeatureGates != "MaxUnavailableStatefulSet=false" || f.Scope.Selector != "app=web" || f.FailOn != "warning" {
		t.Errorf("flags changed: %+v %+v %q", f.Diagnosis, f.Scope, f.FailOn)
	}
	if first.failOn != apiv1.SeverityWarning || second.failOn != apiv1.SeverityWarning ||
		first.diagnosis.FeatureGates["MaxUnavailableStatefulSet"] || second.diagnosis.FeatureGates["MaxUnavailableStatefulSet"] ||
		len(second.diagnosis.FeatureGates) != 1 || second.scope.Namespace != "shop" || second.scope.Names[0] != "web" {
		t.Errorf("options differ or are wrong: %+v / %+v", first, second)
	}
}

// TestConfirmWithAdmission: check and fix take --confirm-with-admission, off by default (it
// sends dry-run writes); with it their use cases are told to ask admission (gather.SourceFor).
func TestConfirmWithAdmission(t *testing.T) {
	config := configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1"))
	for _, on := range []bool{false, true} {
		args := []string{}
		if on {
			args = append(args, "--confirm-with-admission")
		}
		check := newCheckFlags(config, genericiooptions.IOStreams{})
		fix := newFixFlags(config, genericiooptions.IOStreams{})
		if err := check.command().ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		if err := fix.command().ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		co, err := check.ToOptions(nil)
		if err != nil {
			t.Fatal(err)
		}
		fo, err := fix.ToOptions(nil)
		if err != nil {
			t.Fatal(err)
		}
		if co.admission != on || fo.admission != on {
			t.Errorf("flag %v: check %v, fix %v", on, co.admission, fo.admission)
		}
	}
}

// providerFile is a ClusterProfile provider file with one provider.
func providerFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "providers.json")
	if err := os.WriteFile(path, []byte(`{"providers": [{"name": "token", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "true"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
