package cmd

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/preflight"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// preflightFlags are the flags of `stsdiag preflight`, as typed.
type preflightFlags struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	Files        *genericclioptions.FileNameFlags
	PrintFlags   *render.PrintFlags
	Diagnosis    *diagnosisFlags
	FailOn       string
	JUnitFile    string
	SkipImages   bool
	FieldManager string
	OpenShift    string
}

// preflightOptions are what `stsdiag preflight` runs with, parsed and checked.
type preflightOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	files        resource.FilenameOptions
	print        *render.PrintFlags
	clients      read.Clients
	diagnosis    stuck.Options
	failOn       apiv1.Severity
	junitFile    string
	skipImages   bool
	fieldManager string
	openShift    openshift.Mode
}

const preflightExample = `  # Before applying: would the rollouts these manifests start finish by themselves?
  kubectl stsdiag preflight -f deploy/

  # A rendered chart or kustomization from stdin, as JSON for scripts
  helm template web ./chart | kubectl stsdiag preflight -f - -o json

  # On an air-gapped CI runner: ask no registry
  kubectl stsdiag preflight -f manifests/ -R --skip-images

  # Predict fields the apply removes: the dry run uses the apply's own field manager
  kubectl stsdiag preflight -f web.yaml --field-manager kubectl`

func newPreflightCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newPreflightFlags(configFlags, streams).command()
}

func newPreflightFlags(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *preflightFlags {
	return &preflightFlags{configFlags: configFlags, IOStreams: streams, PrintFlags: render.NewPrintFlags(render.FormatJUnit),
		Files:     &genericclioptions.FileNameFlags{Usage: "the manifests to apply", Filenames: &[]string{}, Kustomize: ptr.To(""), Recursive: ptr.To(false)},
		Diagnosis: newDiagnosisFlags(), FailOn: "error", FieldManager: preflight.FieldManager, OpenShift: string(openshift.ModeAuto)}
}

func (f *preflightFlags) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "preflight -f FILE|DIR|- [-R]",
		Short: "Before an apply: say whether the StatefulSet rollouts it starts would finish by themselves",
		Long: `preflight judges the StatefulSets of the manifests against the cluster they are about to meet,
before they are applied: a server-side dry-run apply of each (dryRun=All), a dry-run create of the
pods the StatefulSet controller would create or replace, built as it builds them, the ResourceQuota
counted for every pod, the scheduler's filters over the nodes, each image's manifest in its
registry, OpenShift's image lookup, and the pods the new revision meets (kubernetes#67250).
Nothing in the cluster changes: only reads and dry runs, never a create, never an Event.`,
		Example: preflightExample,
		Args:    cobra.NoArgs,
		RunE:    runE(f.ToOptions),
	}
	f.Files.AddFlags(c.Flags())
	f.PrintFlags.AddFlags(c)
	fs := c.Flags()
	fs.StringVar(&f.FailOn, "fail-on", f.FailOn, "Also exit 1 when a finding is at least this severe: error, warning or info; never: always exit 0 once judged")
	fs.StringVar(&f.JUnitFile, "junit-file", "", "Also write a JUnit XML report to this file")
	fs.BoolVar(&f.SkipImages, "skip-images", false, "Ask no registry whether the images exist (air-gapped runners)")
	fs.StringVar(&f.FieldManager, "field-manager", f.FieldManager, "Field manager of the server-side dry-run apply; the real apply's own predicts the fields it removes")
	fs.StringVar(&f.OpenShift, "openshift", f.OpenShift, "Model OpenShift's image lookup: auto (if the image API is served), always or never")
	f.Diagnosis.AddFlags(c)
	return c
}

// ToOptions checks and parses the flags.
func (f *preflightFlags) ToOptions(_ []string) (*preflightOptions, error) {
	o := &preflightOptions{configFlags: f.configFlags, IOStreams: f.IOStreams, files: f.Files.ToOptions(), print: f.PrintFlags,
		junitFile: f.JUnitFile, skipImages: f.SkipImages, fieldManager: f.FieldManager}
	if err := o.files.RequireFilenameOrKustomize(); err != nil {
		return nil, err
	}
	if err := f.PrintFlags.Validate(); err != nil {
		return nil, err
	}
	var err error
	if o.diagnosis, err = f.Diagnosis.ToOptions(); err != nil {
		return nil, err
	}
	if o.failOn, err = parseFailOn(f.FailOn); err != nil {
		return nil, err
	}
	if o.openShift, err = openshift.ParseMode(f.OpenShift); err != nil {
		return nil, fmt.Errorf("invalid --openshift %q: want auto, always or never", f.OpenShift)
	}
	if o.fieldManager == "" {
		return nil, fmt.Errorf("--field-manager must not be empty")
	}
	return o, nil
}

// Run reads the manifests, judges them against the cluster, prints the answer and sets the exit
// code.
// complete builds the clients (dry runs' profile).
func (o *preflightOptions) complete() error {
	c, err := newClients(o.configFlags, dryRuns)
	o.clients = c.Clients
	return err
}

func (o *preflightOptions) Run(ctx context.Context) error {
	start := time.Now()
	namespace, enforce, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return withCode(ExitError, fmt.Errorf("loading kubeconfig: %w", err))
	}
	manifest, err := preflight.ReadManifest(o.configFlags, o.files, o.In, namespace, enforce)
	if err != nil {
		return withCode(ExitError, err)
	}
	res, err := preflight.Run(ctx, preflight.Options{Clients: o.clients, Manifest: manifest, FieldManager: o.fieldManager,
		SkipImages: o.skipImages, OpenShift: o.openShift, Diagnosis: o.diagnosis})
	if err != nil {
		return withCode(ExitError, err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	elapsed := time.Since(start)
	if err := render.Preflight(o.Out, res, o.print, colorEnabled(o.Out), elapsed); err != nil {
		return withCode(ExitError, err)
	}
	if o.junitFile != "" {
		if err := writePreflightJUnit(o.junitFile, res, elapsed); err != nil {
			return withCode(ExitError, err)
		}
	}
	if err := render.GitHubFromEnv(os.Getenv).Preflight(o.ErrOut, res); err != nil {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", err)
	}
	// Exit 1 when a rollout would not finish by itself (wait's policy), or a finding is at least
	// as severe as --fail-on; --fail-on never: never.
	if o.failOn != "" && (res.Result() == apiv1.PreflightWouldNotFinish || res.Count(o.failOn) > 0) {
		return withCode(ExitFindings, nil)
	}
	return nil
}

func writePreflightJUnit(path string, res *model.Preflight, elapsed time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = render.WritePreflightJUnit(f, res, elapsed)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
