// Package stuck tells, from the StatefulSet controller's own rules, which StatefulSet rollouts
// will never finish by themselves, why, and what repairs them — the rule engine behind
// `kubectl stsdiag check`, for admission webhooks, linters, health checks and operators.
//
// It is pure: give it the objects of a namespace (or a cluster) read at one moment, and it
// returns the findings of the stsdiag/v1 contract (codes, reasons, typed details, message and
// remedy; see github.com/stsdiag/stsdiag/api/v1) and each StatefulSet's status. It calls no API.
// The rules are those of the API server's release (RulesFor): what a controller of Kubernetes
// v1.25 to v1.37 does next for every ordinal, with the feature gates that change it.
//
//	res := stuck.Diagnose(stuck.Objects{Now: time.Now(), ServerVersion: "v1.37.2",
//		StatefulSets: sets, Pods: pods, Revisions: revisions, Events: events}, stuck.DefaultOptions())
//	for _, f := range res.Findings {
//		fmt.Println(f.Code, f.Pod, f.Remedy)
//	}
package stuck

import (
	"fmt"
	"io"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	rules "github.com/stsdiag/stsdiag/internal/stuck"
)

// Objects are what a diagnosis reads, all read at Now. StatefulSets are diagnosed with the pods,
// revisions and claims they own; Warning Events say why a pod cannot be created or started.
// StorageClasses, Nodes and Services are optional: nil means they were not read (a claim's
// class, a lost node, the governing Service are then not judged), empty means there are none.
type Objects struct {
	// Now is the moment the objects were read: time-based rules (settle times, thresholds)
	// count from it.
	Now time.Time
	// ServerVersion is the API server's gitVersion ("v1.37.2"); "" applies the newest rules.
	ServerVersion  string
	StatefulSets   []appsv1.StatefulSet
	Pods           []corev1.Pod
	Revisions      []appsv1.ControllerRevision
	Claims         []corev1.PersistentVolumeClaim
	Events         []corev1.Event
	StorageClasses []storagev1.StorageClass
	Nodes          []corev1.Node
	Services       []corev1.Service
}

// Options tune the diagnosis; DefaultOptions are `check`'s.
type Options struct {
	// TerminatingAfter is how long a StatefulSet or a pod past its grace period may stay
	// terminating before it is reported.
	TerminatingAfter time.Duration
	// NotReadyAfter is how long a Running pod may stay not Ready before it counts as stuck at
	// startup; 0 disables the rule.
	NotReadyAfter time.Duration
	// FeatureGates override the gate defaults of the server's release.
	FeatureGates map[string]bool
}

// DefaultOptions are the options of `stsdiag check`.
func DefaultOptions() Options {
	o := rules.DefaultOptions()
	return Options{TerminatingAfter: o.TerminatingAfter, NotReadyAfter: o.NotReadyAfter}
}

// Rules are the controller rules a diagnosis applied: the release and the feature gates assumed.
type Rules struct {
	Version      string
	FeatureGates map[string]bool
}

// RulesFor returns the rules of a release ("v1.35.3", "1.35", or "" for the newest) with that
// release's gate defaults, overridden by gates; an error for a version it cannot read.
func RulesFor(serverVersion string, gates map[string]bool) (Rules, error) {
	r, err := rules.RulesFor(serverVersion, gates)
	if err != nil {
		return Rules{}, err
	}
	return Rules{Version: r.Version, FeatureGates: maps.Clone(r.Gates)}, nil
}

// Result is a diagnosis: every StatefulSet's summary (status Complete, Progressing, Stuck or
// Terminating), the findings, the rules applied, and when a time-based rule may next change the
// verdict even if no object changes (zero: none pending).
type Result struct {
	StatefulSets []apiv1.StatefulSetSummary
	Findings     []apiv1.Finding
	Rules        Rules
	RecheckAt    time.Time
}

// Stuck reports whether any finding is an error: a rollout that will not finish by itself.
func (r Result) Stuck() bool {
	for _, f := range r.Findings {
		if f.Severity == apiv1.SeverityError {
			return true
		}
	}
	return false
}

// Diagnose examines every StatefulSet of objs with the controller rules of objs.ServerVersion.
// Remedies name kubectl.
func Diagnose(objs Objects, opts Options) Result {
	snap := objs.snapshot()
	res := rules.Diagnose(snap, rules.Options{TerminatingAfter: opts.TerminatingAfter, NotReadyAfter: opts.NotReadyAfter,
		Settle: rules.DefaultOptions().Settle, FeatureGates: opts.FeatureGates})
	explain.Findings(res.Findings, explain.ForCluster(false))
	rep := model.NewReport(false, model.Summaries(res.StatefulSets, res.Findings), res.Findings)
	return Result{StatefulSets: rep.StatefulSets, Findings: model.PublicFindings(rep.Findings),
		Rules: Rules{Version: res.Rules.Version, FeatureGates: maps.Clone(res.Rules.Gates)}, RecheckAt: res.RecheckAt}
}

// Load reads Objects from a multi-document YAML stream of Kubernetes objects (the scenarios of
// testdata/stuck): kinds it does not read are skipped.
func Load(r io.Reader, now time.Time) (Objects, error) {
	s, err := snapshot.Load(r, now)
	if err != nil {
		return Objects{}, fmt.Errorf("loading objects: %w", err)
	}
	objs := Objects{Now: now, ServerVersion: s.ServerVersion, StatefulSets: s.StatefulSets, Pods: s.Pods, Revisions: s.Revisions,
		Claims: s.PVCs, Events: s.Events}
	if s.StorageClassesListed {
		objs.StorageClasses = nonNil(s.StorageClasses)
	}
	if s.NodesListed {
		objs.Nodes = nonNil(s.Nodes)
	}
	if s.ServicesListed {
		objs.Services = nonNil(s.Services)
	}
	return objs, nil
}

func (o Objects) snapshot() *snapshot.Snapshot {
	s := &snapshot.Snapshot{Now: o.Now, ServerVersion: o.ServerVersion, StatefulSets: o.StatefulSets, Pods: o.Pods, Revisions: o.Revisions,
		PVCs: o.Claims, StorageClasses: o.StorageClasses, StorageClassesListed: o.StorageClasses != nil,
		Nodes: o.Nodes, NodesListed: o.Nodes != nil, Services: o.Services, ServicesListed: o.Services != nil}
	for _, e := range o.Events {
		if e.Type == corev1.EventTypeWarning {
			s.Events = append(s.Events, e)
		}
	}
	return s
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
