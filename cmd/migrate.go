package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/connect"
	"github.com/stsdiag/stsdiag/internal/migrate"
	"github.com/stsdiag/stsdiag/internal/render"
)

// migrateFlags are the flags of `stsdiag migrate`, as typed.
type migrateFlags struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	PrintFlags          *render.PrintFlags
	Diagnosis           *diagnosisFlags
	Filename            string
	PodManagementPolicy string
	ServiceName         string
	ClaimSizes          []string
	DryRun              bool
	Yes                 bool
	GitOpsPaused        bool
	Timeout             time.Duration
	Status              bool
}

// migrateOptions are what `stsdiag migrate` runs with, parsed and checked.
type migrateOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	print   *render.PrintFlags
	yes     bool
	status  bool
	migrate migrate.Options
	// confirm asks before anything changes (a terminal prompt). Tests replace it.
	confirm func(ctx context.Context) (bool, error)
}

const migrateExample = `  # Switch web to podManagementPolicy Parallel (the lasting cure of kubernetes#67250): the plan only
  kubectl stsdiag migrate web -n shop --pod-management-policy Parallel --dry-run

  # Grow the claims of web's template "data" to 20Gi, without asking
  kubectl stsdiag migrate web -n shop --claim-size data=20Gi --yes

  # Migrate to the StatefulSet as it should be (from git, a chart's output)
  helm template ... | kubectl stsdiag migrate -f - --yes

  # Where a migration stands; the same command finishes one that was interrupted
  kubectl stsdiag migrate web -n shop --status
  kubectl stsdiag migrate web -n shop --yes`

func newMigrateCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newMigrateFlags(configFlags, streams).command()
}

func newMigrateFlags(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *migrateFlags {
	return &migrateFlags{configFlags: configFlags, IOStreams: streams, PrintFlags: render.NewPrintFlags(), Diagnosis: newDiagnosisFlags(),
		Timeout: 5 * time.Minute}
}

func (f *migrateFlags) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "migrate [NAME] [-n NAMESPACE] (-f FILE | --pod-management-policy P | --service-name S | --claim-size TEMPLATE=SIZE) [--dry-run] [--yes]",
		Short: "Change what Kubernetes forbids changing in a StatefulSet (podManagementPolicy, serviceName, claim sizes) without restarting a pod",
		Long: `migrate changes the fields of a StatefulSet that Kubernetes refuses to change in place —
spec.podManagementPolicy, spec.serviceName and the storage request of spec.volumeClaimTemplates —
by recreating the object while its pods and claims stay:

  1. plan, and refuse before anything changes: a changed selector, a claim template added,
     removed or changed in more than its size, a claim that would shrink, a claim not Bound or of
     a StorageClass without allowVolumeExpansion, a set managed by Argo CD, Flux or Helm (unless
     --gitops-paused), one controlled by an owner, a partitioned rollout under way, a pod being
     deleted, a template the API server would store differently. A rollout under way or stuck
     is named (moving to Parallel cures kubernetes#67250);
  2. grow each existing claim's request (UID and resourceVersion preconditions) and report what
     the volume plugin says (Resizing, FileSystemResizePending); it never waits for the plugin;
  3. save the original in configmap stsdiag-migrate-NAME (in the namespace, owned by nothing),
     then delete it with propagationPolicy Orphan (UID and resourceVersion preconditions) and
     wait until it is gone, naming the finalizers that hold it;
  4. create the new StatefulSet with the running template (updateStrategy OnDelete until the
     proof), so the controller finds the same revision and adopts the pods; prove it: every pod
     owned by the new StatefulSet with the same UID and controller-revision-hash, the update
     revision kept, no pod deleted; then apply the spec asked for (a template change in the file
     then rolls out as usual) and remove the saved copy.

Interrupted at any point (even killed), the same command finishes the job: the saved copy and
the pods say where it stopped; migrate --status says where it stands, and check reports pods
without their StatefulSet (PodsWithoutStatefulSet). It never deletes a pod or a claim.

Without --yes it asks on a terminal (the question on stderr); without a terminal it prints the
plan and exits 1.`,
		Example: migrateExample,
		Args:    cobra.MaximumNArgs(1),
		RunE:    runE(f.ToOptions),
	}
	f.PrintFlags.AddFlags(c)
	fs := c.Flags()
	fs.StringVarP(&f.Filename, "filename", "f", "", "The StatefulSet as it should be (YAML or JSON; - for stdin); other objects in the file are ignored")
	fs.StringVar(&f.PodManagementPolicy, "pod-management-policy", "", "Set spec.podManagementPolicy: OrderedReady or Parallel")
	fs.StringVar(&f.ServiceName, "service-name", "", "Set spec.serviceName")
	fs.StringArrayVar(&f.ClaimSizes, "claim-size", nil, "Grow a volume claim template's storage request and its existing claims: TEMPLATE=SIZE (repeatable)")
	fs.BoolVar(&f.DryRun, "dry-run", false, "Print the plan; change nothing")
	fs.BoolVarP(&f.Yes, "yes", "y", false, "Migrate without asking")
	fs.BoolVar(&f.GitOpsPaused, "gitops-paused", false, "The GitOps controller (Argo CD, Flux) or Helm release managing the StatefulSet is paused and its source changed: migrate it anyway")
	fs.DurationVar(&f.Timeout, "timeout", f.Timeout, "How long one run waits for finalizers and the controller's adoption before it stops (the same command goes on)")
	fs.BoolVar(&f.Status, "status", false, "Say where a migration of NAME stands; change nothing")
	f.Diagnosis.AddFlags(c)
	return c
}

// ToOptions checks and parses the flags with the NAME argument.
func (f *migrateFlags) ToOptions(args []string) (*migrateOptions, error) {
	o := &migrateOptions{configFlags: f.configFlags, IOStreams: f.IOStreams, print: f.PrintFlags, yes: f.Yes, status: f.Status}
	o.confirm = o.askOnTerminal
	if err := f.PrintFlags.Validate(); err != nil {
		return nil, err
	}
	diagnosis, err := f.Diagnosis.ToOptions()
	if err != nil {
		return nil, err
	}
	if f.Timeout <= 0 {
		return nil, fmt.Errorf("invalid --timeout %s: want a positive duration such as 5m", f.Timeout)
	}
	m := migrate.Options{PodManagementPolicy: f.PodManagementPolicy, DryRun: f.DryRun, GitOpsPaused: f.GitOpsPaused, Timeout: f.Timeout, Diagnosis: diagnosis}
	switch appsv1.PodManagementPolicyType(f.PodManagementPolicy) {
	case "", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		return nil, fmt.Errorf("invalid --pod-management-policy %q: want OrderedReady or Parallel", f.PodManagementPolicy)
	}
	if f.ServiceName != "" {
		m.ServiceName = &f.ServiceName
	}
	for _, cs := range f.ClaimSizes {
		tpl, size, ok := strings.Cut(cs, "=")
		q, err := resource.ParseQuantity(size)
		if !ok || tpl == "" || err != nil || q.Sign() <= 0 {
			return nil, fmt.Errorf("invalid --claim-size %q: want TEMPLATE=SIZE, such as data=20Gi", cs)
		}
		if m.ClaimSizes == nil {
			m.ClaimSizes = map[string]resource.Quantity{}
		}
		m.ClaimSizes[tpl] = q
	}
	if f.Filename != "" {
		if m.PodManagementPolicy != "" || m.ServiceName != nil || m.ClaimSizes != nil {
			return nil, errors.New("-f and --pod-management-policy, --service-name or --claim-size: give the file, or the flags, not both")
		}
		if m.Desired, err = readStatefulSet(f.Filename, f.In, args); err != nil {
			return nil, err
		}
	}
	changes := m.Desired != nil || m.PodManagementPolicy != "" || m.ServiceName != nil || m.ClaimSizes != nil
	if f.Status && (changes || f.DryRun || f.Yes) {
		return nil, errors.New("--status says where a migration stands: it takes no file, flags, --dry-run or --yes")
	}
	switch {
	case len(args) == 1:
		m.Name = args[0]
	case m.Desired != nil:
		m.Name = m.Desired.Name
	default:
		return nil, errors.New("name the StatefulSet: migrate NAME, or -f FILE")
	}
	ns, explicit := "", f.configFlags.Namespace != nil && *f.configFlags.Namespace != ""
	if ns, err = connect.Namespace(f.configFlags, false); err != nil {
		return nil, err
	}
	if d := m.Desired; d != nil && d.Namespace != "" {
		if explicit && d.Namespace != ns {
			return nil, fmt.Errorf("the file's StatefulSet is in namespace %s, not %s (-n)", d.Namespace, ns)
		}
		ns = d.Namespace
	}
	m.Namespace = ns
	o.migrate = m
	return o, nil
}

// readStatefulSet reads the StatefulSet of a file (- for in): the only one, or the one named.
func readStatefulSet(path string, in io.Reader, args []string) (*appsv1.StatefulSet, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(in)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var found []*appsv1.StatefulSet
	for _, doc := range strings.Split("\n"+string(data), "\n---") {
		var meta struct{ APIVersion, Kind string }
		if strings.TrimSpace(doc) == "" || yaml.Unmarshal([]byte(doc), &meta) != nil {
			continue
		}
		if meta.Kind != "StatefulSet" || !strings.HasPrefix(meta.APIVersion, "apps/") {
			continue
		}
		set := &appsv1.StatefulSet{}
		if err := yaml.UnmarshalStrict([]byte(doc), set); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		found = append(found, set)
	}
	for _, set := range found {
		if len(args) == 1 && set.Name == args[0] {
			return set, nil
		}
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("%s holds no StatefulSet (apps/v1)", path)
	case len(args) == 1:
		return nil, fmt.Errorf("%s holds no StatefulSet %s", path, args[0])
	case len(found) > 1:
		return nil, fmt.Errorf("%s holds %d StatefulSets: name the one to migrate (migrate NAME -f %s)", path, len(found), path)
	}
	return found[0], nil
}

// complete builds the clients (writes' profile).
func (o *migrateOptions) complete() (err error) {
	o.migrate.Clients, err = newClients(o.configFlags, writes)
	return err
}

// Run migrates (or says where a migration stands), prints the outcome and sets the exit code.
// In the human formats the plan and each step go to stdout as they happen; waits go to stderr.
func (o *migrateOptions) Run(ctx context.Context) error {
	opts := o.migrate
	human := o.print.Human()
	if o.status {
		res, err := migrate.Status(ctx, opts)
		if err != nil {
			return withCode(ExitError, err)
		}
		if err := render.MigrationResult(o.Out, res, o.print); err != nil {
			return withCode(ExitError, err)
		}
		return migrateExit(res, nil)
	}
	if human {
		opts.OnPlan = func(r *apiv1.MigrationResult) { render.MigrationPlan(o.Out, r) }
	}
	opts.Progress = func(s apiv1.MigrationStep) {
		if s.Result == "" {
			render.MigrationStep(o.ErrOut, s)
		} else if human {
			render.MigrationStep(o.Out, s)
		}
	}
	if !o.yes {
		opts.Confirm = func(*apiv1.MigrationResult) (bool, error) { return o.confirm(ctx) }
	}
	res, err := migrate.Run(ctx, opts)
	if res == nil {
		return withCode(ExitError, err)
	}
	if perr := render.MigrationResult(o.Out, res, o.print); perr != nil && err == nil {
		err = perr
	}
	return migrateExit(res, err)
}

// migrateExit is the exit code of a migration's result and error.
func migrateExit(res *apiv1.MigrationResult, err error) error {
	switch {
	case errors.Is(err, migrate.ErrNotConfirmed):
		return withCode(ExitFindings, err)
	case errors.Is(err, context.Canceled):
		return withCode(ExitInterrupted, nil)
	case err != nil:
		return withCode(ExitError, err)
	}
	switch res.Result {
	case apiv1.Migrated, apiv1.NothingToMigrate, apiv1.MigrationPlanned, apiv1.MigrationNone:
		return nil
	}
	return withCode(ExitFindings, nil)
}

// errNoTerminalMigrate: migrate was not told --yes and has nobody to ask.
var errNoTerminalMigrate = errors.New("no terminal to confirm on; re-run with --yes to migrate, or --dry-run for the plan")

// askOnTerminal asks for confirmation on stderr and reads the answer from the terminal; without
// a terminal it refuses. A signal (ctx done) ends the question at once.
func (o *migrateOptions) askOnTerminal(ctx context.Context) (bool, error) {
	ok, err := askOnTerminal(ctx, o.IOStreams, "Migrate?")
	if errors.Is(err, errNoTerminal) {
		return false, errNoTerminalMigrate
	}
	return ok, err
}
