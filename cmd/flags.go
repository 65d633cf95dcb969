package cmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/connect"
	"github.com/stsdiag/stsdiag/internal/wait"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// scopeFlags select the StatefulSets a command works on: NAME arguments, -n (a kubeconfig
// flag), -A, -l, --openshift, and on the commands that take a fleet --contexts/--all-contexts
// or --cluster-profiles/--all-cluster-profiles. Every command registers them with the same help
// and validates them in ToScope, so the same mistake gets the same message everywhere.
type scopeFlags struct {
	config        *genericclioptions.ConfigFlags
	AllNamespaces bool
	Selector      string
	OpenShift     string
	Contexts      []string
	AllContexts   bool
	// ClusterProfiles is the hub namespace whose ClusterProfiles are the fleet;
	// AllClusterProfiles takes every namespace's; ProviderFile is how to reach their clusters.
	ClusterProfiles    string
	AllClusterProfiles bool
	ProviderFile       string
	// ClusterConcurrency bounds how many members are reached (and checked) at once.
	ClusterConcurrency int
}

func newScopeFlags(config *genericclioptions.ConfigFlags) *scopeFlags {
	return &scopeFlags{config: config, OpenShift: string(openshift.ModeAuto), ClusterConcurrency: defaultClusterConcurrency}
}

// AddFlags registers -A, -l and --openshift.
func (s *scopeFlags) AddFlags(c *cobra.Command) {
	f := c.Flags()
	f.BoolVarP(&s.AllNamespaces, "all-namespaces", "A", false, "StatefulSets in all namespaces (not with NAME arguments)")
	f.StringVarP(&s.Selector, "selector", "l", "", "Label selector for the StatefulSets, e.g. app=web")
	s.AddOpenShiftFlag(c)
}

// AddOpenShiftFlag registers --openshift alone (explain works on one named StatefulSet).
func (s *scopeFlags) AddOpenShiftFlag(c *cobra.Command) {
	c.Flags().StringVar(&s.OpenShift, "openshift", s.OpenShift, "Use the OpenShift image API: auto (if served), always or never")
}

// AddFleetFlags registers --contexts, --all-contexts and the ClusterProfile flags.
func (s *scopeFlags) AddFleetFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringSliceVar(&s.Contexts, "contexts", nil, "Work in these kubeconfig contexts concurrently, with one result (each StatefulSet and finding names its context)")
	f.BoolVar(&s.AllContexts, "all-contexts", false, "Work in every context of the kubeconfig, as --contexts")
	f.StringVar(&s.ClusterProfiles, "cluster-profiles", "", "Work in the clusters of the ClusterProfiles (multicluster.x-k8s.io) in this namespace of the current cluster, the hub, concurrently, with one result (each StatefulSet and finding names its profile NAMESPACE/NAME); needs --clusterprofile-provider-file")
	f.BoolVar(&s.AllClusterProfiles, "all-cluster-profiles", false, "As --cluster-profiles, with the ClusterProfiles of every namespace of the hub")
	f.StringVar(&s.ProviderFile, "clusterprofile-provider-file", "", "The access providers' exec plugins, as sigs.k8s.io/cluster-inventory-api defines the file: JSON {\"providers\": [{\"name\", \"execConfig\"}]} (docs/fleet.md)")
	f.IntVar(&s.ClusterConcurrency, "cluster-concurrency", defaultClusterConcurrency, "How many clusters of a fleet are reached (exec plugins run, first requests made) and checked at once")
}

// fleetRequested reports whether a fleet flag was given (fix refuses them all).
func (s *scopeFlags) fleetRequested() bool {
	return len(s.Contexts) > 0 || s.AllContexts || s.ClusterProfiles != "" || s.AllClusterProfiles
}

// scope is what a command works on once its scope flags are parsed.
type scope struct {
	// Scope holds the names, selector and OpenShift mode, and the namespace when there is one
	// cluster (a fleet resolves each context's namespace: -n, else the context's own).
	read.Scope
	allNamespaces bool
	// contexts is the fleet; empty for the current context alone.
	contexts []string
	// profiles is the fleet of ClusterProfiles on the hub (the current context), nil for none.
	profiles *connect.ProfileFleet
	// concurrency bounds how many members are reached and checked at once.
	concurrency int
}

// fleet reports whether the scope spans several clusters.
func (s scope) fleet() bool { return len(s.contexts) > 0 || s.profiles != nil }

// ToScope checks the scope flags with the NAME arguments, parses them and resolves the
// namespace or the fleet's contexts from the kubeconfig.
func (s *scopeFlags) ToScope(names []string) (scope, error) {
	if err := s.check(names); err != nil {
		return scope{}, err
	}
	out := scope{Scope: read.Scope{Names: names}, allNamespaces: s.AllNamespaces, contexts: s.Contexts, concurrency: s.ClusterConcurrency}
	var err error
	if out.OpenShift, err = openshift.ParseMode(s.OpenShift); err != nil {
		return scope{}, fmt.Errorf("invalid --openshift %q: want auto, always or never", s.OpenShift)
	}
	if out.Selector, err = labels.Parse(s.Selector); err != nil {
		return scope{}, fmt.Errorf("invalid --selector %q: %w", s.Selector, err)
	}
	if s.AllContexts {
		if out.contexts, err = connect.AllContexts(s.config); err != nil {
			return scope{}, err
		}
	}
	if s.ClusterProfiles != "" || s.AllClusterProfiles {
		if out.profiles, err = s.toProfileFleet(); err != nil {
			return scope{}, err
		}
		return out, nil
	}
	if !out.fleet() {
		out.Namespace, err = connect.Namespace(s.config, s.AllNamespaces)
	}
	return out, err
}

// check rejects combinations of scope flags that make no sense on any command.
func (s *scopeFlags) check(names []string) error {
	switch {
	case s.AllNamespaces && len(names) > 0:
		return errors.New("StatefulSet names cannot be combined with --all-namespaces: names are looked up in one namespace")
	case len(s.Contexts) > 0 && s.AllContexts:
		return errors.New("--contexts cannot be combined with --all-contexts")
	case (len(s.Contexts) > 0 || s.AllContexts) && s.config.Context != nil && *s.config.Context != "":
		return errors.New("--context cannot be combined with --contexts or --all-contexts")
	case s.ClusterProfiles != "" && s.AllClusterProfiles:
		return errors.New("--cluster-profiles cannot be combined with --all-cluster-profiles")
	case (s.ClusterProfiles != "" || s.AllClusterProfiles) && (len(s.Contexts) > 0 || s.AllContexts):
		return errors.New("--cluster-profiles and --all-cluster-profiles cannot be combined with --contexts or --all-contexts: the fleet is the hub's ClusterProfiles or the kubeconfig's contexts")
	case s.ProviderFile != "" && s.ClusterProfiles == "" && !s.AllClusterProfiles:
		return errors.New("--clusterprofile-provider-file goes with --cluster-profiles NAMESPACE or --all-cluster-profiles")
	case s.ClusterConcurrency < 1:
		return errors.New("--cluster-concurrency must be at least 1")
	}
	return nil
}

// holdFlags is how long a finding must hold before it counts (wait: stuck; watch: repaired and
// Stalled). One name, --hold, on every command; each command keeps its former name as a
// deprecated alias bound to the same value.
type holdFlags struct {
	Hold time.Duration
}

// AddFlags registers --hold with the command's default and its deprecated alias.
func (h *holdFlags) AddFlags(c *cobra.Command, def time.Duration, alias, usage string) {
	f := c.Flags()
	f.DurationVar(&h.Hold, "hold", def, usage)
	f.DurationVar(&h.Hold, alias, def, usage)
	_ = f.MarkDeprecated(alias, "use --hold instead")
}

// ToDuration checks the hold time.
func (h *holdFlags) ToDuration() (time.Duration, error) {
	if h.Hold < 0 {
		return 0, errors.New("--hold must not be negative")
	}
	return h.Hold, nil
}

// settleFlag is how long every replica must have been Ready, its containers running and not
// restarted, before a rollout the controller reports complete counts as Complete (wait, fix
// --wait, canary's steps, watch's canary steps): a crash-looping pod without a readiness probe
// is Ready for a second each run (kubernetes#133066).
type settleFlag struct {
	Settle time.Duration
}

func (s *settleFlag) AddFlags(c *cobra.Command) {
	if s.Settle == 0 {
		s.Settle = wait.DefaultSettle
	}
	c.Flags().DurationVar(&s.Settle, "settle", s.Settle,
		"How long every replica must have been Ready with no container restart before the rollout counts as complete (at least minReadySeconds and each liveness probe's failure window)")
}

// ToDuration checks the settle time.
func (s *settleFlag) ToDuration() (time.Duration, error) {
	if s.Settle < 0 {
		return 0, errors.New("--settle must not be negative")
	}
	return s.Settle, nil
}

// diagnosisFlags are the thresholds and controller assumptions of the diagnosis, the same on
// every command that diagnoses.
type diagnosisFlags struct {
	TerminatingAfter time.Duration
	NotReadyAfter    time.Duration
	FeatureGates     string
}

func newDiagnosisFlags() *diagnosisFlags {
	def := stuck.DefaultOptions()
	return &diagnosisFlags{TerminatingAfter: def.TerminatingAfter, NotReadyAfter: def.NotReadyAfter}
}

func (d *diagnosisFlags) AddFlags(c *cobra.Command) {
	f := c.Flags()
	f.DurationVar(&d.TerminatingAfter, "terminating-threshold", d.TerminatingAfter,
		"Report a StatefulSet, or a pod past its grace period, still terminating after this long (an owner recreated meanwhile: at once)")
	f.DurationVar(&d.NotReadyAfter, "not-ready-threshold", d.NotReadyAfter,
		"Report a pod Running but not Ready (failing readiness probe) for longer than this as stuck at startup (0: never)")
	f.StringVar(&d.FeatureGates, "feature-gates", "",
		"Feature gates of the cluster's kube-controller-manager when they differ from its release's defaults, e.g. MaxUnavailableStatefulSet=false")
}

// ToOptions checks and parses the flags into the diagnosis's options.
func (d *diagnosisFlags) ToOptions() (stuck.Options, error) {
	if d.TerminatingAfter < 0 || d.NotReadyAfter < 0 {
		return stuck.Options{}, errors.New("--terminating-threshold and --not-ready-threshold must not be negative")
	}
	gates, err := stuck.ParseFeatureGates(d.FeatureGates)
	if err != nil {
		return stuck.Options{}, err
	}
	opts := stuck.DefaultOptions()
	opts.TerminatingAfter, opts.NotReadyAfter, opts.FeatureGates = d.TerminatingAfter, d.NotReadyAfter, gates
	return opts, nil
}

// addConfirmFlag registers --confirm-with-admission.
func addConfirmFlag(c *cobra.Command, v *bool) {
	c.Flags().BoolVar(v, "confirm-with-admission", false, "On OpenShift, ask the API server's admission what it writes for each predicted image rewrite "+
		"(one server-side dry-run create of a probe pod per namespace, never persisted; needs create pods: deploy/confirm-clusterrole.yaml)")
}

// disruptionUsage is the help of --disruption on fix, wait --fix and watch --fix.
const disruptionUsage = "How a pod proven stuck is removed: delete (DELETE, PodDisruptionBudgets not consulted) or evict (the Eviction API: removed only where its PodDisruptionBudget allows, a refusal is reported and nothing deleted). Force-deletes of --force-lost-node are always deletes"

// parseDisruption checks --disruption.
func parseDisruption(value string) (apiv1.DisruptionMode, error) {
	switch mode := apiv1.DisruptionMode(value); mode {
	case apiv1.DisruptionDelete, apiv1.DisruptionEvict:
		return mode, nil
	}
	return "", fmt.Errorf("invalid --disruption %q: want delete or evict", value)
}
