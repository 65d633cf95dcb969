// Package tekton checks deploy/tekton with Tekton's own Go types and validation
// (github.com/tektoncd/pipeline v1.12.0, built against the project's k8s.io v0.35.4). It is a
// module of its own so that Tekton's dependencies stay out of stsdiag's go.mod; `make unit` runs it.
package tekton

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/v1beta1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/cmd"
	"github.com/stsdiag/stsdiag/internal/render"
)

func readTask(t *testing.T) *v1.Task {
	t.Helper()
	return readTaskFile(t, "stsdiag-wait.yaml")
}

func readTaskFile(t *testing.T, name string) *v1.Task {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var task v1.Task
	if err := yaml.UnmarshalStrict(data, &task); err != nil {
		t.Fatal(err)
	}
	return &task
}

// TestTaskValidates: the Task is a tekton.dev/v1 Task that Tekton's defaulting and validation
// accept with the default feature flags (no alpha field).
func TestTaskValidates(t *testing.T) {
	task := readTask(t)
	if task.APIVersion != "tekton.dev/v1" || task.Kind != "Task" || task.Name != "stsdiag-wait" {
		t.Fatalf("%s %s %s", task.APIVersion, task.Kind, task.Name)
	}
	ctx := context.Background()
	task.SetDefaults(ctx)
	if err := task.Validate(ctx); err != nil {
		t.Fatalf("Tekton rejects the Task: %v", err)
	}
	if len(task.Spec.Steps) != 1 || task.Spec.Steps[0].Script == "" {
		t.Fatalf("want one script step, got %d", len(task.Spec.Steps))
	}
	var results []string
	for _, r := range task.Spec.Results {
		results = append(results, r.Name)
	}
	if !slices.Equal(results, []string{"verdict", "findings", "exit-code"}) {
		t.Errorf("results %v", results)
	}
}

// waitCommand is `stsdiag wait` from the command tree the binary runs.
func waitCommand(t *testing.T) *cobra.Command {
	t.Helper()
	root := cmd.NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	c, _, err := root.Find([]string{"wait"})
	if err != nil || c.Name() != "wait" {
		t.Fatalf("no wait command: %v", err)
	}
	return c
}

var (
	envParam = regexp.MustCompile(`^\$\(params\.([a-z-]+)\)$`)
	flagEnv  = regexp.MustCompile(`--([a-z-]+)="\$([A-Z_]+)"`)
)

// TestParamsAreWaitFlags: every parameter reaches wait: the names as the script's arguments, the
// image as the step's image, every other one through an environment variable (never spliced into
// the script) to a flag `wait` has, with the flag's default as its default.
func TestParamsAreWaitFlags(t *testing.T) {
	task := readTask(t)
	step := task.Spec.Steps[0]
	wait := waitCommand(t)
	envOf := map[string]string{} // param → environment variable
	for _, e := range step.Env {
		m := envParam.FindStringSubmatch(e.Value)
		if m == nil {
			t.Errorf("env %s=%s is not one parameter", e.Name, e.Value)
			continue
		}
		envOf[m[1]] = e.Name
	}
	flagOf := map[string]string{} // environment variable → flag
	for _, m := range flagEnv.FindAllStringSubmatch(step.Script, -1) {
		flagOf[m[2]] = m[1]
	}
	if strings.Contains(step.Script, "$(params.") {
		t.Error("the script splices a parameter; pass it through env")
	}
	if step.Image != "$(params.image)" || !slices.Equal(step.Args, []string{"$(params.statefulsets[*])"}) ||
		!strings.Contains(step.Script, `kubectl-stsdiag wait "$@" `) {
		t.Errorf("image %q, args %q: want $(params.image), the names as the script's arguments to wait", step.Image, step.Args)
	}
	for _, p := range task.Spec.Params {
		if p.Name == "image" || p.Name == "statefulsets" {
			continue
		}
		env, ok := envOf[p.Name]
		if !ok {
			t.Errorf("param %s reaches no env variable", p.Name)
			continue
		}
		flag, ok := flagOf[env]
		if !ok {
			t.Errorf("param %s: $%s is passed to no flag in the script", p.Name, env)
			continue
		}
		f := wait.Flags().Lookup(flag)
		if f == nil {
			f = wait.InheritedFlags().Lookup(flag) // --namespace: the kubectl flags of the root
		}
		if f == nil {
			t.Errorf("param %s: wait has no flag --%s", p.Name, flag)
			continue
		}
		if p.Default == nil || !sameDefault(f, p.Default.StringVal) {
			t.Errorf("param %s: default %v, flag --%s defaults to %q", p.Name, p.Default, flag, f.DefValue)
		}
	}
	if len(flagOf) != len(envOf) {
		t.Errorf("flags %v for env %v", flagOf, envOf)
	}
}

func sameDefault(f *pflag.Flag, value string) bool {
	if f.Value.Type() == "duration" {
		a, err1 := time.ParseDuration(f.DefValue)
		b, err2 := time.ParseDuration(value)
		return err1 == nil && err2 == nil && a == b
	}
	return f.DefValue == value
}

// runStep runs the step's script as Tekton would: the parameters in the environment, the names
// as arguments, $(results.x.path) replaced by files. kubectl-stsdiag is a fake that records its
// arguments, prints report and exits with code.
func runStep(t *testing.T, params map[string]string, names []string, report string, code int) (results map[string]string, exit int, args []string) {
	t.Helper()
	task := readTask(t)
	step := task.Spec.Steps[0]
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "report"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >\"" + dir + "/args\"\ncat \"" + dir + "/report\"\nexit " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kubectl-stsdiag"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	script := step.Script
	for _, r := range task.Spec.Results {
		script = strings.ReplaceAll(script, "$(results."+r.Name+".path)", filepath.Join(dir, "result-"+r.Name))
	}
	if strings.Contains(script, "$(") && regexp.MustCompile(`\$\([a-z]+\.`).MatchString(script) {
		t.Fatalf("a Tekton variable is left in the script: %s", script)
	}
	c := exec.Command("/bin/sh", append([]string{"-c", script, "stsdiag-wait"}, names...)...)
	c.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
	defaults := map[string]string{}
	for _, p := range task.Spec.Params {
		if p.Default != nil {
			defaults[p.Name] = p.Default.StringVal
		}
	}
	for _, e := range step.Env {
		name := envParam.FindStringSubmatch(e.Value)[1]
		v, ok := params[name]
		if !ok {
			v = defaults[name]
		}
		c.Env = append(c.Env, e.Name+"="+v)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), report) {
		t.Errorf("the log does not show the report: %q", out)
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	results = map[string]string{}
	for _, r := range task.Spec.Results {
		b, err := os.ReadFile(filepath.Join(dir, "result-"+r.Name))
		if err != nil {
			t.Fatalf("result %s not written: %v", r.Name, err)
		}
		results[r.Name] = string(b)
	}
	a, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	return results, exit, strings.Split(strings.TrimSuffix(string(a), "\n"), "\n")
}

// yamlReport is the document `wait -o yaml` prints for res, through wait's own printer.
func yamlReport(t *testing.T, res *apiv1.WaitResult) string {
	t.Helper()
	flags := render.NewPrintFlags()
	flags.OutputFormat = "yaml"
	var b bytes.Buffer
	if err := flags.PrintDocument(res, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestStepResults runs the step's script on wait's real YAML reports: the verdict, the number
// of findings and the exit code become results, the TaskRun fails with wait's code, and every
// parameter reaches its flag.
func TestStepResults(t *testing.T) {
	stuck := apiv1.NewWaitResult(apiv1.WaitStuck, "web-0 stuck")
	stuck.Elapsed = "31s"
	stuck.StatefulSets = []apiv1.StatefulSetSummary{{Namespace: "shop", Name: "web"}}
	stuck.Findings = []apiv1.Finding{
		{Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Pod: "web-0",
			Message: "web-0 runs old revision web-1 and is stuck at startup\nfindings: - not a finding", Remedy: "kubectl delete pod web-0 -n shop"},
		{Code: apiv1.ServiceMissing, Severity: apiv1.SeverityWarning, Namespace: "shop", StatefulSet: "web", Message: "no Service web"},
	}
	complete := apiv1.NewWaitResult(apiv1.WaitComplete, "")
	complete.StatefulSets = []apiv1.StatefulSetSummary{{Namespace: "shop", Name: "web"}}
	cases := []struct {
		name   string
		params map[string]string
		names  []string
		report string
		code   int
		want   map[string]string
		args   []string
	}{
		{"stuck", map[string]string{"namespace": "shop", "fix": "true", "hold": "1m"}, []string{"web", "db"}, yamlReport(t, stuck), 1,
			map[string]string{"verdict": "Stuck", "findings": "2", "exit-code": "1"},
			[]string{"wait", "web", "db", "--selector=", "--namespace=shop", "--timeout=10m", "--hold=1m", "--fix=true",
				"--rollback=false", "--disruption=delete", "-o", "yaml"}},
		{"complete", map[string]string{"selector": "tier=db", "disruption": "evict", "timeout": "20m"}, nil, yamlReport(t, complete), 0,
			map[string]string{"verdict": "Complete", "findings": "0", "exit-code": "0"},
			[]string{"wait", "--selector=tier=db", "--namespace=", "--timeout=20m", "--hold=30s", "--fix=false",
				"--rollback=false", "--disruption=evict", "-o", "yaml"}},
		{"bad flags: no report", map[string]string{"rollback": "true"}, []string{"web"}, "", 2,
			map[string]string{"verdict": "", "findings": "0", "exit-code": "2"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			results, exit, args := runStep(t, c.params, c.names, c.report, c.code)
			if exit != c.code {
				t.Errorf("exit %d, want %d", exit, c.code)
			}
			for k, v := range c.want {
				if results[k] != v {
					t.Errorf("result %s = %q, want %q", k, results[k], v)
				}
			}
			if c.args != nil && !slices.Equal(args, c.args) {
				t.Errorf("wait ran with\n%q, want\n%q", args, c.args)
			}
		})
	}
}

// TestPipelineExample: the example Pipeline validates with Tekton's validation, runs the gate
// after apply, and passes only parameters the Task declares.
func TestPipelineExample(t *testing.T) {
	data, err := os.ReadFile("pipeline-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p v1.Pipeline
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p.SetDefaults(ctx)
	if err := p.Validate(ctx); err != nil {
		t.Fatalf("Tekton rejects the Pipeline: %v", err)
	}
	declared := map[string]bool{}
	for _, param := range readTask(t).Spec.Params {
		declared[param.Name] = true
	}
	var gate *v1.PipelineTask
	var order []string
	for i, pt := range p.Spec.Tasks {
		order = append(order, pt.Name)
		if pt.TaskRef != nil && pt.TaskRef.Name == "stsdiag-wait" {
			gate = &p.Spec.Tasks[i]
		}
	}
	if !slices.Equal(order, []string{"clone", "build", "import", "preflight", "apply", "rollout-gate"}) {
		t.Errorf("tasks %v", order)
	}
	if gate == nil || !slices.Equal(gate.RunAfter, []string{"apply"}) {
		t.Fatalf("no stsdiag-wait gate after apply: %+v", gate)
	}
	preflight, apply := p.Spec.Tasks[3], p.Spec.Tasks[4]
	if preflight.TaskRef == nil || preflight.TaskRef.Name != "stsdiag-preflight" || !slices.Equal(apply.RunAfter, []string{"preflight"}) {
		t.Errorf("no stsdiag-preflight before apply: %+v, apply after %v", preflight.TaskRef, apply.RunAfter)
	}
	preflightParams := map[string]bool{}
	for _, param := range readTaskFile(t, "stsdiag-preflight.yaml").Spec.Params {
		preflightParams[param.Name] = true
	}
	for _, param := range preflight.Params {
		if !preflightParams[param.Name] {
			t.Errorf("the preflight task passes %s, which stsdiag-preflight does not declare", param.Name)
		}
	}
	for _, param := range gate.Params {
		if !declared[param.Name] {
			t.Errorf("the gate passes %s, which stsdiag-wait does not declare", param.Name)
		}
	}
}

// TestDocSnippet: the Pipeline snippet of docs/integrations.md, after an apply task, validates
// with Tekton and passes only parameters stsdiag-wait declares, the required image included.
func TestDocSnippet(t *testing.T) {
	doc, err := os.ReadFile("../../docs/integrations.md")
	if err != nil {
		t.Fatal(err)
	}
	var snippet string
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(block[1], "name: stsdiag-wait") {
			snippet = block[1]
		}
	}
	var tasks []v1.PipelineTask
	if err := yaml.UnmarshalStrict([]byte(snippet), &tasks); err != nil || len(tasks) != 1 {
		t.Fatalf("no Pipeline task snippet for stsdiag-wait: %v", err)
	}
	p := v1.Pipeline{}
	p.Name = "doc"
	p.Spec.Tasks = append([]v1.PipelineTask{{Name: "apply", TaskRef: &v1.TaskRef{Name: "apply"}}}, tasks...)
	ctx := context.Background()
	p.SetDefaults(ctx)
	if err := p.Validate(ctx); err != nil {
		t.Fatalf("Tekton rejects the snippet: %v", err)
	}
	declared := map[string]bool{}
	required := map[string]bool{}
	for _, param := range readTask(t).Spec.Params {
		declared[param.Name] = true
		if param.Default == nil {
			required[param.Name] = true
		}
	}
	for _, param := range tasks[0].Params {
		if !declared[param.Name] {
			t.Errorf("the snippet passes %s, which stsdiag-wait does not declare", param.Name)
		}
		delete(required, param.Name)
	}
	if len(required) > 0 {
		t.Errorf("the snippet misses required params %v", required)
	}
}

// TestStepAction: the StepAction validates with Tekton and is the Task's step: the same
// parameters, results, image, arguments, environment and script (results as step results).
func TestStepAction(t *testing.T) {
	data, err := os.ReadFile("stsdiag-wait-stepaction.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sa v1beta1.StepAction
	if err := yaml.UnmarshalStrict(data, &sa); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sa.SetDefaults(ctx)
	if err := sa.Validate(ctx); err != nil {
		t.Fatalf("Tekton rejects the StepAction: %v", err)
	}
	task := readTask(t)
	task.SetDefaults(ctx)
	step := task.Spec.Steps[0]
	if sa.APIVersion != "tekton.dev/v1beta1" || sa.Kind != "StepAction" || sa.Name != "stsdiag-wait" {
		t.Fatalf("%s %s %s", sa.APIVersion, sa.Kind, sa.Name)
	}
	if !reflect.DeepEqual(sa.Spec.Params, task.Spec.Params) {
		t.Errorf("params differ from the Task's:\n%+v\n%+v", sa.Spec.Params, task.Spec.Params)
	}
	var taskResults, stepResults []string
	for _, r := range task.Spec.Results {
		taskResults = append(taskResults, r.Name+": "+r.Description)
	}
	for _, r := range sa.Spec.Results {
		stepResults = append(stepResults, r.Name+": "+r.Description)
	}
	if !slices.Equal(taskResults, stepResults) {
		t.Errorf("results %v, the Task's %v", stepResults, taskResults)
	}
	if sa.Spec.Image != step.Image || !slices.Equal(sa.Spec.Args, step.Args) || !reflect.DeepEqual(sa.Spec.Env, step.Env) ||
		strings.ReplaceAll(sa.Spec.Script, "$(step.results.", "$(results.") != step.Script {
		t.Error("the StepAction's image, args, env or script differ from the Task's step")
	}
}

// TestPreflightTask: stsdiag-preflight validates with Tekton; its every parameter but the image
// reaches a flag of `preflight` through an environment variable, with the flag's default; its
// script, run on preflight's real YAML document with a fake binary, writes the results and exits
// with preflight's code.
func TestPreflightTask(t *testing.T) {
	task := readTaskFile(t, "stsdiag-preflight.yaml")
	ctx := context.Background()
	task.SetDefaults(ctx)
	if err := task.Validate(ctx); err != nil || task.Name != "stsdiag-preflight" || len(task.Spec.Steps) != 1 {
		t.Fatalf("Tekton rejects the Task (%v), or it is not one step named stsdiag-preflight", err)
	}
	step := task.Spec.Steps[0]
	root := cmd.NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	preflight, _, err := root.Find([]string{"preflight"})
	if err != nil || preflight.Name() != "preflight" {
		t.Fatalf("no preflight command: %v", err)
	}
	envOf := map[string]string{}
	for _, e := range step.Env {
		if m := envParam.FindStringSubmatch(e.Value); m != nil {
			envOf[m[1]] = e.Name
		}
	}
	flagOf := map[string]string{}
	for _, m := range flagEnv.FindAllStringSubmatch(step.Script, -1) {
		flagOf[m[2]] = m[1]
	}
	for _, p := range task.Spec.Params {
		if p.Name == "image" {
			continue
		}
		flag := flagOf[envOf[p.Name]]
		f := preflight.Flags().Lookup(flag)
		if f == nil {
			f = preflight.InheritedFlags().Lookup(flag)
		}
		if f == nil {
			t.Errorf("param %s reaches no flag of preflight (env %q, flag %q)", p.Name, envOf[p.Name], flag)
			continue
		}
		if p.Name != "manifests" && (p.Default == nil || !sameDefault(f, p.Default.StringVal)) {
			t.Errorf("param %s: default %v, flag --%s defaults to %q", p.Name, p.Default, flag, f.DefValue)
		}
	}
	doc := apiv1.NewPreflight()
	doc.Result = apiv1.PreflightWouldNotFinish
	doc.Findings = []apiv1.Finding{{Code: apiv1.PodUnschedulable, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Pod: "web-0", Message: "no node"}}
	flags := render.NewPrintFlags()
	flags.OutputFormat = "yaml"
	var report bytes.Buffer
	if err := flags.PrintDocument(doc, &report); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "report"), report.Bytes(), 0o644)
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >\"" + dir + "/args\"\ncat \"" + dir + "/report\"\nexit 1\n"
	os.WriteFile(filepath.Join(dir, "kubectl-stsdiag"), []byte(fake), 0o755)
	script := step.Script
	for _, r := range task.Spec.Results {
		script = strings.ReplaceAll(script, "$(results."+r.Name+".path)", filepath.Join(dir, "result-"+r.Name))
	}
	c := exec.Command("/bin/sh", "-c", script, "stsdiag-preflight")
	c.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
	values := map[string]string{"manifests": "k8s/", "recursive": "true"}
	for _, p := range task.Spec.Params {
		if _, ok := values[p.Name]; !ok && p.Default != nil {
			values[p.Name] = p.Default.StringVal
		}
	}
	for _, e := range step.Env {
		c.Env = append(c.Env, e.Name+"="+values[envParam.FindStringSubmatch(e.Value)[1]])
	}
	out, err := c.Output()
	exit := 0
	if ee, ok := err.(*exec.ExitError); ok {
		exit = ee.ExitCode()
	}
	if exit != 1 || !strings.Contains(string(out), report.String()) {
		t.Errorf("exit %d, log %q: want 1 and the document", exit, out)
	}
	for name, want := range map[string]string{"verdict": "WouldNotFinish", "findings": "1", "exit-code": "1"} {
		if got, _ := os.ReadFile(filepath.Join(dir, "result-"+name)); string(got) != want {
			t.Errorf("result %s = %q, want %q", name, got, want)
		}
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	want := []string{"preflight", "--filename=k8s/", "--recursive=true", "--namespace=", "--skip-images=false", "--fail-on=error", "-o", "yaml"}
	if got := strings.Split(strings.TrimSpace(string(args)), "\n"); !slices.Equal(got, want) {
		t.Errorf("preflight ran with %q, want %q", got, want)
	}
}
