package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/stsdiag/stsdiag/internal/gate"
	"github.com/stsdiag/stsdiag/internal/gather"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/snapshot"
)

// WaitOptions are the flags and state of `stsdiag wait`.
type WaitOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	PrintFlags *render.PrintFlags

	Selector   string
	JUnitFile  string
	Timeout    time.Duration
	StuckGrace time.Duration
	Fix        bool
	Rollback   bool
	OpenShift  string
	diagnosis  *diagnosisFlags
	// Contexts of a fleet (--contexts, --all-contexts); empty for one cluster.
	Contexts    []string
	AllContexts bool

	scope gather.Scope
}

const waitExample = `  # A CI gate right after a rollout: fail within ~30s if it can never finish
  kubectl stsdiag wait web -n shop --timeout 10m

  # Repair what is safely repairable (--fix is the consent), then keep waiting
  oc stsdiag wait web -n myproject --fix

  # JUnit for the CI system, the usual log on stderr
  kubectl stsdiag wait -l tier=db -n shop -o junit > stsdiag-junit.xml`

// NewWaitCommand builds `stsdiag wait`.
func NewWaitCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &WaitOptions{configFlags: configFlags, IOStreams: streams,
		PrintFlags: render.NewPrintFlags(render.FormatJUnit).WithAlias("text", render.FormatTable), diagnosis: newDiagnosisFlags()}
	c := &cobra.Command{
		Use:   "wait NAME... [-n NAMESPACE] [-l SELECTOR] [--timeout 10m] [--stuck-grace 30s] [--fix]",
		Short: "Wait for StatefulSet rollouts; fail fast, with the reason, when one can never finish",
		Long: `wait follows StatefulSets with watches until their rollouts are complete: the spec observed,
every replica on the update revision, Ready and available for minReadySeconds, the partition
respected. It prints one line per change on stderr.

As soon as a finding of check has held for --stuck-grace (a pod stuck at startup, an unresolved
ImageStream name, an ImageStream tag not imported yet, OnDelete pods nobody deletes, ...) it
stops and reports it with its remedy and the pod's last events — unless --fix is given: then it
applies fix's safe repairs once and keeps waiting.

Exit codes: 0 complete; 1 stuck (findings held for the grace); 2 could not evaluate, StatefulSet
not found or deleted while waiting; 3 --timeout passed while still progressing; 130 interrupted
by a signal (SIGINT, SIGTERM).`,
		Example: waitExample,
		RunE:    runE(o),
	}
	f := c.Flags()
	f.StringVarP(&o.Selector, "selector", "l", "", "Label selector for the StatefulSets to wait for")
	o.PrintFlags.AddFlags(c)
	f.StringVar(&o.JUnitFile, "junit-file", "", "Also write a JUnit XML report to this file")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "Give up (exit 3) after this long")
	f.DurationVar(&o.StuckGrace, "stuck-grace", 30*time.Second, "How long a finding must hold before the rollout counts as stuck")
	f.BoolVar(&o.Fix, "fix", false, "Apply fix's safe repairs once when stuck, then keep waiting")
	f.BoolVar(&o.Rollback, "rollback", false, "With --fix: roll a failing new template back to the earlier revision whose pods are Ready (the deploy still fails: exit 1, result RolledBack)")
	f.StringVar(&o.OpenShift, "openshift", "auto", "Use the OpenShift image API: auto (if served), always or never")
	f.StringSliceVar(&o.Contexts, "contexts", nil, "Wait in these kubeconfig contexts at once (the worst verdict wins; a stuck one ends all)")
	f.BoolVar(&o.AllContexts, "all-contexts", false, "Wait in every context of the kubeconfig at once")
	o.diagnosis.AddFlags(c)
	return c
}

// Complete fills in the scope.
func (o *WaitOptions) Complete(args []string) error {
	var err error
	if o.Contexts, err = fleetContexts(o.configFlags, o.Contexts, o.AllContexts); err != nil {
		return err
	}
	if len(o.Contexts) > 0 {
		o.scope = gather.Scope{Names: args} // each context's namespace is resolved in Run
		return nil
	}
	o.scope, err = scopeOf(o.configFlags, false, args)
	return err
}

// Validate checks the flags.
func (o *WaitOptions) Validate() error {
	if len(o.scope.Names) == 0 && o.Selector == "" {
		return errors.New("name the StatefulSets to wait for, or select them with -l")
	}
	if err := o.PrintFlags.Validate(); err != nil {
		return err
	}
	if err := o.diagnosis.Validate(); err != nil {
		return err
	}
	if o.Timeout <= 0 || o.StuckGrace < 0 {
		return errors.New("--timeout must be positive and --stuck-grace not negative")
	}
	if o.Rollback && !o.Fix {
		return errors.New("--rollback needs --fix")
	}
	return parseScopeFlags(&o.scope, o.OpenShift, o.Selector)
}

// Run waits (gate.Run over informers; one per context with --contexts), prints the verdict and
// sets the exit code.
func (o *WaitOptions) Run(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if len(o.Contexts) == 0 {
		c, err := clients(o.configFlags, 0)
		if err != nil {
			return withCode(ExitError, err)
		}
		res, err := o.waitOne(ctx, c, o.scope, "")
		return o.finish(res, start, err)
	}
	// A fleet: every context at once; a stuck rollout or a cluster that cannot be evaluated ends
	// the others' wait too (fail fast), the worst verdict wins.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	results := make([]*model.WaitResult, len(o.Contexts))
	var wg sync.WaitGroup
	for i, name := range o.Contexts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := o.waitContext(ctx, name)
			if err != nil {
				res = model.NewWaitResult(apiv1.WaitNotFound, err.Error())
			}
			results[i] = res
			if gate.Decisive(res.Result) {
				stop()
			}
		}()
	}
	wg.Wait()
	return o.finish(gate.MergeFleet(o.Contexts, results), start, nil)
}

// waitContext waits in one context of a fleet, with its own clients and namespace.
func (o *WaitOptions) waitContext(ctx context.Context, name string) (*model.WaitResult, error) {
	c, scope, err := contextTarget(o.configFlags, name, false, o.scope, 0)
	if err != nil {
		return nil, err
	}
	res, err := o.waitOne(ctx, c, scope, name+": ")
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", name, err)
	}
	return res, nil
}

// waitOne follows one cluster's StatefulSets to a verdict; prefix starts its log lines.
func (o *WaitOptions) waitOne(ctx context.Context, c gather.Clients, scope gather.Scope, prefix string) (*model.WaitResult, error) {
	live, warnings, err := gather.StartLive(ctx, c, scope, nil)
	if err != nil {
		return model.NewWaitResult(apiv1.WaitNotFound, err.Error()), err
	}
	for _, w := range warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s%s\n", prefix, w)
	}
	log := o.ErrOut
	if prefix != "" {
		log = &prefixWriter{prefix: prefix, w: o.ErrOut}
	}
	opts := gate.Options{StuckGrace: o.StuckGrace, Log: log, Diagnosis: o.diagnosis.opts}
	if o.Fix {
		exec := repair.New(repair.Options{Clients: c, Scope: scope, Diagnosis: opts.Diagnosis, DryRun: apiv1.DryRunNone, Policy: repair.Policy{Rollback: o.Rollback},
			Progress: func(a model.Action) { fmt.Fprintln(log, render.ActionLine(a)) }})
		opts.Repair = func(ctx context.Context, rep *model.Report, snap *snapshot.Snapshot) ([]model.Action, error) {
			actions, err := exec.Repair(ctx, rep, snap)
			if len(actions) == 0 && err == nil {
				fmt.Fprintln(log, "nothing stsdiag can repair safely")
			}
			return actions, err
		}
	}
	res, err := gate.Run(ctx, live, opts)
	if res.Result == apiv1.WaitTimedOut {
		res.Message = fmt.Sprintf("timed out after %s while the rollout was still progressing", o.Timeout)
	}
	repair.RollbackVerdict(res)
	return res, err
}

// prefixWriter starts every line with the context's name (the progress lines of a fleet).
type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(p.w, p.prefix+line); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// finish prints the verdict in the chosen format (and the JUnit file) and returns the exit.
func (o *WaitOptions) finish(res *model.WaitResult, start time.Time, failure error) error {
	elapsed := time.Since(start)
	res.Elapsed = elapsed.Round(10 * time.Millisecond).String()
	err := render.WaitResult(o.Out, res, o.PrintFlags, elapsed, colorEnabled(o.Out))
	if err == nil && o.JUnitFile != "" {
		err = writeJUnitFile(o.JUnitFile, res, elapsed)
	}
	if gerr := render.GitHubFromEnv(os.Getenv).WaitResult(o.ErrOut, res); gerr != nil {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", gerr)
	}
	switch {
	case failure != nil:
		return withCode(ExitError, failure)
	case err != nil:
		return withCode(ExitError, err)
	case res.Result == apiv1.WaitNotFound:
		return withCode(ExitError, errors.New(res.Message))
	case res.Result == apiv1.WaitStuck || res.Result == apiv1.WaitRolledBack:
		return withCode(ExitFindings, nil)
	case res.Result == apiv1.WaitTimedOut:
		return withCode(ExitTimeout, nil)
	case res.Result == apiv1.WaitInterrupted:
		return withCode(ExitInterrupted, nil)
	}
	return nil
}

func writeJUnitFile(path string, res *model.WaitResult, elapsed time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = render.WriteJUnit(f, res, elapsed)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
