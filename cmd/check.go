package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stsdiag/stsdiag/diagnose"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/report"
	"github.com/stsdiag/stsdiag/snapshot"
	"github.com/stsdiag/stsdiag/stuck"
)

// CheckOptions are the flags and state of `stsdiag check`.
type CheckOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	AllNamespaces bool
	Selector      string
	Output        string
	FailOn        string
	OpenShift     string
	Terminating   time.Duration

	names     []string
	namespace string
	selector  labels.Selector
	failOn    report.Severity
	mode      openshift.Mode
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
	o := &CheckOptions{configFlags: configFlags, IOStreams: streams}
	c := &cobra.Command{
		Use:     "check [NAME...] [-n NAMESPACE | -A] [-l SELECTOR]",
		Short:   "Report StatefulSet rollouts that will not finish on their own, and why",
		Example: checkExample,
		RunE:    runE(o),
	}
	o.AddFlags(c)
	return c
}

// AddFlags registers the check flags.
func (o *CheckOptions) AddFlags(c *cobra.Command) {
	f := c.Flags()
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Check StatefulSets in all namespaces")
	f.StringVarP(&o.Selector, "selector", "l", "", "Label selector for the StatefulSets to check")
	f.StringVarP(&o.Output, "output", "o", "table", "Output format: table, wide, json or yaml")
	f.StringVar(&o.FailOn, "fail-on", "error", "Exit 1 when a finding is at least this severe: error, warning, info or never")
	f.StringVar(&o.OpenShift, "openshift", "auto", "Use the OpenShift image API: auto (if served), always or never")
	f.DurationVar(&o.Terminating, "terminating-threshold", stuck.DefaultOptions().TerminatingAfter, "Report a StatefulSet (and its dependents) terminating for longer than this")
}

// Complete fills in defaults from the arguments and kubeconfig.
func (o *CheckOptions) Complete(args []string) error {
	o.names = args
	ns, _, err := namespace(o.configFlags, o.AllNamespaces)
	if err != nil {
		return err
	}
	o.namespace = ns
	return nil
}

// Validate checks the flags.
func (o *CheckOptions) Validate() error {
	if o.AllNamespaces && len(o.names) > 0 {
		return fmt.Errorf("StatefulSet names cannot be combined with --all-namespaces: names are looked up in one namespace")
	}
	if !contains(report.Formats, o.Output) {
		return fmt.Errorf("unknown output format %q: want one of %s", o.Output, strings.Join(report.Formats, ", "))
	}
	var err error
	if o.failOn, err = parseFailOn(o.FailOn); err != nil {
		return err
	}
	if o.mode, err = openshift.ParseMode(o.OpenShift); err != nil {
		return err
	}
	if o.selector, err = labels.Parse(o.Selector); err != nil {
		return fmt.Errorf("invalid --selector %q: %w", o.Selector, err)
	}
	return nil
}

// Run gathers, diagnoses, prints and sets the exit code.
func (o *CheckOptions) Run(ctx context.Context) error {
	c, _, err := clients(o.configFlags)
	if err != nil {
		return withCode(ExitError, err)
	}
	snap, warnings, err := snapshot.Gather(ctx, c, snapshot.Scope{Namespace: o.namespace, Names: o.names, Selector: o.selector, OpenShift: o.mode})
	if err != nil {
		return withCode(ExitError, err)
	}
	opts := stuck.DefaultOptions()
	opts.TerminatingAfter = o.Terminating
	rep := diagnose.ReportWith(snap, opts)
	rep.Warnings = warnings
	for _, w := range rep.Warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	table := report.TableOptions{WithNamespace: o.AllNamespaces, Color: colorEnabled(o.Out)}
	if err := report.Print(o.Out, rep, o.Output, table); err != nil {
		return withCode(ExitError, err)
	}
	if o.failOn != "" && rep.Count(o.failOn) > 0 {
		return withCode(ExitFindings, nil)
	}
	return nil
}

func parseFailOn(s string) (report.Severity, error) {
	switch s {
	case "never":
		return "", nil
	case string(report.SeverityError), string(report.SeverityWarning), string(report.SeverityInfo):
		return report.Severity(s), nil
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
