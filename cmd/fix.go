package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/fix"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
)

// fixFlags are the flags of `stsdiag fix`, as typed.
type fixFlags struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	PrintFlags *render.PrintFlags
	Scope      *scopeFlags
	Diagnosis  *diagnosisFlags
	DryRun     string
	Yes        bool
	Wait       string
	Timeout    time.Duration
	// flags tell which flags were given (--timeout without --wait is refused).
	flags         interface{ Changed(string) bool }
	Settle        settleFlag
	ForceLostNode bool
	Rollback      bool
	// ConfirmWithAdmission asks admission about each predicted image rewrite before planning.
	ConfirmWithAdmission bool
	Disruption           string
}

// fixOptions are what `stsdiag fix` runs with, parsed and checked.
type fixOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	print *render.PrintFlags
	yes   bool
	fix   fix.Options
	// admission: fresh diagnoses also ask admission (--confirm-with-admission).
	admission bool
	// confirm asks before anything changes (a terminal prompt); repairFix is fix.Run. Tests
	// replace them.
	confirm   func(ctx context.Context) (bool, error)
	repairFix func(context.Context, fix.Options) (*model.FixResult, error)
}

const fixExample = `  # Show what would be repaired, without changing anything
  kubectl stsdiag fix -n shop --dry-run=server

  # Repair the stuck StatefulSet web and follow its rollout for up to 10 minutes
  kubectl stsdiag fix web -n shop --yes --wait --timeout 10m

  # On OpenShift: patch unresolved ImageStream names to their digest, recreate stuck pods
  oc stsdiag fix -n myproject --yes -o json`

// errFleetFix is fix's answer to --contexts: one consent (--yes) for changes in several clusters
// at once is too broad for a command that deletes pods.
var errFleetFix = errors.New("fix repairs one cluster at a time: --contexts, --all-contexts, --cluster-profiles and --all-cluster-profiles are not supported; run fix once per cluster with --context NAME")

// newFixCommand builds `stsdiag fix`.
func newFixCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newFixFlags(configFlags, streams).command()
}

func newFixFlags(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *fixFlags {
	return &fixFlags{configFlags: configFlags, IOStreams: streams, PrintFlags: render.NewPrintFlags(),
		Scope: newScopeFlags(configFlags), Diagnosis: newDiagnosisFlags(), DryRun: string(apiv1.DryRunNone),
		Disruption: string(apiv1.DisruptionDelete)}
}

func (f *fixFlags) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "fix [NAME...] [-n NAMESPACE | -A] [--dry-run=none|client|server] [--yes] [--wait [--timeout 5m]]",
		Short: "Repair stuck rollouts safely: patch unresolved images, recreate pods proven stuck",
		Long: `fix runs the same diagnosis as check, then repairs only what has a safe repair:

  1. UnresolvedImageReference: patch the StatefulSet's image to the digest the ImageStream
     resolves to (a JSON patch that first tests the current value: a concurrent change is
     never overwritten). With --confirm-with-admission the image is first asked of the API
     server's admission (a server-side dry-run create of a probe pod per namespace): the plan
     says "confirmed by admission", or patches what admission writes where it differs;
  2. StaleRevisionStuck pods, and pods the patch leaves on an old revision: each is proven
     stuck again by a fresh diagnosis right before it is deleted, with a UID precondition, so
     a pod that recovered or was replaced in between is never deleted;
  3. with --force-lost-node only: pods stuck terminating on a node that is gone or not Ready
     for longer than --terminating-threshold are force-deleted (grace period 0), as the
     StatefulSet documentation describes — only once you know the node is down;
  4. with --rollback only: a StatefulSet whose new template fails (CurrentRevisionFailing) is
     rolled back to its current revision while pods of it are Ready (a JSON patch that tests
     the UID, generation and images first), then its pods on the failing revision are deleted
     as in 2. A set with no Ready earlier revision is left for you, with the reason.

It never deletes a PersistentVolumeClaim or a StatefulSet, never scales, and never touches a pod
whose current template is broken (CurrentRevisionFailing): it says what to change instead.
Without --yes it asks on a terminal (the question on stderr); without a terminal it prints the
plan and exits 1. It repairs one cluster: --contexts and --cluster-profiles are refused (run it once per --context).

The plan, each action's result and the summary are the output (stdout); --wait's rollout
progress goes to stderr.

--disruption=evict removes pods through the Eviction API instead of deleting them: a pod whose
PodDisruptionBudget allows no disruption now is skipped with the budget named, never deleted.

--wait follows the rollouts until complete, for up to --timeout (default 5m): one budget for the controller to observe a patch and for the rollout. When the
controller never observes a patch (status.observedGeneration below the patched generation) the
pods waiting for it are not deleted and the rollout result is "not observed" (exit 1).
`,
		Example: fixExample,
		RunE:    runE(f.ToOptions),
	}
	f.Scope.AddFlags(c)
	f.Scope.AddFleetFlags(c)
	// Registered so that ToOptions can say why they are refused; hidden as they do nothing.
	for _, name := range []string{"contexts", "all-contexts", "cluster-profiles", "all-cluster-profiles", "clusterprofile-provider-file", "cluster-concurrency"} {
		_ = c.Flags().MarkHidden(name)
	}
	f.PrintFlags.AddFlags(c)
	fs := c.Flags()
	fs.StringVar(&f.DryRun, "dry-run", f.DryRun, "none, client (print only) or server (send with dryRun=All)")
	fs.BoolVarP(&f.Yes, "yes", "y", false, "Apply without asking")
	fs.StringVar(&f.Wait, "wait", "", "Follow the rollouts until complete, up to --timeout (--wait=DURATION, the former form, still works: deprecated)")
	fs.Lookup("wait").NoOptDefVal = "true"
	fs.DurationVar(&f.Timeout, "timeout", 5*time.Minute, "With --wait: give up (exit 3) after this long")
	fs.BoolVar(&f.ForceLostNode, "force-lost-node", false, "Also force-delete (grace period 0) pods stuck terminating on a node that is gone or not Ready for longer than --terminating-threshold")
	fs.BoolVar(&f.Rollback, "rollback", false, "When the new template itself fails (CurrentRevisionFailing), roll spec.template back to the current revision while its pods are Ready, then delete the pods on the failing revision")
	addConfirmFlag(c, &f.ConfirmWithAdmission)
	fs.StringVar(&f.Disruption, "disruption", f.Disruption, disruptionUsage)
	f.Settle.AddFlags(c)
	f.Diagnosis.AddFlags(c)
	f.flags = fs
	return c
}

// ToOptions checks and parses the flags with the NAME arguments.
func (f *fixFlags) ToOptions(args []string) (*fixOptions, error) {
	o := &fixOptions{configFlags: f.configFlags, IOStreams: f.IOStreams, print: f.PrintFlags, yes: f.Yes, repairFix: fix.Run,
		admission: f.ConfirmWithAdmission}
	o.confirm = func(ctx context.Context) (bool, error) {
		return askOnTerminal(ctx, o.IOStreams, "Apply these actions?")
	}
	if f.Scope.fleetRequested() {
		return nil, errFleetFix
	}
	scope, err := f.Scope.ToScope(args)
	if err != nil {
		return nil, err
	}
	if err := f.PrintFlags.Validate(); err != nil {
		return nil, err
	}
	diagnosis, err := f.Diagnosis.ToOptions()
	if err != nil {
		return nil, err
	}
	switch apiv1.DryRunMode(f.DryRun) {
	case apiv1.DryRunNone, apiv1.DryRunClient, apiv1.DryRunServer:
	default:
		return nil, fmt.Errorf("invalid --dry-run %q: want none, client or server", f.DryRun)
	}
	disruption, err := parseDisruption(f.Disruption)
	if err != nil {
		return nil, err
	}
	wait, err := f.waitTimeout()
	if err != nil {
		return nil, err
	}
	steady, err := f.Settle.ToDuration()
	if err != nil {
		return nil, err
	}
	o.fix = fix.Options{Scope: scope.Scope, DryRun: apiv1.DryRunMode(f.DryRun), Diagnosis: diagnosis,
		Policy: fix.Policy{Rollback: f.Rollback, ForceLostNode: f.ForceLostNode}, Disruption: disruption, Wait: wait, Steady: steady}
	return o, nil
}

// waitTimeout is how long --wait follows the rollouts (0: no --wait). --wait takes no value and
// --timeout the duration, as on wait and canary; --wait=DURATION, the former form, still works
// with a notice on stderr.
func (f *fixFlags) waitTimeout() (time.Duration, error) {
	timeoutSet := f.flags != nil && f.flags.Changed("timeout")
	switch f.Wait {
	case "", "false":
		if timeoutSet {
			return 0, errors.New("--timeout needs --wait")
		}
		return 0, nil
	case "true":
		if f.Timeout <= 0 {
			return 0, errors.New("--timeout must be positive")
		}
		return f.Timeout, nil
	}
	d, err := time.ParseDuration(f.Wait)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid --wait %q: --wait takes no value (the duration is --timeout, default 5m)", f.Wait)
	}
	if timeoutSet {
		return 0, errors.New("--wait=DURATION and --timeout both give the time: use --wait --timeout DURATION")
	}
	fmt.Fprintf(f.ErrOut, "Flag --wait=%s has been deprecated, use --wait --timeout %s\n", f.Wait, f.Wait)
	return d, nil
}

// complete builds the clients (writes' profile).
func (o *fixOptions) complete() (err error) {
	o.fix.Clients, err = newClients(o.configFlags, writes)
	return err
}

// Run repairs (fix.Run), prints the outcome and sets the exit code. In the human formats the
// plan, each action's result and the summary go to stdout as they happen; warnings, the question
// and --wait's rollout progress go to stderr.
func (o *fixOptions) Run(ctx context.Context) error {
	human := o.print.Human()
	opts := o.fix
	opts.Admission = o.admission
	opts.RolloutLog = o.ErrOut
	opts.OnPlan = func(plan *model.FixResult, warnings []string) {
		for _, w := range warnings {
			fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
		}
		if human {
			render.Plan(o.Out, plan)
		}
	}
	if human {
		opts.Progress = func(a model.Action) { render.Progress(o.Out, a) }
	}
	if !o.yes {
		opts.Confirm = func(*model.FixResult) (bool, error) {
			ok, err := o.confirm(ctx)
			if err != nil && human {
				fmt.Fprintf(o.Out, "Not applied: %v.\n", err)
			}
			return ok, err
		}
	}
	result, err := o.repairFix(ctx, opts)
	if result == nil {
		return withCode(ExitError, err)
	}
	if perr := render.FixResult(o.Out, result, o.print); perr != nil && err == nil {
		err = perr
	}
	switch {
	case errors.Is(err, fix.ErrNotConfirmed):
		return withCode(ExitFindings, err)
	case errors.Is(err, fix.ErrTimeout):
		return withCode(ExitTimeout, err)
	case err != nil:
		return withCode(ExitError, err)
	case !result.Repaired():
		return withCode(ExitFindings, nil)
	}
	return nil
}

// errNoTerminal: fix was not told --yes and has nobody to ask.
var errNoTerminal = errors.New("no terminal to confirm on; re-run with --yes to apply, or --dry-run=server to test")

// askOnTerminal asks question on stderr and reads the answer from the terminal; without a
// terminal it refuses. A signal (ctx done) ends the question at once.
func askOnTerminal(ctx context.Context, streams genericiooptions.IOStreams, question string) (bool, error) {
	in, ok := streams.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return false, errNoTerminal
	}
	fmt.Fprint(streams.ErrOut, question+" [y/N] ")
	answer, err := readLine(ctx, in)
	if err != nil && err != io.EOF {
		return false, err
	}
	answer = strings.ToLower(strings.TrimSpace(answer))
	return answer == "y" || answer == "yes", nil
}

// readLine reads one line from in, or returns "interrupted" (wrapping ctx's error) as soon as ctx
// is done. A terminal read cannot be cancelled: it goes on in the background until the process,
// about to exit, ends it.
func readLine(ctx context.Context, in io.Reader) (string, error) {
	type line struct {
		text string
		err  error
	}
	read := make(chan line, 1)
	go func() {
		text, err := bufio.NewReader(in).ReadString('\n')
		read <- line{text, err}
	}()
	select {
	case l := <-read:
		return l.text, l.err
	case <-ctx.Done():
		return "", fmt.Errorf("interrupted: %w", ctx.Err())
	}
}
