package cmd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/render"
)

// action is the part of action.yml (GitHub's metadata syntax) the tests read; unknown keys fail.
type action struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Author      string `json:"author"`
	Branding    struct {
		Icon  string `json:"icon"`
		Color string `json:"color"`
	} `json:"branding"`
	Inputs map[string]struct {
		Description string `json:"description"`
		Required    bool   `json:"required"`
		Default     string `json:"default"`
	} `json:"inputs"`
	Outputs map[string]struct {
		Description string `json:"description"`
		Value       string `json:"value"`
	} `json:"outputs"`
	Runs struct {
		Using string       `json:"using"`
		Steps []actionStep `json:"steps"`
	} `json:"runs"`
}

type actionStep struct {
	Name             string            `json:"name"`
	ID               string            `json:"id"`
	If               string            `json:"if"`
	Shell            string            `json:"shell"`
	Run              string            `json:"run"`
	Uses             string            `json:"uses"`
	With             map[string]string `json:"with"`
	Env              map[string]string `json:"env"`
	WorkingDirectory string            `json:"working-directory"`
}

func readAction(t *testing.T) *action {
	t.Helper()
	data, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.UnmarshalStrict(data, &a); err != nil {
		t.Fatal(err)
	}
	return &a
}

func (a *action) step(t *testing.T, name string) actionStep {
	t.Helper()
	for _, s := range a.Runs.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %q", name)
	return actionStep{}
}

var (
	envInput    = regexp.MustCompile(`^\$\{\{ inputs\.([a-z-]+) \}\}$`)
	flagFromEnv = regexp.MustCompile(`--([a-z-]+)="\$([A-Z_]+)"`)
)

// TestActionSchema: action.yml is a composite action whose every run step names its shell and
// splices no expression into its script, whose outputs come from the wait or the preflight step,
// and whose every input reaches a flag of the command of each step it reaches (wait, preflight;
// kubectl's for kubeconfig and context), the names, the manifests, the command and the installer's
// inputs aside, with the flag's default as its default.
func TestActionSchema(t *testing.T) {
	a := readAction(t)
	if a.Name == "" || a.Description == "" || a.Runs.Using != "composite" || len(a.Runs.Steps) == 0 {
		t.Fatalf("name %q, description %q, runs.using %q: want a composite action", a.Name, a.Description, a.Runs.Using)
	}
	for _, s := range a.Runs.Steps {
		switch {
		case s.Run != "" && s.Uses != "":
			t.Errorf("step %q: both run and uses", s.Name)
		case s.Run != "" && s.Shell != "bash":
			t.Errorf("step %q: run without shell: bash", s.Name)
		case s.Run == "" && s.Uses == "":
			t.Errorf("step %q: neither run nor uses", s.Name)
		}
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %q splices an expression into its script; pass it through env", s.Name)
		}
	}
	for name, o := range a.Outputs {
		if o.Value != "${{ steps.wait.outputs."+name+" || steps.preflight.outputs."+name+" }}" {
			t.Errorf("output %s = %q", name, o.Value)
		}
	}
	reached := map[string]bool{}
	for _, command := range []string{"wait", "preflight"} {
		step := a.step(t, "stsdiag "+command)
		if step.If != "inputs.command == '"+command+"'" {
			t.Errorf("step %q runs if %q", step.Name, step.If)
		}
		c, _, err := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard()).Find([]string{command})
		if err != nil {
			t.Fatal(err)
		}
		flagOf := map[string]string{}
		for _, m := range flagFromEnv.FindAllStringSubmatch(step.Run, -1) {
			flagOf[m[2]] = m[1]
		}
		for env, v := range step.Env {
			m := envInput.FindStringSubmatch(v)
			if m == nil {
				t.Errorf("step %q: env %s=%s is not one input", step.Name, env, v)
				continue
			}
			name, in := m[1], a.Inputs[m[1]]
			reached[name] = true
			switch name {
			case "statefulsets":
				if !strings.Contains(step.Run, `"$`+env+`"`) || !strings.Contains(step.Run, `wait "${names[@]}"`) {
					t.Errorf("the names are not wait's arguments")
				}
				continue
			case "manifests":
				if !strings.Contains(step.Run, `"$`+env+`"`) || !strings.Contains(step.Run, `args+=(--filename="$f")`) {
					t.Errorf("the manifests are not preflight's --filename flags")
				}
				continue
			}
			flag, ok := flagOf[env]
			if !ok {
				t.Errorf("input %s: $%s is passed to no flag of %s", name, env, command)
				continue
			}
			f := c.Flags().Lookup(flag)
			if f == nil {
				f = c.InheritedFlags().Lookup(flag)
			}
			if f == nil {
				t.Errorf("input %s: %s has no flag --%s", name, command, flag)
				continue
			}
			if !sameFlagDefault(f.Value.Type(), f.DefValue, in.Default) {
				t.Errorf("input %s: default %q, %s --%s defaults to %q", name, in.Default, command, flag, f.DefValue)
			}
		}
	}
	special := map[string]bool{"version": true, "install-from": true, "command": true}
	for name, in := range a.Inputs {
		if in.Description == "" {
			t.Errorf("input %s: no description", name)
		}
		if !special[name] && !reached[name] {
			t.Errorf("input %s reaches no env variable of the wait or preflight step", name)
		}
	}
}

func sameFlagDefault(typ, flagDefault, inputDefault string) bool {
	if typ == "duration" {
		a, err1 := parseDurationOrEmpty(flagDefault)
		b, err2 := parseDurationOrEmpty(inputDefault)
		return err1 == nil && err2 == nil && a == b
	}
	return flagDefault == inputDefault
}

func parseDurationOrEmpty(s string) (string, error) {
	d, err := time.ParseDuration(s)
	return d.String(), err
}

// runActionStep runs a step's script as the runner does (bash --noprofile --norc -eo pipefail)
// with env, in dir.
func runActionStep(t *testing.T, s actionStep, env []string, dir string) (stdout, stderr string, exit int) {
	t.Helper()
	script := filepath.Join(dir, "step.sh")
	if err := os.WriteFile(script, []byte(s.Run), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	c.Dir = dir
	c.Env = env
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		exit = ee.ExitCode()
	}
	return out.String(), errb.String(), exit
}

// runStepWithFake runs step's script with the given inputs (the others at their defaults) and a
// fake kubectl-stsdiag that records its arguments and prints doc as YAML, exiting 1. It returns
// the step's output and exit, the report printed, GITHUB_OUTPUT and the fake's arguments.
func runStepWithFake(t *testing.T, a *action, step actionStep, doc runtime.Object, inputs map[string]string) (stdout, stderr string, exit int, report, output string, args []string) {
	t.Helper()
	flags := render.NewPrintFlags()
	flags.OutputFormat = "yaml"
	var buf bytes.Buffer
	if err := flags.PrintDocument(doc, &buf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "report"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >\"" + dir + "/args\"\ncat \"" + dir + "/report\"\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "kubectl-stsdiag"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + dir + ":/usr/bin:/bin", "GITHUB_OUTPUT=" + filepath.Join(dir, "output")}
	for name, v := range step.Env {
		input := envInput.FindStringSubmatch(v)[1]
		value, ok := inputs[input]
		if !ok {
			value = a.Inputs[input].Default
		}
		env = append(env, name+"="+value)
	}
	stdout, stderr, exit = runActionStep(t, step, env, dir)
	out, _ := os.ReadFile(filepath.Join(dir, "output"))
	recorded, _ := os.ReadFile(filepath.Join(dir, "args"))
	return stdout, stderr, exit, buf.String(), string(out), strings.Split(strings.TrimSpace(string(recorded)), "\n")
}

// TestActionWaitStep runs the wait step's script with a fake kubectl-stsdiag that prints wait's
// real YAML report: the inputs reach their flags, the outputs carry the verdict, the step exits
// with wait's code.
func TestActionWaitStep(t *testing.T) {
	a := readAction(t)
	wait := a.step(t, "stsdiag wait")
	stuck := apiv1.NewWaitResult(apiv1.WaitStuck, "web-0 stuck")
	stuck.Findings = []apiv1.Finding{
		{Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Pod: "web-0", Message: "stuck\nfindings:\n- no"},
		{Code: apiv1.ServiceMissing, Severity: apiv1.SeverityWarning, Namespace: "shop", StatefulSet: "web", Message: "no Service"},
		{Code: apiv1.OrphanedRevision, Severity: apiv1.SeverityWarning, Namespace: "shop", StatefulSet: "db", Message: "orphan"},
	}
	inputs := map[string]string{"statefulsets": "web, db\ncache", "namespace": "shop", "fix": "true", "context": "prod"}
	stdout, stderr, exit, report, out, got := runStepWithFake(t, a, wait, stuck, inputs)
	if exit != 1 || stderr != "" || !strings.Contains(stdout, report) {
		t.Errorf("exit %d, stderr %q, stdout %q: want 1, the report in the log", exit, stderr, stdout)
	}
	if out != "verdict=Stuck\nfindings=3\nexit-code=1\n" {
		t.Errorf("GITHUB_OUTPUT %q", out)
	}
	want := []string{"wait", "web", "db", "cache", "--selector=", "--namespace=shop", "--timeout=10m", "--hold=30s", "--fix=true",
		"--rollback=false", "--disruption=delete", "--junit-file=", "--context=prod", "-o", "yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("wait ran with\n%q, want\n%q", got, want)
	}
}

// TestActionPreflightStep runs the preflight step's script with a fake kubectl-stsdiag that
// prints preflight's real YAML document: the manifests become -f flags, the inputs reach their
// flags, the outputs carry the verdict, the step exits with preflight's code.
func TestActionPreflightStep(t *testing.T) {
	a := readAction(t)
	step := a.step(t, "stsdiag preflight")
	doc := apiv1.NewPreflight()
	doc.Result = apiv1.PreflightWouldNotFinish
	doc.Findings = []apiv1.Finding{{Code: apiv1.PodCreateFailed, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Pod: "web-2", Message: "quota"}}
	inputs := map[string]string{"manifests": "k8s/web.yaml, k8s/db\nbase", "recursive": "true", "namespace": "shop"}
	stdout, stderr, exit, report, out, got := runStepWithFake(t, a, step, doc, inputs)
	if exit != 1 || stderr != "" || !strings.Contains(stdout, report) {
		t.Errorf("exit %d, stderr %q, stdout %q: want 1, the report in the log", exit, stderr, stdout)
	}
	if out != "verdict=WouldNotFinish\nfindings=1\nexit-code=1\n" {
		t.Errorf("GITHUB_OUTPUT %q", out)
	}
	want := []string{"preflight", "--filename=k8s/web.yaml", "--filename=k8s/db", "--filename=base", "--recursive=true", "--skip-images=false",
		"--field-manager=stsdiag-preflight", "--fail-on=error", "--namespace=shop", "--junit-file=", "-o", "yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("preflight ran with\n%q, want\n%q", got, want)
	}
}

// TestActionInstallsRelease runs the release install step against a release laid out as
// .goreleaser.yaml names it (archive and checksums.txt): the binary lands on GITHUB_PATH; an
// archive whose checksum does not match is refused and nothing is installed.
func TestActionInstallsRelease(t *testing.T) {
	gr, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`name_template: "kubectl-stsdiag_{{ .Tag }}_{{ .Os }}_{{ .Arch }}"`, "name_template: checksums.txt", "algorithm: sha256"} {
		if !strings.Contains(string(gr), want) {
			t.Fatalf(".goreleaser.yaml no longer says %s: update action.yml's install step", want)
		}
	}
	install := readAction(t).step(t, "Install kubectl-stsdiag (release)")
	for _, tamper := range []bool{false, true} {
		t.Run(fmt.Sprintf("tampered=%v", tamper), func(t *testing.T) {
			dir := t.TempDir()
			rel := filepath.Join(dir, "repo", "releases", "download", "v9.9.9")
			os.MkdirAll(rel, 0o755)
			archive := "kubectl-stsdiag_v9.9.9_linux_arm64.tar.gz"
			data := tarGz(t, map[string]string{"kubectl-stsdiag": "#!/bin/sh\necho fake\n", "README.md": "readme"})
			sum := sha256.Sum256(data)
			if tamper {
				data = tarGz(t, map[string]string{"kubectl-stsdiag": "#!/bin/sh\necho evil\n"})
			}
			os.WriteFile(filepath.Join(rel, archive), data, 0o644)
			os.WriteFile(filepath.Join(rel, "checksums.txt"), []byte(fmt.Sprintf("%x  other.zip\n%x  %s\n", sha256.Sum256(nil), sum, archive)), 0o644)
			temp := filepath.Join(dir, "runner-temp")
			os.MkdirAll(temp, 0o755)
			env := []string{"PATH=/usr/bin:/bin", "RUNNER_OS=Linux", "RUNNER_ARCH=ARM64", "RUNNER_TEMP=" + temp,
				"GITHUB_PATH=" + filepath.Join(dir, "path"), "STSDIAG_VERSION=v9.9.9", "STSDIAG_REPO_URL=file://" + filepath.Join(dir, "repo")}
			_, stderr, exit := runActionStep(t, install, env, dir)
			bin := filepath.Join(temp, "stsdiag", "bin", "kubectl-stsdiag")
			path, _ := os.ReadFile(filepath.Join(dir, "path"))
			_, statErr := os.Stat(bin)
			if tamper {
				if exit == 0 || statErr == nil || len(path) > 0 {
					t.Errorf("a tampered archive was installed (exit %d, %s)", exit, stderr)
				}
				return
			}
			if exit != 0 || statErr != nil || string(path) != filepath.Join(temp, "stsdiag", "bin")+"\n" {
				t.Errorf("exit %d, stderr %s, GITHUB_PATH %q, binary %v", exit, stderr, path, statErr)
			}
		})
	}
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(content))})
		tw.Write([]byte(content))
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

// TestActionDocSnippet: the workflow snippet of docs/integrations.md uses the action with
// inputs it declares and outputs it sets.
func TestActionDocSnippet(t *testing.T) {
	doc, err := os.ReadFile("../docs/integrations.md")
	if err != nil {
		t.Fatal(err)
	}
	var snippet string
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(block[1], "uses: stsdiag/stsdiag@") {
			snippet = block[1]
		}
	}
	var steps []actionStep
	if err := yaml.UnmarshalStrict([]byte(snippet), &steps); err != nil || len(steps) == 0 {
		t.Fatalf("no workflow snippet using the action: %v", err)
	}
	a := readAction(t)
	for _, s := range steps {
		if s.Uses == "" {
			continue
		}
		if len(s.With) == 0 {
			t.Error("the snippet passes no input")
		}
		for k := range s.With {
			if _, ok := a.Inputs[k]; !ok {
				t.Errorf("the snippet passes %s, which action.yml does not declare", k)
			}
		}
	}
	for _, m := range regexp.MustCompile(`steps\.gate\.outputs\.([a-z-]+)`).FindAllStringSubmatch(snippet, -1) {
		if _, ok := a.Outputs[m[1]]; !ok {
			t.Errorf("the snippet reads output %s, which action.yml does not set", m[1])
		}
	}
}
