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
	"github.com/stsdiag/stsdiag/stuck/facts"
)

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
		k := key(pod.Namespace, parent)
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], pod)
	}
	slices.Sort(keys)
	for _, k := range keys {
		pods := groups[k]
		namespace, parent := pods[0].Namespace, parentName(pods[0].Name)
		fx := facts.WithoutSet{State: facts.WithoutSetGone, SavedCopy: namespace + "/" + apiv1.SavedCopyName(parent)}
		for _, pod := range pods {
			fx.Pods = append(fx.Pods, pod.Name)
		}
		slices.Sort(fx.Pods)
		f := Finding{Finding: apiv1.Finding{Code: apiv1.PodsWithoutStatefulSet, Severity: apiv1.SeverityError, Namespace: namespace, StatefulSet: parent,
			Details: apiv1.FindingDetails{Pods: fx.Pods, SavedCopy: fx.SavedCopy}}}
		switch set := d.ix.sets[k]; {
		case set == nil:
		case set.DeletionTimestamp != nil:
			fx.State, fx.HeldBy = facts.WithoutSetDeleting, set.Finalizers
			fx.DeletingFor = d.ix.now.Sub(set.DeletionTimestamp.Time).Round(time.Second)
			f.Details.Finalizers = set.Finalizers
		default:
			age := d.ix.now.Sub(set.CreationTimestamp.Time)
			if age < d.ix.settle {
				d.ix.wake(set.CreationTimestamp.Add(d.ix.settle))
				continue
			}
			fx.State, fx.For, fx.Selected = facts.WithoutSetNotAdopted, age.Round(time.Second), selects(set, pods[0])
		}
		f.Reason = string(fx.State)
		f.Facts = fx
		d.add(f)
	}
}

// selects reports whether the StatefulSet's selector matches the pod's labels.
func selects(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	return err == nil && !selector.Empty() && selector.Matches(labels.Set(pod.Labels))
}
