package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/stsdiag/stsdiag/diagnose"
	"github.com/stsdiag/stsdiag/monitor"
	"github.com/stsdiag/stsdiag/repair"
	"github.com/stsdiag/stsdiag/report"
	"github.com/stsdiag/stsdiag/snapshot"
)

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
	return parseScopeFlags(&o.scope, o.OpenShift, o.Selector)
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
		return o.finish(&report.WaitResult{Result: report.WaitNotFound, Message: err.Error()}, start, err)
	}
	for _, w := range warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	opts := monitor.GateOptions{StuckGrace: o.StuckGrace, Log: o.ErrOut}
	if o.Fix {
		opts.Repair = func(ctx context.Context, rep *report.Report, snap *snapshot.Snapshot) ([]repair.Action, error) {
			return o.repair(ctx, c, rep, snap)
		}
	}
	res, err := monitor.Gate(ctx, live, opts)
	if res.Result == report.WaitTimedOut {
		res.Message = fmt.Sprintf("timed out after %s while the rollout was still progressing", o.Timeout)
	}
	return o.finish(res, start, err)
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

// finish prints the verdict in the chosen format (and the JUnit file) and returns the exit.
func (o *WaitOptions) finish(res *report.WaitResult, start time.Time, failure error) error {
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
		err = report.WriteJUnit(o.Out, res, elapsed)
	default:
		err = o.printText(res)
	}
	if err == nil && o.JUnitFile != "" {
		var f *os.File
		if f, err = os.Create(o.JUnitFile); err == nil {
			err = report.WriteJUnit(f, res, elapsed)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	switch {
	case failure != nil:
		return withCode(ExitError, failure)
	case err != nil:
		return withCode(ExitError, err)
	case res.Result == report.WaitNotFound:
		return withCode(ExitError, errors.New(res.Message))
	case res.Result == report.WaitStuck:
		return withCode(ExitFindings, nil)
	case res.Result == report.WaitTimedOut:
		return withCode(ExitTimeout, nil)
	}
	return nil
}

func (o *WaitOptions) printText(res *report.WaitResult) error {
	if res.Result == report.WaitNotFound {
		return nil
	}
	if res.Result != report.WaitComplete && len(res.Findings) > 0 {
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
