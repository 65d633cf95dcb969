package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/check"
	"github.com/stsdiag/stsdiag/internal/connect"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// checkFlags are the flags of `stsdiag check`, as typed.
type checkFlags struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	PrintFlags *render.PrintFlags
	Scope      *scopeFlags
	Diagnosis  *diagnosisFlags
	FailOn     string
	Logs       int64
	// ConfirmWithAdmission asks admission about each predicted image rewrite (a server-side
	// dry-run create of a probe pod per namespace).
	ConfirmWithAdmission bool
	// Full reads every object of all namespaces instead of triaging them by status (-A only).
	Full bool
}

// checkOptions are what `stsdiag check` runs with, parsed and checked.
type checkOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	print *render.PrintFlags
	scope scope
	// clients are one cluster's (not a fleet's: each member's are built as the fleet reaches it).
	clients   connect.Clients
	diagnosis stuck.Options
	failOn    apiv1.Severity
	logs      int64
	admission bool
	full      bool
	// pageSize is STSDIAG_PAGE_SIZE: the page size of check -A --full's LISTs, for tests on a
	// real API server (docs/development.md); 0 for the default.
	pageSize int64
}

const checkExample = `  # Check every StatefulSet in the current namespace
  kubectl stsdiag check

  # Check one StatefulSet; exit 1 if its rollout will not finish
  kubectl stsdiag check web -n shop

  # All namespaces, as JSON for scripts (also: oc stsdiag check -A)
  kubectl stsdiag check -A -o json

  # One self-contained HTML page: each StatefulSet's ordinals, the findings and their remedies
  kubectl stsdiag check -A -o html > stsdiag.html

  # A CI gate that also fails on warnings
  kubectl stsdiag check -l app=web --fail-on warning

  # On OpenShift: ask the API server's admission whether each predicted image rewrite is what it
  # writes (a server-side dry-run create of a probe pod per namespace; needs create pods)
  oc stsdiag check -n myproject --confirm-with-admission`

// newCheckCommand builds `stsdiag check`.
func newCheckCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCheckFlags(configFlags, streams).command()
}

func newCheckFlags(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *checkFlags {
	return &checkFlags{configFlags: configFlags, IOStreams: streams, PrintFlags: render.NewPrintFlags(render.FormatHTML, render.FormatName),
		Scope: newScopeFlags(configFlags), Diagnosis: newDiagnosisFlags(), FailOn: "error"}
}

func (f *checkFlags) command() *cobra.Command {
	c := &cobra.Command{
		Use:     "check [NAME...] [-n NAMESPACE | -A] [-l SELECTOR]",
		Short:   "Report StatefulSet rollouts that will not finish on their own, and why",
		Example: checkExample,
		RunE:    runE(f.ToOptions),
	}
	f.Scope.AddFlags(c)
	f.Scope.AddFleetFlags(c)
	f.PrintFlags.AddFlags(c)
	c.Flags().StringVar(&f.FailOn, "fail-on", f.FailOn, "Exit 1 when a finding is at least this severe: error, warning, info or never")
	c.Flags().Int64Var(&f.Logs, "logs", 0, "Add the last N lines of the previous run of each container a finding says exited (one GET per container)")
	addConfirmFlag(c, &f.ConfirmWithAdmission)
	c.Flags().BoolVar(&f.Full, "full", false, "With -A: read every pod, claim, revision and Event of the cluster, instead of only those of namespaces whose StatefulSets' status is not settled (-o html always does: its page draws every StatefulSet's pods)")
	f.Diagnosis.AddFlags(c)
	return c
}

// ToOptions checks and parses the flags with the NAME arguments.
func (f *checkFlags) ToOptions(args []string) (*checkOptions, error) {
	o := &checkOptions{configFlags: f.configFlags, IOStreams: f.IOStreams, print: f.PrintFlags, admission: f.ConfirmWithAdmission, full: f.Full}
	var err error
	if o.scope, err = f.Scope.ToScope(args); err != nil {
		return nil, err
	}
	if err := f.PrintFlags.Validate(); err != nil {
		return nil, err
	}
	if o.diagnosis, err = f.Diagnosis.ToOptions(); err != nil {
		return nil, err
	}
	if o.failOn, err = parseFailOn(f.FailOn); err != nil {
		return nil, err
	}
	if n, err := strconv.ParseInt(os.Getenv("STSDIAG_PAGE_SIZE"), 10, 64); err == nil && n > 0 {
		o.pageSize = n
	}
	if o.full && !o.scope.allNamespaces {
		return nil, errors.New("--full reads all namespaces: use it with -A")
	}
	if o.logs = f.Logs; o.logs < 0 || (o.logs > 0 && o.scope.fleet()) {
		return nil, errors.New("--logs takes a positive number of lines, and one cluster (not --contexts)")
	}
	return o, nil
}

// complete builds one cluster's clients (reads' profile).
func (o *checkOptions) complete() (err error) {
	if !o.scope.fleet() {
		o.clients, err = newClients(o.configFlags, reads)
	}
	return err
}

// Run gathers and diagnoses (one cluster, or the fleet of --contexts), prints the report and
// sets the exit code: the worst of all clusters.
func (o *checkOptions) Run(ctx context.Context) error {
	var rep *model.Report
	var explanations map[string]*apiv1.Explanation
	var members []apiv1.FleetMember
	if o.scope.fleet() {
		targets, err := o.fleet(ctx)
		if err != nil {
			return withCode(ExitError, err)
		}
		rep, members = check.RunFleet(ctx, targets, check.FleetOptions{Options: check.Options{Diagnosis: o.diagnosis, Full: o.full, PageSize: o.pageSize, Admission: o.admission},
			Concurrency: o.scope.concurrency, Noun: o.scope.noun()})
	} else {
		opts := check.Options{Diagnosis: o.diagnosis, Logs: o.logs, Full: o.full, PageSize: o.pageSize,
			// The page draws each set's ordinals: its explanation, from the same diagnosis.
			Explanations: o.print.OutputFormat == render.FormatHTML, Admission: o.admission}
		var err error
		if rep, explanations, err = check.Cluster(ctx, o.clients, o.scope.Scope, opts); err != nil {
			return withCode(ExitError, err)
		}
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	table := render.TableOptions{WithNamespace: o.scope.allNamespaces || o.scope.fleet(), WithContext: o.scope.fleet(), Color: colorEnabled(o.Out),
		Explanations: explanations, Now: time.Now()}
	printReport := render.Report
	if o.scope.fleet() {
		printReport = func(w io.Writer, r *model.Report, flags *render.PrintFlags, opts render.TableOptions) error {
			return render.FleetReport(w, r, members, flags, opts)
		}
	}
	if err := printReport(o.Out, rep, o.print, table); err != nil {
		return withCode(ExitError, err)
	}
	if err := render.GitHubFromEnv(os.Getenv).Report(o.ErrOut, rep); err != nil {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", err)
	}
	if failed := check.Failed(members); len(failed) > 0 {
		return withCode(ExitError, fmt.Errorf("could not check %s(s) %s", o.scope.noun(), strings.Join(failed, ", ")))
	}
	if o.failOn != "" && rep.Count(o.failOn) > 0 {
		return withCode(ExitFindings, nil)
	}
	return nil
}

// fleet builds one target per member of the fleet (context or ClusterProfile): each reached,
// with its own clients and namespace, when the fleet's run comes to it.
func (o *checkOptions) fleet(ctx context.Context) ([]check.Target, error) {
	members, err := o.scope.members(ctx, o.configFlags)
	if err != nil {
		return nil, err
	}
	var targets []check.Target
	for _, m := range members {
		targets = append(targets, check.Target{Context: m.Name, Connect: func(ctx context.Context) (connect.Clients, read.Scope, error) {
			return m.Connect(ctx, withUserAgent(reads))
		}})
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
