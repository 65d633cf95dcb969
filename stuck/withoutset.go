package stuck

import (
	"regexp"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// WithoutSet are the facts of PodsWithoutStatefulSet: pods the StatefulSet controller created,
// with no controller any more, whose StatefulSet is gone, being deleted, or has not adopted them.
type WithoutSet struct {
	// State is what became of the StatefulSet of the pods' name: WithoutSetGone, WithoutSetDeleting
	// or WithoutSetNotAdopted.
	State WithoutSetState
	// Pods are the pods without a controller, by name.
	Pods []string
	// SavedCopy is namespace/name of the ConfigMap `stsdiag migrate` keeps the original in.
	SavedCopy string
	// HeldBy are the finalizers of the StatefulSet being deleted; DeletingFor how long it has been.
	HeldBy      []string
	DeletingFor time.Duration
	// Selected: the live StatefulSet's selector matches the pods (WithoutSetNotAdopted); when it
	// does not, the controller never adopts them and cannot create pods of their names.
	Selected bool
	// For is how long the live StatefulSet has existed without adopting them.
	For time.Duration
}

// WithoutSetState is what became of the StatefulSet of pods without a controller.
type WithoutSetState string

// States of PodsWithoutStatefulSet; each is the finding's reason.
const (
	// WithoutSetGone: no StatefulSet of that name exists (deleted with --cascade=orphan).
	WithoutSetGone WithoutSetState = "StatefulSetGone"
	// WithoutSetDeleting: it is being deleted; its finalizers hold it.
	WithoutSetDeleting WithoutSetState = "StatefulSetDeleting"
	// WithoutSetNotAdopted: a live StatefulSet of that name has not adopted them within the
	// settle time (the controller adopts an orphan its selector matches on its next sync).
	WithoutSetNotAdopted WithoutSetState = "NotAdopted"
)

// Code is the finding code the facts explain.
func (WithoutSet) Code() apiv1.Code { return apiv1.PodsWithoutStatefulSet }

// statefulPodName is the StatefulSet controller's pod name pattern: the parent's name, a dash and
// the ordinal (k8s.io/kubernetes pkg/controller/statefulset/stateful_set_utils.go:73, read by
// getParentNameAndOrdinal :78-90@v1.37.2).
var statefulPodName = regexp.MustCompile("(.*)-([0-9]+)$")

// parentName is the name of the StatefulSet a pod of the controller's naming belongs to, "" for
// another name.
func parentName(pod string) string {
	m := statefulPodName.FindStringSubmatch(pod)
	if m == nil {
		return ""
	}
	if _, err := strconv.ParseInt(m[2], 10, 32); err != nil {
		return ""
	}
	return m[1]
}

// withoutSet reports, per StatefulSet name, the pods the controller made (label
// statefulset.kubernetes.io/pod-name, which it sets on every pod it creates: stateful_set_utils.go:446-462
// initIdentity@v1.37.2) that have no controller — what `kubectl delete sts --cascade=orphan`
// leaves: the garbage collector removes the pods' owner references before the object goes
// (pkg/controller/garbagecollector/garbagecollector.go:683-700, 749-770@v1.37.2) — and whose
// StatefulSet is gone, being deleted, or live for longer than the settle time without adopting
// them (a live one adopts an orphan its selector matches on its next sync:
// pkg/controller/controller_ref_manager.go:101-125, ClaimPods :183@v1.37.2). A pod being deleted
// is not counted: the controller never adopts it (controller_ref_manager.go:106-109).
func (d *diagnosis) withoutSet(s *Objects) {
	groups := map[string][]*corev1.Pod{}
	var keys []string
	for i := range s.Pods {
		pod := &s.Pods[i]
		if pod.Labels[appsv1.StatefulSetPodNameLabel] != pod.Name || pod.DeletionTimestamp != nil || metav1.GetControllerOfNoCopy(pod) != nil {
			continue
		}
		parent := parentName(pod.Name)
		if parent == "" || !s.InScope(pod.Namespace, parent) {
			continue
		}
		key := Key(pod.Namespace, parent)
		if groups[key] == nil {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], pod)
	}
	slices.Sort(keys)
	for _, key := range keys {
		pods := groups[key]
		namespace, parent := pods[0].Namespace, parentName(pods[0].Name)
		facts := WithoutSet{State: WithoutSetGone, SavedCopy: namespace + "/" + apiv1.SavedCopyName(parent)}
		for _, pod := range pods {
			facts.Pods = append(facts.Pods, pod.Name)
		}
		slices.Sort(facts.Pods)
		f := Finding{Finding: apiv1.Finding{Code: apiv1.PodsWithoutStatefulSet, Severity: apiv1.SeverityError, Namespace: namespace, StatefulSet: parent,
			Details: apiv1.FindingDetails{Pods: facts.Pods, SavedCopy: facts.SavedCopy}}}
		switch set := d.ix.sets[key]; {
		case set == nil:
		case set.DeletionTimestamp != nil:
			facts.State, facts.HeldBy = WithoutSetDeleting, set.Finalizers
			facts.DeletingFor = d.ix.now.Sub(set.DeletionTimestamp.Time).Round(time.Second)
			f.Details.Finalizers = set.Finalizers
		default:
			age := d.ix.now.Sub(set.CreationTimestamp.Time)
			if age < d.ix.settle {
				d.ix.wake(set.CreationTimestamp.Add(d.ix.settle))
				continue
			}
			facts.State, facts.For, facts.Selected = WithoutSetNotAdopted, age.Round(time.Second), selects(set, pods[0])
		}
		f.Reason = string(facts.State)
		f.Facts = facts
		d.add(f)
	}
}

// selects reports whether the StatefulSet's selector matches the pod's labels.
func selects(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	return err == nil && !selector.Empty() && selector.Matches(labels.Set(pod.Labels))
}
