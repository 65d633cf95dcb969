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
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/rollout"
)

// FixOptions are the flags and state of `stsdiag fix`.
type FixOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	PrintFlags *render.PrintFlags

	AllNamespaces bool
	Selector      string
	DryRun        string
	Yes           bool
	Wait          string
	OpenShift     string
	diagnosis     *diagnosisFlags

	fix     repair.FixOptions
	confirm func() (bool, error)
}

const fixExample = `  # Show what would be repaired, without changing anything
  kubectl stsdiag fix -n shop --dry-run=server

  # Repair the stuck StatefulSet web and follow its rollout for up to 10 minutes
  kubectl stsdiag fix web -n shop --yes --wait=10m

  # On OpenShift: patch unresolved ImageStream names to their digest, recreate stuck pods
  oc stsdiag fix -n myproject --yes -o json`

// NewFixCommand builds `stsdiag fix`.
func NewFixCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &FixOptions{configFlags: configFlags, IOStreams: streams, PrintFlags: render.NewPrintFlags(), diagnosis: newDiagnosisFlags()}
	c := &cobra.Command{
		Use:   "fix [NAME...] [-n NAMESPACE | -A] [--dry-run=none|client|server] [--yes] [--wait[=TIMEOUT]]",
		Short: "Repair stuck rollouts safely: patch unresolved images, recreate pods proven stuck",
		Long: `fix runs the same diagnosis as check, then repairs only what has a safe repair:

  1. UnresolvedImageReference: patch the StatefulSet's image to the digest the ImageStream
     resolves to (a JSON patch that first tests the current value: a concurrent change is
     never overwritten);
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
Without --yes it asks on a terminal; without a terminal it prints the plan and exits 1.

Exit codes: 0 every planned action done (and, with --wait, the rollout complete); 1 something
left unrepaired, skipped or refused; 2 could not evaluate; 3 --wait timed out.`,
		Example: fixExample,
		RunE:    runE(o),
	}
	f := c.Flags()
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Repair StatefulSets in all namespaces")
	f.StringVarP(&o.Selector, "selector", "l", "", "Label selector for the StatefulSets to repair")
	o.PrintFlags.AddFlags(c)
	f.StringVar(&o.DryRun, "dry-run", string(apiv1.DryRunNone), "none, client (print only) or server (send with dryRun=All)")
	f.BoolVarP(&o.Yes, "yes", "y", false, "Apply without asking")
	f.StringVar(&o.Wait, "wait", "", "Follow the rollouts until complete, up to this long (--wait alone: 5m)")
	f.Lookup("wait").NoOptDefVal = "5m"
	f.StringVar(&o.OpenShift, "openshift", "auto", "Use the OpenShift image API: auto (if served), always or never")
	f.BoolVar(&o.fix.ForceLostNode, "force-lost-node", false, "Also force-delete (grace period 0) pods stuck terminating on a node that is gone or not Ready for longer than --terminating-threshold")
	f.BoolVar(&o.fix.Rollback, "rollback", false, "When the new template itself fails (CurrentRevisionFailing), roll spec.template back to the current revision while its pods are Ready, then delete the pods on the failing revision")
	o.diagnosis.AddFlags(c)
	return c
}

// Complete fills in the scope.
func (o *FixOptions) Complete(args []string) error {
	scope, err := scopeOf(o.configFlags, o.AllNamespaces, args)
	if err != nil {
		return err
	}
	o.fix.Scope = scope
	if o.confirm == nil {
		o.confirm = o.askOnTerminal
	}
	return nil
}

// Validate checks the flags.
func (o *FixOptions) Validate() error {
	if o.AllNamespaces && len(o.fix.Scope.Names) > 0 {
		return fmt.Errorf("StatefulSet names cannot be combined with --all-namespaces")
	}
	if err := o.PrintFlags.Validate(); err != nil {
		return err
	}
	if err := o.diagnosis.Validate(); err != nil {
		return err
	}
	switch apiv1.DryRunMode(o.DryRun) {
	case apiv1.DryRunNone, apiv1.DryRunClient, apiv1.DryRunServer:
	default:
		return fmt.Errorf("invalid --dry-run %q: want none, client or server", o.DryRun)
	}
	if o.Wait != "" {
		d, err := time.ParseDuration(o.Wait)
		if err != nil || d <= 0 {
			return fmt.Errorf("invalid --wait %q: want a duration such as 5m", o.Wait)
		}
		o.fix.Wait = d
	}
	return parseScopeFlags(&o.fix.Scope, o.OpenShift, o.Selector)
}

// Run repairs (repair.Fix), prints the outcome and sets the exit code.
func (o *FixOptions) Run(ctx context.Context) error {
	c, err := clients(o.configFlags, defaultRequestTimeout)
	if err != nil {
		return withCode(ExitError, err)
	}
	human := o.PrintFlags.Human()
	o.fix.Clients, o.fix.DryRun, o.fix.Diagnosis = c, apiv1.DryRunMode(o.DryRun), o.diagnosis.opts
	o.fix.RolloutLog = o.ErrOut
	o.fix.OnPlan = func(plan *model.FixResult, warnings []string) {
		for _, w := range warnings {
			fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
		}
		if human {
			render.Plan(o.Out, plan)
		}
	}
	if human {
		o.fix.RolloutLog = o.Out
		o.fix.Progress = func(a model.Action) { fmt.Fprintln(o.Out, render.ActionLine(a)) }
	}
	if !o.Yes {
		o.fix.Confirm = func(*model.FixResult) (bool, error) {
			ok, err := o.confirm()
			if err != nil && human {
				fmt.Fprintf(o.Out, "Not applied: %v.\n", err)
			}
			return ok, err
		}
	}
	result, err := repair.Fix(ctx, o.fix)
	if result == nil {
		return withCode(ExitError, err)
	}
	if perr := render.FixResult(o.Out, result, o.PrintFlags); perr != nil && err == nil {
		err = perr
	}
	switch {
	case errors.Is(err, repair.ErrNotConfirmed):
		return withCode(ExitFindings, err)
	case errors.Is(err, rollout.ErrTimeout):
		return withCode(ExitTimeout, err)
	case err != nil:
		return withCode(ExitError, err)
	case !result.Repaired():
		return withCode(ExitFindings, nil)
	}
	return nil
}

// askOnTerminal asks for confirmation; without a terminal it refuses.
func (o *FixOptions) askOnTerminal() (bool, error) {
	in, ok := o.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return false, errors.New("no terminal to confirm on; re-run with --yes to apply, or --dry-run=server to test")
	}
	fmt.Fprint(o.Out, "Apply these actions? [y/N] ")
	answer, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && err != io.EOF {
		return false, err
	}
	answer = strings.ToLower(strings.TrimSpace(answer))
	return answer == "y" || answer == "yes", nil
}
