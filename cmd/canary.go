package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/canary"
	"github.com/stsdiag/stsdiag/internal/connect"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
)

// canaryFlags are the flags of `stsdiag canary`, as typed.
type canaryFlags struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	PrintFlags *render.PrintFlags
	Scope      *scopeFlags
	Hold       *holdFlags
	Settle     settleFlag
	Diagnosis  *diagnosisFlags
	Steps      string
	Images     []string
	Timeout    time.Duration
	NoRollback bool
	Analysis   analysisFlags
	// StepDuration: how long each step must stay healthy (default: --hold's value).
	StepDuration time.Duration
	Yes          bool
	DryRun       string
}

// analysisFlags gate canary's steps on the application's metrics (--analysis).
type analysisFlags struct {
	File string
	prometheusFlags
	Args []string
}

func (f *analysisFlags) AddFlags(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.File, "analysis", "", "An Argo Rollouts AnalysisTemplate (YAML or JSON, prometheus provider): measured on each step once its pods held healthy; Failed rolls back, Inconclusive pauses (exit 4)")
	f.prometheusFlags.AddFlags(c)
	fs.StringArrayVar(&f.Args, "arg", nil, "NAME=VALUE: a value for the analysis template's argument (repeatable); namespace, statefulset, revision and pods are filled when declared without a value")
}

// ToAnalysis reads and checks the analysis template, before anything changes (nil without --analysis).
func (f *analysisFlags) ToAnalysis(configFlags *genericclioptions.ConfigFlags) (*canary.Analysis, error) {
	if f.File == "" {
		if f.prometheusFlags.given() || len(f.Args) > 0 {
			return nil, errors.New("--prometheus, --prometheus-token-file, --prometheus-ca-file, --prometheus-insecure-skip-tls-verify and --arg need --analysis")
		}
		return nil, nil
	}
	d, err := f.Dialer(configFlags)
	if err != nil {
		return nil, err
	}
	return canary.NewAnalysis(f.File, f.Args, d.Querier, f.Address != "")
}

// canaryOptions are what `stsdiag canary` runs with, parsed and checked.
type canaryOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	print   *render.PrintFlags
	clients connect.Clients
	canary  canary.Options
	yes     bool
	dryRun  apiv1.DryRunMode
	// confirm asks before the first write (a terminal prompt); tests replace it.
	confirm func(ctx context.Context) (bool, error)
}

const canaryExample = `  # Change the image and roll it out 1 pod, then half, then all, each held healthy for 2m
  kubectl stsdiag canary web -n shop --image web=registry.example.com/web:1.2 --steps 1,50%

  # Step a template already changed with the partition held (partition = replicas)
  oc stsdiag canary web -n myproject --steps 1,50%,100% --hold 5m

  # Gate each step on the application's error ratio in Prometheus (an Argo AnalysisTemplate)
  kubectl stsdiag canary web --image web=web:1.2 --steps 1,50% --analysis error-ratio.yaml \
    --prometheus http://prometheus.monitoring.svc:9090

  # Stop and report instead of rolling back
  kubectl stsdiag canary web --image web=web:1.2 --steps 1 --no-rollback -o json`

// newCanaryCommand builds `stsdiag canary`.
func newCanaryCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCanaryFlags(configFlags, streams).command()
}

func newCanaryFlags(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *canaryFlags {
	return &canaryFlags{configFlags: configFlags, IOStreams: streams,
		PrintFlags: withOutputAliases(render.NewPrintFlags(render.FormatJUnit), "canary", streams.ErrOut),
		Scope:      newScopeFlags(configFlags), Hold: &holdFlags{}, Diagnosis: newDiagnosisFlags(), Timeout: 30 * time.Minute}
}

func (f *canaryFlags) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "canary NAME --steps 1,50%[,100%] [--image CONTAINER=REF] [--hold 2m] [--timeout 30m] [--no-rollback] [--analysis FILE [--prometheus URL]]",
		Short: "Roll a StatefulSet's new template out step by step, gated by the diagnosis, rolled back by itself",
		Long: `canary moves a new template to a few pods first by stepping the rolling update's partition:
the first step's pods (the highest ordinals, which the controller updates first) move to the
update revision, must be Ready on it and stay healthy for --hold with no finding of check (wait's
diagnosis and hold rules); then the partition goes down to the next step, and so on to 0.

--steps lists numbers of pods (1) or percentages of spec.replicas (50%, rounded up), increasing;
the last step is 100%, implied when not written. A step that moves no pod beyond the one before
is merged into it. With --image the template changes in the same patch as the first step's
partition; without it the template must already differ (status.updateRevision ≠ currentRevision)
with the partition held at the first step's value or above (e.g. partition = replicas).

Every partition change is a JSON patch that tests the StatefulSet's UID, generation and current
partition: if someone else changes them, canary stops (result Stopped) and overwrites nothing.

When a canary pod's finding holds for --hold, canary rolls the template back to the current
revision as fix --rollback does (same guards), deletes only the proven-stuck canary pods, waits
for them Ready on the old revision, restores the partition and exits 1 (result RolledBack).
With --no-rollback it stops there (result Stuck). Pods below the partition and PVCs are never
touched. The OnDelete strategy ignores the partition and is refused.

With --analysis, a step whose pods held healthy is also measured by the application's own
metrics: an Argo Rollouts AnalysisTemplate (prometheus provider; successCondition,
failureCondition, failureLimit, inconclusiveLimit, consecutiveErrorLimit, interval, count,
initialDelay, args). Its arguments namespace, statefulset, revision (the update revision) and
pods (the step's canary pods, as a regular expression: web-3|web-2) are filled when declared
without a value; --arg gives the others. Successful steps forward; Failed rolls the template
back as above, deleting no pod (they are Ready: the controller replaces them) and exits 1
(RolledBack, naming the metric, its values and its query); Inconclusive or Error — Prometheus
unreachable, no data, neither condition held — pauses the canary where it is, nothing rolled
back and no step forward, and exits 4 (Inconclusive). Other providers and unsupported fields
are refused (exit 2) before anything changes.

Progress lines go to stderr, the verdict to stdout.`,
		Example: canaryExample,
		Args:    cobra.MaximumNArgs(1),
		RunE:    runE(f.ToOptions),
	}
	f.Scope.AddOpenShiftFlag(c)
	f.PrintFlags.AddFlags(c)
	fs := c.Flags()
	fs.StringVar(&f.Steps, "steps", "", "Pods (1) or percentages of spec.replicas (50%) on the new revision, increasing; 100% is implied last")
	fs.StringArrayVar(&f.Images, "image", nil, "CONTAINER=REF: change this container's image in the same patch as the first step (repeatable)")
	fs.DurationVar(&f.Timeout, "timeout", f.Timeout, "Give up (exit 3) after this long")
	fs.BoolVar(&f.NoRollback, "no-rollback", false, "When a step fails, stop and report (exit 1) instead of rolling back")
	f.Hold.AddFlags(c, 2*time.Minute, "stuck-grace", "How long a finding must hold for a step to fail")
	fs.DurationVar(&f.StepDuration, "step-duration", 0, "How long each step's pods must stay Ready on the update revision with no finding before the next step (default: --hold's value)")
	fs.BoolVarP(&f.Yes, "yes", "y", false, "Start without asking")
	fs.StringVar(&f.DryRun, "dry-run", string(apiv1.DryRunNone), "none, client (print the plan only) or server (also send the first step's patch with dryRun=All)")
	f.Settle.AddFlags(c)
	f.Diagnosis.AddFlags(c)
	f.Analysis.AddFlags(c)
	return c
}

// ToOptions checks and parses the flags with the NAME argument.
func (f *canaryFlags) ToOptions(args []string) (*canaryOptions, error) {
	if len(args) != 1 {
		return nil, errors.New("name the StatefulSet to canary")
	}
	if f.Steps == "" {
		return nil, errors.New("--steps is required, e.g. --steps 1,50%")
	}
	steps, err := canary.ParseSteps(f.Steps)
	if err != nil {
		return nil, err
	}
	if f.Timeout <= 0 {
		return nil, errors.New("--timeout must be positive")
	}
	images := map[string]string{}
	for _, img := range f.Images {
		name, ref, ok := strings.Cut(img, "=")
		if !ok || name == "" || ref == "" {
			return nil, fmt.Errorf("--image %q: want CONTAINER=REF", img)
		}
		if _, dup := images[name]; dup {
			return nil, fmt.Errorf("--image names container %q twice", name)
		}
		images[name] = ref
	}
	if err := f.PrintFlags.Validate(); err != nil {
		return nil, err
	}
	ns, err := connect.Namespace(f.configFlags, false)
	if err != nil {
		return nil, err
	}
	o := &canaryOptions{configFlags: f.configFlags, IOStreams: f.IOStreams, print: f.PrintFlags,
		canary: canary.Options{Namespace: ns, Name: args[0], Steps: steps, Images: images, Timeout: f.Timeout, NoRollback: f.NoRollback}}
	if o.canary.Diagnosis, err = f.Diagnosis.ToOptions(); err != nil {
		return nil, err
	}
	if o.canary.Steady, err = f.Settle.ToDuration(); err != nil {
		return nil, err
	}
	if o.canary.Hold, err = f.Hold.ToDuration(); err != nil {
		return nil, err
	}
	if len(images) == 0 {
		o.canary.Images = nil
	}
	if o.canary.StepDuration = f.StepDuration; f.StepDuration < 0 {
		return nil, errors.New("--step-duration must not be negative")
	}
	switch o.dryRun = apiv1.DryRunMode(f.DryRun); o.dryRun {
	case apiv1.DryRunNone, apiv1.DryRunClient, apiv1.DryRunServer:
	default:
		return nil, fmt.Errorf("invalid --dry-run %q: want none, client or server", f.DryRun)
	}
	o.yes = f.Yes
	o.confirm = func(ctx context.Context) (bool, error) { return askOnTerminal(ctx, o.IOStreams, "Start this canary?") }
	if o.canary.Analysis, err = f.Analysis.ToAnalysis(f.configFlags); err != nil {
		return nil, err
	}
	return o, nil
}

// complete builds the clients (following's profile).
func (o *canaryOptions) complete() (err error) {
	o.clients, err = newClients(o.configFlags, following)
	return err
}

// Run runs the canary (canary.Run), prints the verdict and sets the exit code.
func (o *canaryOptions) Run(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.canary.Timeout)
	defer cancel()
	opts := o.canary
	opts.Log = o.ErrOut
	opts.ServerDryRun = o.dryRun == apiv1.DryRunServer
	if o.dryRun != apiv1.DryRunNone || !o.yes {
		opts.Approve = func(p canary.Plan) error { return o.approve(ctx, p) }
	}
	opts.Progress = func(a model.Action) { render.Progress(o.ErrOut, a) }
	res, err := canary.Run(ctx, o.clients, opts)
	switch {
	case errors.Is(err, errCanaryDryRun):
		return nil
	case errors.Is(err, errNotStarted):
		return withCode(ExitFindings, err)
	}
	var bad *canary.BadInputError
	if errors.As(err, &bad) {
		return withCode(ExitError, err)
	}
	elapsed := time.Since(start)
	res.Elapsed = elapsed.Round(10 * time.Millisecond).String()
	printErr := render.CanaryResult(o.Out, res, o.print, elapsed, colorEnabled(o.Out))
	switch {
	case err == nil && res.Result == apiv1.CanaryStopped:
		return withCode(ExitFindings, printErr)
	case err == nil && res.Result == apiv1.CanaryInconclusive:
		return withCode(ExitInconclusive, printErr)
	}
	return waitExit(&res.WaitResult, err, printErr)
}

var (
	errCanaryDryRun = errors.New("dry run")
	errNotStarted   = errors.New("canary not started")
)

// approve shows the plan before the first write: a dry run ends there (exit 0); otherwise it asks
// on the terminal, as fix does, unless --yes (exit 1 when not answered yes or no terminal).
func (o *canaryOptions) approve(ctx context.Context, p canary.Plan) error {
	if o.dryRun != apiv1.DryRunNone {
		w := o.ErrOut
		if o.print.Human() {
			w = o.Out
		}
		p.Print(w)
		return errCanaryDryRun
	}
	p.Print(o.ErrOut)
	ok, err := o.confirm(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", errNotStarted, err)
	case !ok:
		return fmt.Errorf("%w: not confirmed", errNotStarted)
	}
	return nil
}
