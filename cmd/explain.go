package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/check"
	"github.com/stsdiag/stsdiag/internal/connect"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// explainFlags are the flags of `stsdiag explain`, as typed.
type explainFlags struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	PrintFlags *render.PrintFlags
	Scope      *scopeFlags
	Diagnosis  *diagnosisFlags
}

// explainOptions are what `stsdiag explain` runs with.
type explainOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	print     *render.PrintFlags
	scope     read.Scope
	clients   connect.Clients
	diagnosis stuck.Options
}

const explainExample = `  # What the StatefulSet controller does next for each pod of web, and why it cannot
  kubectl stsdiag explain web -n shop

  # The same as a stsdiag/v1 Explanation document
  kubectl stsdiag explain web -n shop -o yaml

  # One self-contained HTML page (ordinals coloured by revision and state) to attach to an incident
  kubectl stsdiag explain web -n shop -o html > web.html`

// newExplainCommand builds `stsdiag explain`.
func newExplainCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newExplainFlags(configFlags, streams).command()
}

func newExplainFlags(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *explainFlags {
	return &explainFlags{configFlags: configFlags, IOStreams: streams, PrintFlags: render.NewPrintFlags(render.FormatHTML),
		Scope: newScopeFlags(configFlags), Diagnosis: newDiagnosisFlags()}
}

func (f *explainFlags) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "explain NAME [-n NAMESPACE]",
		Short: "Show the StatefulSet controller's view of one StatefulSet: per pod, its next step and what keeps it from taking it",
		Long: "explain models the StatefulSet controller's next sync of one StatefulSet (the rules of the server's release): " +
			"for each ordinal the pod's revision and state, what the controller does next, and the finding that says why it cannot. " +
			"It comes from the same diagnosis as check.",
		Example: explainExample,
		Args:    cobra.ExactArgs(1),
		RunE:    runE(f.ToOptions),
	}
	f.PrintFlags.AddFlags(c)
	f.Scope.AddOpenShiftFlag(c)
	f.Diagnosis.AddFlags(c)
	return c
}

// ToOptions checks and parses the flags with the NAME argument.
func (f *explainFlags) ToOptions(args []string) (*explainOptions, error) {
	o := &explainOptions{configFlags: f.configFlags, IOStreams: f.IOStreams, print: f.PrintFlags}
	if len(args) != 1 {
		return nil, fmt.Errorf("explain takes one StatefulSet name, got %d", len(args))
	}
	if err := f.PrintFlags.Validate(); err != nil {
		return nil, err
	}
	if f.PrintFlags.OutputFormat == render.FormatWide {
		return nil, fmt.Errorf("unknown output format %q for explain: want table, json, yaml or html", f.PrintFlags.OutputFormat)
	}
	scope, err := f.Scope.ToScope(args)
	if err != nil {
		return nil, err
	}
	o.scope = scope.Scope
	if o.diagnosis, err = f.Diagnosis.ToOptions(); err != nil {
		return nil, err
	}
	return o, nil
}

// complete builds the clients (reads' profile).
func (o *explainOptions) complete() (err error) {
	o.clients, err = newClients(o.configFlags, reads)
	return err
}

// Run gathers the StatefulSet's namespace, explains it and prints the explanation; exit 1 when
// its rollout is stuck.
func (o *explainOptions) Run(ctx context.Context) error {
	e, warnings, err := check.Explain(ctx, o.clients, o.scope, o.scope.Namespace, o.scope.Names[0], o.diagnosis)
	if err != nil {
		return withCode(ExitError, err)
	}
	for _, w := range warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	if err := render.Explanation(o.Out, e, o.print, time.Now()); err != nil {
		return withCode(ExitError, err)
	}
	if e.Status == apiv1.StatusStuck {
		return withCode(ExitFindings, nil)
	}
	return nil
}
