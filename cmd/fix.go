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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/stsdiag/stsdiag/diagnose"
	"github.com/stsdiag/stsdiag/repair"
	"github.com/stsdiag/stsdiag/report"
	"github.com/stsdiag/stsdiag/snapshot"
)

// FixResult is the document printed by `fix -o json`.
type FixResult struct {
	metav1.TypeMeta `json:",inline"`
	DryRun          string           `json:"dryRun"`
	Actions         []repair.Action  `json:"actions"`
	Unrepaired      []report.Finding `json:"unrepaired,omitempty"`
	Rollout         string           `json:"rollout,omitempty"`
}

// DeepCopyObject lets cli-runtime printers print the result.
func (r *FixResult) DeepCopyObject() runtime.Object {
	c := *r
	c.Actions = append([]repair.Action(nil), r.Actions...)
	c.Unrepaired = append([]report.Finding(nil), r.Unrepaired...)
	return &c
}

// FixOptions are the flags and state of `stsdiag fix`.
type FixOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	AllNamespaces bool
	Selector      string
	Output        string
	DryRun        string
	Yes           bool
	Wait          string
	OpenShift     string

	scope   snapshot.Scope
	wait    time.Duration
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
	o := &FixOptions{configFlags: configFlags, IOStreams: streams}
	c := &cobra.Command{
		Use:   "fix [NAME...] [-n NAMESPACE | -A] [--dry-run=none|client|server] [--yes] [--wait[=TIMEOUT]]",
		Short: "Repair stuck rollouts safely: patch unresolved images, recreate pods proven stuck",
		Long: `fix runs the same diagnosis as check, then repairs only what has a safe repair:

  1. UnresolvedImageReference: patch the StatefulSet's image to the digest the ImageStream
     resolves to (a JSON patch that first tests the current value: a concurrent change is
     never overwritten);
  2. StaleRevisionStuck pods, and pods the patch leaves on an old revision once a fresh
     diagnosis proves them stuck: delete them with UID and resourceVersion preconditions, so
     a pod replaced or changed in between is never deleted.

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
	f.StringVarP(&o.Output, "output", "o", "table", "Output format: table or json")
	f.StringVar(&o.DryRun, "dry-run", repair.DryRunNone, "none, client (print only) or server (send with dryRun=All)")
	f.BoolVarP(&o.Yes, "yes", "y", false, "Apply without asking")
	f.StringVar(&o.Wait, "wait", "", "Follow the rollouts until complete, up to this long (--wait alone: 5m)")
	f.Lookup("wait").NoOptDefVal = "5m"
	f.StringVar(&o.OpenShift, "openshift", "auto", "Use the OpenShift image API: auto (if served), always or never")
	return c
}

// Complete fills in the scope.
func (o *FixOptions) Complete(args []string) error {
	ns, _, err := namespace(o.configFlags, o.AllNamespaces)
	if err != nil {
		return err
	}
	o.scope = snapshot.Scope{Namespace: ns, Names: args}
	if o.confirm == nil {
		o.confirm = o.askOnTerminal
	}
	return nil
}

// Validate checks the flags.
func (o *FixOptions) Validate() error {
	if o.AllNamespaces && len(o.scope.Names) > 0 {
		return fmt.Errorf("StatefulSet names cannot be combined with --all-namespaces")
	}
	if o.Output != "table" && o.Output != "json" {
		return fmt.Errorf("unknown output format %q: want table or json", o.Output)
	}
	switch o.DryRun {
	case repair.DryRunNone, repair.DryRunClient, repair.DryRunServer:
	default:
		return fmt.Errorf("invalid --dry-run %q: want none, client or server", o.DryRun)
	}
	if o.Wait != "" {
		d, err := time.ParseDuration(o.Wait)
		if err != nil || d <= 0 {
			return fmt.Errorf("invalid --wait %q: want a duration such as 5m", o.Wait)
		}
		o.wait = d
	}
	return parseScopeFlags(&o.scope, o.OpenShift, o.Selector)
}

// Run diagnoses, plans, confirms, repairs and optionally waits.
func (o *FixOptions) Run(ctx context.Context) error {
	c, _, err := clients(o.configFlags)
	if err != nil {
		return withCode(ExitError, err)
	}
	rep, snap, err := diagnose.Run(ctx, c, o.scope)
	if err != nil {
		return withCode(ExitError, err)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	actions, unrepaired := repair.Plan(rep, snap)
	human := o.Output == "table"
	if human {
		o.printPlan(actions, unrepaired)
	}
	result := &FixResult{DryRun: o.DryRun, Actions: actions, Unrepaired: unrepaired}
	result.SetGroupVersionKind(report.GroupVersion.WithKind("FixResult"))
	if len(actions) == 0 {
		return o.finish(result, nil)
	}
	if o.DryRun == repair.DryRunNone && !o.Yes {
		ok, err := o.confirm()
		if err != nil {
			if human {
				fmt.Fprintf(o.Out, "Not applied: %v.\n", err)
			}
			for i := range result.Actions {
				result.Actions[i].Result, result.Actions[i].Message = repair.Skipped, "not confirmed"
			}
			return o.finish(result, withCode(ExitFindings, nil))
		}
		if !ok {
			return o.finish(result, withCode(ExitFindings, errors.New("not confirmed; nothing changed")))
		}
	}
	exec := &repair.Executor{
		Kube:   c.Kube,
		DryRun: o.DryRun,
		Rediagnose: func(ctx context.Context) (*report.Report, *snapshot.Snapshot, error) {
			return diagnose.Run(ctx, c, o.scope)
		},
	}
	if human {
		exec.Progress = func(a repair.Action) { fmt.Fprintf(o.Out, "%-8s %s: %s\n", a.Result, a.Describe(), a.Message) }
	}
	result.Actions, err = exec.Apply(ctx, actions)
	if err != nil {
		return o.finish(result, withCode(ExitError, err))
	}
	if o.wait > 0 && o.DryRun == repair.DryRunNone {
		if err := o.waitRollouts(ctx, c, result); err != nil {
			return o.finish(result, err)
		}
	}
	return o.finish(result, nil)
}

func (o *FixOptions) printPlan(actions []repair.Action, unrepaired []report.Finding) {
	if len(actions) == 0 {
		fmt.Fprintln(o.Out, "Nothing stsdiag can repair safely.")
	} else {
		fmt.Fprintf(o.Out, "Plan (%d action%s):\n", len(actions), plural(len(actions)))
		for i, a := range actions {
			fmt.Fprintf(o.Out, "  %d. %s\n", i+1, a.Describe())
		}
	}
	if len(unrepaired) > 0 {
		fmt.Fprintf(o.Out, "Left for you (no safe automatic repair):\n")
		for _, f := range unrepaired {
			fmt.Fprintf(o.Out, "  - %s %s/%s %s: %s\n", f.Code, f.Namespace, f.StatefulSet, f.Pod, f.Remedy)
		}
	}
}

// waitRollouts follows the StatefulSets an action touched.
func (o *FixOptions) waitRollouts(ctx context.Context, c snapshot.Clients, result *FixResult) error {
	out := o.Out
	if o.Output == "json" {
		out = o.ErrOut
	}
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(ctx, o.wait)
	defer cancel()
	for _, a := range result.Actions {
		key := snapshot.Key(a.Namespace, a.StatefulSet)
		if a.Result != repair.Done || seen[key] {
			continue
		}
		seen[key] = true
		if err := repair.WaitRollout(ctx, c.Kube, a.Namespace, a.StatefulSet, out); err != nil {
			if errors.Is(err, repair.ErrRolloutTimeout) {
				result.Rollout = "timed out"
				return withCode(ExitTimeout, err)
			}
			return withCode(ExitError, err)
		}
	}
	result.Rollout = "complete"
	return nil
}

// finish prints the result and picks the exit code.
func (o *FixOptions) finish(result *FixResult, err error) error {
	if o.Output == "json" {
		if perr := (&printers.JSONPrinter{}).PrintObj(result, o.Out); perr != nil && err == nil {
			err = withCode(ExitError, perr)
		}
	} else {
		fmt.Fprintln(o.Out, fixSummary(result))
	}
	if err != nil {
		return err
	}
	for _, a := range result.Actions {
		if a.Result != repair.Done {
			return withCode(ExitFindings, nil)
		}
	}
	if len(result.Unrepaired) > 0 {
		return withCode(ExitFindings, nil)
	}
	return nil
}

func fixSummary(r *FixResult) string {
	count := map[string]int{}
	for _, a := range r.Actions {
		count[a.Result]++
	}
	s := fmt.Sprintf("%d action%s: %d done, %d skipped, %d failed; %d finding%s left unrepaired",
		len(r.Actions), plural(len(r.Actions)), count[repair.Done], count[repair.Skipped], count[repair.Failed], len(r.Unrepaired), plural(len(r.Unrepaired)))
	if r.DryRun != repair.DryRunNone {
		s += " (dry run: " + r.DryRun + ")"
	}
	if r.Rollout != "" {
		s += "; rollout " + r.Rollout
	}
	return s + "."
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

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
