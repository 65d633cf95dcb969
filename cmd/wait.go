package cmd

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/stsdiag/stsdiag/diagnose"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/repair"
	"github.com/stsdiag/stsdiag/report"
	"github.com/stsdiag/stsdiag/snapshot"
	"github.com/stsdiag/stsdiag/stuck"
)

// Verdicts of `wait`.
const (
	WaitComplete = "Complete"
	WaitStuck    = "Stuck"
	WaitTimedOut = "TimedOut"
	WaitNotFound = "NotFound"
)

// WaitResult is the document printed by `wait -o json`.
type WaitResult struct {
	metav1.TypeMeta `json:",inline"`
	Result          string                      `json:"result"`
	Elapsed         string                      `json:"elapsed"`
	Message         string                      `json:"message,omitempty"`
	StatefulSets    []report.StatefulSetSummary `json:"statefulSets"`
	Findings        []report.Finding            `json:"findings"`
	Actions         []repair.Action             `json:"actions,omitempty"`
}

// DeepCopyObject lets cli-runtime printers print the result.
func (r *WaitResult) DeepCopyObject() runtime.Object {
	c := *r
	return &c
}

// WaitOptions are the flags and state of `stsdiag wait`.
type WaitOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Selector   string
	Output     string
	JUnitFile  string
	Timeout    time.Duration
	StuckGrace time.Duration
	Fix        bool
	OpenShift  string

	scope snapshot.Scope
}

const waitExample = `  # A CI gate right after a rollout: fail within ~30s if it can never finish
  kubectl stsdiag wait web -n shop --timeout 10m

  # Repair what is safely repairable (--fix is the consent), then keep waiting
  oc stsdiag wait web -n myproject --fix

  # JUnit for the CI system, the usual log on stderr
  kubectl stsdiag wait -l tier=db -n shop -o junit > stsdiag-junit.xml`

// NewWaitCommand builds `stsdiag wait`.
func NewWaitCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &WaitOptions{configFlags: configFlags, IOStreams: streams}
	c := &cobra.Command{
		Use:   "wait NAME... [-n NAMESPACE] [-l SELECTOR] [--timeout 10m] [--stuck-grace 30s] [--fix]",
		Short: "Wait for StatefulSet rollouts; fail fast, with the reason, when one can never finish",
		Long: `wait follows StatefulSets with watches until their rollouts are complete: the spec observed,
every replica on the update revision, Ready and available for minReadySeconds, the partition
respected. It prints one line per change on stderr.

As soon as a finding of check has held for --stuck-grace (a pod stuck at startup, an unresolved
ImageStream name, an ImageStream tag not imported yet, ...) it stops and reports it with its
remedy and the pod's last events — unless --fix is given: then it applies fix's safe repairs once
and keeps waiting.

Exit codes: 0 complete; 1 stuck (findings held for the grace); 2 could not evaluate, StatefulSet
not found or deleted while waiting; 3 --timeout passed while still progressing.`,
		Example: waitExample,
		RunE:    runE(o),
	}
	f := c.Flags()
	f.StringVarP(&o.Selector, "selector", "l", "", "Label selector for the StatefulSets to wait for")
	f.StringVarP(&o.Output, "output", "o", "text", "Output format: text, json or junit")
	f.StringVar(&o.JUnitFile, "junit-file", "", "Also write a JUnit XML report to this file")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "Give up (exit 3) after this long")
	f.DurationVar(&o.StuckGrace, "stuck-grace", 30*time.Second, "How long a finding must hold before the rollout counts as stuck")
	f.BoolVar(&o.Fix, "fix", false, "Apply fix's safe repairs once when stuck, then keep waiting")
	f.StringVar(&o.OpenShift, "openshift", "auto", "Use the OpenShift image API: auto (if served), always or never")
	return c
}

// Complete fills in the scope.
func (o *WaitOptions) Complete(args []string) error {
	ns, _, err := namespace(o.configFlags, false)
	if err != nil {
		return err
	}
	o.scope = snapshot.Scope{Namespace: ns, Names: args}
	return nil
}

// Validate checks the flags.
func (o *WaitOptions) Validate() error {
	if len(o.scope.Names) == 0 && o.Selector == "" {
		return errors.New("name the StatefulSets to wait for, or select them with -l")
	}
	switch o.Output {
	case "text", "json", "junit":
	default:
		return fmt.Errorf("unknown output format %q: want text, json or junit", o.Output)
	}
	if o.Timeout <= 0 || o.StuckGrace < 0 {
		return errors.New("--timeout must be positive and --stuck-grace not negative")
	}
	var err error
	if o.scope.OpenShift, err = openshift.ParseMode(o.OpenShift); err != nil {
		return err
	}
	if o.scope.Selector, err = labels.Parse(o.Selector); err != nil {
		return fmt.Errorf("invalid --selector %q: %w", o.Selector, err)
	}
	return nil
}

// blocking reports whether a finding keeps the rollout from completing.
func blocking(f report.Finding) bool {
	return f.Severity == report.SeverityError || f.Code == report.ImageStreamTagNotFound ||
		(f.Code == report.OrphanedRevision && f.Pod != "")
}

func findingKey(f report.Finding) string {
	return strings.Join([]string{f.Code, f.Namespace, f.StatefulSet, f.Pod, f.Container}, "/")
}

// Run waits and sets the exit code.
func (o *WaitOptions) Run(ctx context.Context) error {
	start := time.Now()
	c, _, err := clients(o.configFlags, 0)
	if err != nil {
		return withCode(ExitError, err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	live, warnings, err := snapshot.StartLive(ctx, c, o.scope, nil)
	if err != nil {
		return o.finish(&WaitResult{Result: WaitNotFound, Message: err.Error()}, start, withCode(ExitError, err))
	}
	for _, w := range warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	firstSeen := map[string]time.Time{}
	lastLine := map[string]string{}
	var actions []repair.Action
	fixed := false
	var rep *report.Report
	for {
		snap, err := live.Snapshot()
		if err != nil {
			var nf *snapshot.NotFoundError
			if errors.As(err, &nf) && rep != nil {
				err = fmt.Errorf("%s: deleted while waiting", nf.What)
			}
			return o.finish(&WaitResult{Result: WaitNotFound, Message: err.Error(), Actions: actions}, start, withCode(ExitError, err))
		}
		rep = diagnose.Report(snap)
		now := time.Now()
		complete := o.progress(snap, lastLine)
		current := map[string]bool{}
		var expired []report.Finding
		var nextExpiry time.Duration = -1
		for _, f := range rep.Findings {
			if !blocking(f) {
				continue
			}
			key := findingKey(f)
			current[key] = true
			seen, ok := firstSeen[key]
			if !ok {
				seen = now
				firstSeen[key] = now
				fmt.Fprintf(o.ErrOut, "%s/%s: %s %s%s — stuck if it holds for %s\n", f.Namespace, f.StatefulSet, f.Code, f.Pod, reasonSuffix(f), o.StuckGrace)
			}
			if left := o.StuckGrace - now.Sub(seen); left <= 0 {
				expired = append(expired, f)
			} else if nextExpiry < 0 || left < nextExpiry {
				nextExpiry = left
			}
		}
		for key := range firstSeen {
			if !current[key] {
				delete(firstSeen, key)
			}
		}
		switch {
		case len(expired) > 0 && o.Fix && !fixed:
			fixed = true
			fmt.Fprintf(o.ErrOut, "stuck for %s: applying fix's safe repairs (--fix)\n", o.StuckGrace)
			applied, err := o.repair(ctx, c, rep, snap)
			actions = append(actions, applied...)
			if err != nil {
				return o.finish(&WaitResult{Result: WaitStuck, Message: err.Error(), Actions: actions}, start, withCode(ExitError, err))
			}
			for key := range firstSeen {
				delete(firstSeen, key)
			}
			continue
		case len(expired) > 0:
			res := &WaitResult{Result: WaitStuck, StatefulSets: rep.StatefulSets, Findings: rep.Findings, Actions: actions,
				Message: fmt.Sprintf("%d finding(s) held for %s: the rollout will not finish on its own", len(expired), o.StuckGrace)}
			return o.finish(res, start, withCode(ExitFindings, nil))
		case complete && len(current) == 0:
			res := &WaitResult{Result: WaitComplete, StatefulSets: rep.StatefulSets, Findings: rep.Findings, Actions: actions, Message: "rollout complete"}
			return o.finish(res, start, nil)
		}
		var timer <-chan time.Time
		if nextExpiry >= 0 {
			timer = time.After(nextExpiry + 10*time.Millisecond)
		}
		select {
		case <-live.Changed:
		case <-timer:
		case <-ctx.Done():
			res := &WaitResult{Result: WaitTimedOut, StatefulSets: rep.StatefulSets, Findings: rep.Findings, Actions: actions,
				Message: fmt.Sprintf("timed out after %s while the rollout was still progressing", o.Timeout)}
			return o.finish(res, start, withCode(ExitTimeout, nil))
		}
	}
}

// progress prints a line per StatefulSet whose rollout state changed and reports whether all
// selected StatefulSets are complete.
func (o *WaitOptions) progress(snap *snapshot.Snapshot, last map[string]string) bool {
	complete := true
	var sets []*appsv1.StatefulSet
	for i := range snap.StatefulSets {
		if snap.InScope(snap.StatefulSets[i].Namespace, snap.StatefulSets[i].Name) {
			sets = append(sets, &snap.StatefulSets[i])
		}
	}
	if len(sets) == 0 {
		return false
	}
	for _, set := range sets {
		line := repair.Progress(set)
		key := snapshot.Key(set.Namespace, set.Name)
		if last[key] != line {
			fmt.Fprintln(o.ErrOut, line)
			last[key] = line
		}
		if !stuck.RolloutComplete(set) {
			complete = false
		}
	}
	return complete
}

func (o *WaitOptions) repair(ctx context.Context, c snapshot.Clients, rep *report.Report, snap *snapshot.Snapshot) ([]repair.Action, error) {
	actions, _ := repair.Plan(rep, snap)
	exec := &repair.Executor{Kube: c.Kube, DryRun: repair.DryRunNone,
		Rediagnose: func(ctx context.Context) (*report.Report, *snapshot.Snapshot, error) {
			return diagnose.Run(ctx, c, o.scope)
		},
		Progress: func(a repair.Action) {
			fmt.Fprintf(o.ErrOut, "%-8s %s: %s\n", a.Result, a.Describe(), a.Message)
		}}
	if len(actions) == 0 {
		fmt.Fprintln(o.ErrOut, "nothing stsdiag can repair safely")
	}
	return exec.Apply(ctx, actions)
}

func reasonSuffix(f report.Finding) string {
	if f.Reason == "" {
		return ""
	}
	return " (" + f.Reason + ")"
}

// finish prints the verdict in the chosen format (and the JUnit file) and returns the exit.
func (o *WaitOptions) finish(res *WaitResult, start time.Time, exit error) error {
	res.SetGroupVersionKind(report.GroupVersion.WithKind("WaitResult"))
	elapsed := time.Since(start)
	res.Elapsed = elapsed.Round(10 * time.Millisecond).String()
	if res.StatefulSets == nil {
		res.StatefulSets = []report.StatefulSetSummary{}
	}
	if res.Findings == nil {
		res.Findings = []report.Finding{}
	}
	var err error
	switch o.Output {
	case "json":
		err = (&printers.JSONPrinter{}).PrintObj(res, o.Out)
	case "junit":
		err = writeJUnit(o.Out, res, elapsed)
	default:
		err = o.printText(res)
	}
	if err == nil && o.JUnitFile != "" {
		var f *os.File
		if f, err = os.Create(o.JUnitFile); err == nil {
			err = writeJUnit(f, res, elapsed)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil && exit == nil {
		return withCode(ExitError, err)
	}
	return exit
}

func (o *WaitOptions) printText(res *WaitResult) error {
	if res.Result == WaitNotFound {
		return nil
	}
	if res.Result != WaitComplete && len(res.Findings) > 0 {
		rep := report.New(false, res.StatefulSets, res.Findings)
		if err := report.PrintTable(o.Out, rep, report.TableOptions{Color: colorEnabled(o.Out)}); err != nil {
			return err
		}
		for _, f := range res.Findings {
			if events, ok := f.Details["events"].([]string); ok && len(events) > 0 {
				fmt.Fprintf(o.Out, "Last events of pod %s:\n", f.Pod)
				for _, e := range events {
					fmt.Fprintf(o.Out, "  %s\n", e)
				}
			}
		}
	}
	_, err := fmt.Fprintf(o.Out, "%s after %s: %s\n", res.Result, res.Elapsed, res.Message)
	return err
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes one testcase per StatefulSet; failures carry the findings.
func writeJUnit(w io.Writer, res *WaitResult, elapsed time.Duration) error {
	seconds := fmt.Sprintf("%.3f", elapsed.Seconds())
	suite := junitSuite{Name: "stsdiag wait", Time: seconds}
	byName := map[string][]report.Finding{}
	for _, f := range res.Findings {
		byName[snapshot.Key(f.Namespace, f.StatefulSet)] = append(byName[snapshot.Key(f.Namespace, f.StatefulSet)], f)
	}
	sets := append([]report.StatefulSetSummary(nil), res.StatefulSets...)
	sort.Slice(sets, func(i, j int) bool {
		return snapshot.Key(sets[i].Namespace, sets[i].Name) < snapshot.Key(sets[j].Namespace, sets[j].Name)
	})
	if len(sets) == 0 && res.Result == WaitNotFound {
		suite.Cases = append(suite.Cases, junitCase{Name: "statefulsets", Classname: "stsdiag.wait", Time: seconds,
			Failure: &junitFailure{Message: res.Message, Type: WaitNotFound, Text: res.Message}})
	}
	for _, s := range sets {
		tc := junitCase{Name: snapshot.Key(s.Namespace, s.Name), Classname: "stsdiag.wait", Time: seconds}
		var failing []report.Finding
		for _, f := range byName[tc.Name] {
			if blocking(f) {
				failing = append(failing, f)
			}
		}
		switch {
		case res.Result == WaitStuck && len(failing) > 0:
			var text strings.Builder
			var codes []string
			for _, f := range failing {
				codes = append(codes, f.Code)
				fmt.Fprintf(&text, "%s %s %s: %s\nremedy: %s\n", f.Severity, f.Code, f.Pod, f.Message, f.Remedy)
			}
			tc.Failure = &junitFailure{Message: strings.Join(codes, ", "), Type: WaitStuck, Text: text.String()}
		case res.Result == WaitTimedOut && s.Status != report.StatusComplete:
			tc.Failure = &junitFailure{Message: res.Message, Type: WaitTimedOut, Text: fmt.Sprintf("%d/%d ready, status %s", s.ReadyReplicas, s.Replicas, s.Status)}
		}
		if tc.Failure != nil {
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Tests = len(suite.Cases)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
