package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
)

// CheckOptions are the flags and state of `stsdiag check`.
type CheckOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	PrintFlags *render.PrintFlags

	AllNamespaces bool
	Selector      string
	FailOn        string
	OpenShift     string
	diagnosis     *diagnosisFlags
	Contexts      []string
	AllContexts   bool

	scope  gather.Scope
	failOn apiv1.Severity
}

const checkExample = `  # Check every StatefulSet in the current namespace
  kubectl stsdiag check

  # Check one StatefulSet; exit 1 if its rollout will not finish
  kubectl stsdiag check web -n shop

  # All namespaces, as JSON for scripts (also: oc stsdiag check -A)
  kubectl stsdiag check -A -o json

  # A CI gate that also fails on warnings
  kubectl stsdiag check -l app=web --fail-on warning`

// NewCheckCommand builds `stsdiag check`.
func NewCheckCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &CheckOptions{configFlags: configFlags, IOStreams: streams, PrintFlags: render.NewPrintFlags(), diagnosis: newDiagnosisFlags()}
	c := &cobra.Command{
		Use:     "check [NAME...] [-n NAMESPACE | -A] [-l SELECTOR]",
		Short:   "Report StatefulSet rollouts that will not finish on their own, and why",
		Example: checkExample,
		RunE:    runE(o),
	}
	f := c.Flags()
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Check StatefulSets in all namespaces")
	f.StringVarP(&o.Selector, "selector", "l", "", "Label selector for the StatefulSets to check")
	o.PrintFlags.AddFlags(c)
	f.StringVar(&o.FailOn, "fail-on", "error", "Exit 1 when a finding is at least this severe: error, warning, info or never")
	f.StringVar(&o.OpenShift, "openshift", "auto", "Use the OpenShift image API: auto (if served), always or never")
	f.StringSliceVar(&o.Contexts, "contexts", nil, "Check these kubeconfig contexts concurrently, in one report (each finding names its context)")
	f.BoolVar(&o.AllContexts, "all-contexts", false, "Check every context of the kubeconfig concurrently, in one report")
	o.diagnosis.AddFlags(c)
	return c
}

// Complete fills in the scope from the arguments and kubeconfig, and the contexts of a fleet.
func (o *CheckOptions) Complete(args []string) error {
	var err error
	if o.Contexts, err = fleetContexts(o.configFlags, o.Contexts, o.AllContexts); err != nil {
		return err
	}
	if len(o.Contexts) > 0 {
		o.scope = gather.Scope{Names: args} // each context's namespace is resolved in Run
		return nil
	}
	o.scope, err = scopeOf(o.configFlags, o.AllNamespaces, args)
	return err
}

// Validate checks the flags.
func (o *CheckOptions) Validate() error {
	if o.AllNamespaces && len(o.scope.Names) > 0 {
		return fmt.Errorf("StatefulSet names cannot be combined with --all-namespaces: names are looked up in one namespace")
	}
	if len(o.Contexts) > 0 && o.configFlags.Context != nil && *o.configFlags.Context != "" {
		return fmt.Errorf("--context cannot be combined with --contexts or --all-contexts")
	}
	if err := o.PrintFlags.Validate(); err != nil {
		return err
	}
	if err := o.diagnosis.Validate(); err != nil {
		return err
	}
	var err error
	if o.failOn, err = parseFailOn(o.FailOn); err != nil {
		return err
	}
	return parseScopeFlags(&o.scope, o.OpenShift, o.Selector)
}

// Run gathers and diagnoses (one cluster, or the fleet of --contexts), prints the report and
// sets the exit code: the worst of all clusters.
func (o *CheckOptions) Run(ctx context.Context) error {
	var rep *model.Report
	var failed []string
	if len(o.Contexts) > 0 {
		targets, err := o.fleet()
		if err != nil {
			return withCode(ExitError, err)
		}
		rep, failed = diagnose.RunFleet(ctx, targets, o.diagnosis.opts)
	} else {
		c, err := clients(o.configFlags, defaultRequestTimeout)
		if err != nil {
			return withCode(ExitError, err)
		}
		if rep, _, err = diagnose.Run(ctx, c, o.scope, o.diagnosis.opts); err != nil {
			return withCode(ExitError, err)
		}
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	table := render.TableOptions{WithNamespace: o.AllNamespaces || len(o.Contexts) > 0, WithContext: len(o.Contexts) > 0, Color: colorEnabled(o.Out)}
	if err := render.Report(o.Out, rep, o.PrintFlags, table); err != nil {
		return withCode(ExitError, err)
	}
	if err := render.GitHubFromEnv(os.Getenv).Report(o.ErrOut, rep); err != nil {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", err)
	}
	if len(failed) > 0 {
		return withCode(ExitError, fmt.Errorf("could not check context(s) %s", strings.Join(failed, ", ")))
	}
	if o.failOn != "" && rep.Count(o.failOn) > 0 {
		return withCode(ExitFindings, nil)
	}
	return nil
}

// fleet builds one target per context: its own clients and its namespace (-n, else the
// context's own).
func (o *CheckOptions) fleet() ([]diagnose.Target, error) {
	var targets []diagnose.Target
	for _, name := range o.Contexts {
		c, scope, err := contextTarget(o.configFlags, name, o.AllNamespaces, o.scope, defaultRequestTimeout)
		if err != nil {
			return nil, err
		}
		targets = append(targets, diagnose.Target{Context: name, Clients: c, Scope: scope})
	}
	return targets, nil
}

func parseFailOn(s string) (apiv1.Severity, error) {
	switch s {
	case "never":
		return "", nil
	case string(apiv1.SeverityError), string(apiv1.SeverityWarning), string(apiv1.SeverityInfo):
		return apiv1.Severity(s), nil
	}
	return "", fmt.Errorf("invalid --fail-on %q: want error, warning, info or never", s)
}

func colorEnabled(w any) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
