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

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/connect"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/wait"
)

// waitFlags are the flags of `stsdiag wait`, as typed.
type waitFlags struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	PrintFlags *render.PrintFlags
	Scope      *scopeFlags
	Hold       *holdFlags
	Settle     settleFlag
	Diagnosis  *diagnosisFlags
	JUnitFile  string
	Logs       int64
	Timeout    time.Duration
	Fix        bool
	Rollback   bool
	Disruption string
}

// waitOptions are what `stsdiag wait` runs with, parsed and checked.
type waitOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	print *render.PrintFlags
	scope scope
	// clients are one cluster's (not a fleet's: each member's are built as the fleet reaches it).
	clients   connect.Clients
	junitFile string
	wait      wait.WaitOptions
}

const waitExample = `  # A CI gate right after a rollout: fail within ~30s if it can never finish
  kubectl stsdiag wait web -n shop --timeout 10m

  # Repair what is safely repairable (--fix is the consent), then keep waiting
  oc stsdiag wait web -n myproject --fix

  # JUnit for the CI system, the usual log on stderr
  kubectl stsdiag wait -l tier=db -n shop -o junit > stsdiag-junit.xml

  # Every StatefulSet labelled tier=db in every namespace
  kubectl stsdiag wait -A -l tier=db`

// newWaitCommand builds `stsdiag wait`.
func newWaitCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newWaitFlags(configFlags, streams).command()
}

func newWaitFlags(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *waitFlags {
	return &waitFlags{configFlags: configFlags, IOStreams: streams,
		PrintFlags: withOutputAliases(render.NewPrintFlags(render.FormatJUnit), "wait", streams.ErrOut),
		Scope:      newScopeFlags(configFlags), Hold: &holdFlags{}, Diagnosis: newDiagnosisFlags(), Timeout: 10 * time.Minute}
}

func (f *waitFlags) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "wait (NAME... | -l SELECTOR) [-n NAMESPACE | -A -l SELECTOR] [--timeout 10m] [--hold 30s] [--settle 10s] [--fix]",
		Short: "Wait for StatefulSet rollouts; fail fast, with the reason, when one can never finish",
		Long: `wait follows StatefulSets with watches until their rollouts are complete: the spec observed,
every replica on the update revision, Ready and available for minReadySeconds, the partition
respected — and every replica Ready, with no container restarted, for --settle (at least
minReadySeconds and each liveness probe's failure window), by the pods' own timestamps: a
crash-looping pod is Ready for a second each run and the controller then counts it. It prints one line per change on stderr; the verdict is the output (stdout).

As soon as a finding of check has held for --hold (a pod stuck at startup, an unresolved
ImageStream name, an ImageStream tag not imported yet, OnDelete pods nobody deletes, ...) it
stops and reports it with its remedy and the pod's last events — unless --fix is given: then it
applies fix's safe repairs once and keeps waiting.

With -A it waits for the StatefulSets -l selects in every namespace. With --contexts (or
--cluster-profiles, the clusters of a hub's ClusterProfiles) it waits in every cluster at once:
the worst verdict wins; a stuck rollout or a missing StatefulSet in one ends them all, a cluster
that cannot be evaluated (unreachable, unauthorized, its exec plugin failing) neither hides nor
stops the others.`,
		Example: waitExample,
		RunE:    runE(f.ToOptions),
	}
	f.Scope.AddFlags(c)
	f.Scope.AddFleetFlags(c)
	f.PrintFlags.AddFlags(c)
	fs := c.Flags()
	fs.StringVar(&f.JUnitFile, "junit-file", "", "Also write a JUnit XML report to this file")
	fs.Int64Var(&f.Logs, "logs", 5, "When stuck, add the last N lines of the run that exited of each container a finding says exited (0: none)")
	fs.DurationVar(&f.Timeout, "timeout", f.Timeout, "Give up (exit 3) after this long")
	f.Hold.AddFlags(c, 30*time.Second, "stuck-grace", "How long a finding must hold before the rollout counts as stuck")
	f.Settle.AddFlags(c)
	fs.BoolVar(&f.Fix, "fix", false, "Apply fix's safe repairs once when stuck, then keep waiting")
	fs.BoolVar(&f.Rollback, "rollback", false, "With --fix: roll a failing new template back to the earlier revision whose pods are Ready (the deploy still fails: exit 1, result RolledBack)")
	fs.StringVar(&f.Disruption, "disruption", string(apiv1.DisruptionDelete), "With --fix: "+disruptionUsage)
	f.Diagnosis.AddFlags(c)
	return c
}

// ToOptions checks and parses the flags with the NAME arguments.
func (f *waitFlags) ToOptions(args []string) (*waitOptions, error) {
	if len(args) == 0 && f.Scope.Selector == "" {
		return nil, errors.New("name the StatefulSets to wait for, or select them with -l")
	}
	if f.Timeout <= 0 {
		return nil, errors.New("--timeout must be positive")
	}
	if f.Logs < 0 {
		return nil, errors.New("--logs must not be negative")
	}
	if f.Rollback && !f.Fix {
		return nil, errors.New("--rollback needs --fix")
	}
	disruption, err := parseDisruption(f.Disruption)
	if err != nil {
		return nil, err
	}
	o := &waitOptions{configFlags: f.configFlags, IOStreams: f.IOStreams, print: f.PrintFlags, junitFile: f.JUnitFile,
		wait: wait.WaitOptions{Timeout: f.Timeout, Fix: f.Fix, Rollback: f.Rollback, Disruption: disruption, Logs: f.Logs}}
	if o.scope, err = f.Scope.ToScope(args); err != nil {
		return nil, err
	}
	if err := f.PrintFlags.Validate(); err != nil {
		return nil, err
	}
	if o.wait.Diagnosis, err = f.Diagnosis.ToOptions(); err != nil {
		return nil, err
	}
	if o.wait.Hold, err = f.Hold.ToDuration(); err != nil {
		return nil, err
	}
	if o.wait.Steady, err = f.Settle.ToDuration(); err != nil {
		return nil, err
	}
	return o, nil
}

// complete builds one cluster's clients (following's profile).
func (o *waitOptions) complete() (err error) {
	if !o.scope.fleet() {
		o.clients, err = newClients(o.configFlags, following)
	}
	return err
}

// Run waits (wait.Wait in one cluster, wait.RunFleet over --contexts), prints the verdict and
// sets the exit code.
func (o *waitOptions) Run(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.wait.Timeout)
	defer cancel()
	if !o.scope.fleet() {
		res, err := wait.Wait(ctx, o.clients, o.scope.Scope, o.forWait(""))
		return o.finish(res, start, err)
	}
	members, err := o.scope.members(ctx, o.configFlags)
	if err != nil {
		return withCode(ExitError, err)
	}
	// Every member is followed at once (a fleet's wait ends on the first stuck one); reaching
	// them — exec plugins, first requests — goes --cluster-concurrency at a time.
	members = connect.Limited(members, o.scope.concurrency)
	byName := map[string]connect.Member{}
	names := make([]string, len(members))
	for i, m := range members {
		byName[m.Name], names[i] = m, m.Name
	}
	res := wait.RunFleet(ctx, names, func(ctx context.Context, name string) (*model.WaitResult, error) {
		c, scope, err := byName[name].Connect(ctx, withUserAgent(following))
		if err != nil {
			return nil, err
		}
		return wait.Wait(ctx, c, scope, o.forWait(name+": "))
	})
	return o.finish(res, start, nil)
}

// forWait is the options of one cluster's wait: its progress lines, repairs and warnings on
// stderr, each starting with prefix (a fleet's context).
func (o *waitOptions) forWait(prefix string) wait.WaitOptions {
	opts := o.wait
	log := o.ErrOut
	if prefix != "" {
		log = &prefixWriter{prefix: prefix, w: o.ErrOut}
	}
	opts.Log = log
	opts.Progress = func(a model.Action) { render.Progress(log, a) }
	opts.Warn = func(w string) { fmt.Fprintf(o.ErrOut, "Warning: %s%s\n", prefix, w) }
	return opts
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
func (o *waitOptions) finish(res *model.WaitResult, start time.Time, failure error) error {
	elapsed := time.Since(start)
	res.Elapsed = elapsed.Round(10 * time.Millisecond).String()
	err := render.WaitResult(o.Out, res, o.print, elapsed, colorEnabled(o.Out))
	if err == nil && o.junitFile != "" {
		err = writeJUnitFile(o.junitFile, res, elapsed)
	}
	if gerr := render.GitHubFromEnv(os.Getenv).WaitResult(o.ErrOut, res); gerr != nil {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", gerr)
	}
	return waitExit(res, failure, err)
}

// waitExit is the exit of a verdict: failure (the wait failed) and printErr (printing it
// failed) are exit 2.
func waitExit(res *model.WaitResult, failure, printErr error) error {
	switch {
	case failure != nil:
		return withCode(ExitError, failure)
	case printErr != nil:
		return withCode(ExitError, printErr)
	case res.Result == apiv1.WaitNotFound || res.Result == apiv1.WaitUnevaluable:
		return withCode(ExitError, errors.New(res.Message))
	case res.Result == apiv1.WaitStuck || res.Result == apiv1.WaitRolledBack || res.Result == apiv1.WaitNotObserved:
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
