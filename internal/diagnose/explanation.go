package diagnose

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// Explanation is the controller's view of one StatefulSet: the rules, the revisions and what
// changed between them, and per ordinal its state, the controller's next step and the finding
// that says why it cannot take it. It comes from the same diagnosis as check's report, whose
// findings about the set it carries, so the two never disagree.
// It is nil when the snapshot has no such StatefulSet.
func Explanation(snap *stuck.Objects, namespace, name string, opts stuck.Options) *apiv1.Explanation {
	rep, views := report(snap, opts)
	for i := range snap.StatefulSets {
		if s := &snap.StatefulSets[i]; s.Namespace == namespace && s.Name == name {
			return explanation(snap, rep, views, s)
		}
	}
	return nil
}

// ReportWithExplanations is Report with the explanation of every StatefulSet of the snapshot,
// keyed by stuck.Key(namespace, name): one diagnosis, so the report and the explanations
// never disagree (check -o html draws each set's ordinals from them).
func ReportWithExplanations(snap *stuck.Objects, opts stuck.Options) (*model.Report, map[string]*apiv1.Explanation) {
	rep, views := report(snap, opts)
	out := make(map[string]*apiv1.Explanation, len(snap.StatefulSets))
	for i := range snap.StatefulSets {
		s := &snap.StatefulSets[i]
		out[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}.String()] = explanation(snap, rep, views, s)
	}
	return rep, out
}

func explanation(snap *stuck.Objects, rep *model.Report, views views, set *appsv1.StatefulSet) *apiv1.Explanation {
	namespace, name := set.Namespace, set.Name
	e := &apiv1.Explanation{Namespace: namespace, StatefulSet: name, Server: rep.Server,
		PodManagementPolicy: string(appsv1.OrderedReadyPodManagement), UpdateStrategy: string(appsv1.RollingUpdateStatefulSetStrategyType),
		MinReadySeconds: set.Spec.MinReadySeconds, CurrentRevision: set.Status.CurrentRevision, UpdateRevision: set.Status.UpdateRevision,
		Ordinals: []apiv1.OrdinalStep{}, Findings: []apiv1.Finding{}}
	e.SetGroupVersionKind(apiv1.GroupVersion.WithKind("Explanation"))
	if p := set.Spec.PodManagementPolicy; p != "" {
		e.PodManagementPolicy = string(p)
	}
	if t := set.Spec.UpdateStrategy.Type; t != "" {
		e.UpdateStrategy = string(t)
	}
	for _, s := range rep.StatefulSets {
		if s.Namespace == namespace && s.Name == name {
			e.Status, e.Replicas = s.Status, s.Replicas
		}
	}
	why := map[string]string{}
	for _, f := range rep.Findings {
		if f.Namespace != namespace || f.StatefulSet != name {
			continue
		}
		e.Findings = append(e.Findings, f.Finding.DeepCopy())
		if f.Severity == apiv1.SeverityError && f.Pod != "" && why[f.Pod] == "" {
			why[f.Pod] = string(f.Code) + ": " + f.Short
		}
	}
	if v := views.sets[types.NamespacedName{Namespace: namespace, Name: name}]; v != nil {
		e.Partition = int32(v.Partition)
		// The revision new pods get, also when the controller has not observed the spec yet.
		e.UpdateRevision = v.Update
		for _, o := range v.Ordinals {
			e.Ordinals = append(e.Ordinals, step(o, why[o.Name], views.predictions[types.NamespacedName{Namespace: namespace, Name: o.Name}]))
		}
		for i := len(v.Condemned) - 1; i >= 0; i-- {
			c := v.Condemned[i]
			e.Ordinals = append(e.Ordinals, step(c, why[c.Name], views.predictions[types.NamespacedName{Namespace: namespace, Name: c.Name}]))
		}
	}
	e.TemplateChanges = templateChanges(snap, set, e.CurrentRevision, e.UpdateRevision)
	return e
}

func step(o controller.Ordinal, why string, expected facts.Prediction) apiv1.OrdinalStep {
	s := apiv1.OrdinalStep{Ordinal: int32(o.Ordinal), Pod: o.Name, State: State(o.Pod), Revision: o.Revision,
		TargetRevision: o.Target, Next: string(o.Next), Holds: o.Holds, Why: why}
	if !expected.Deadline.IsZero() {
		by := metav1.NewTime(expected.Deadline)
		s.Expected, s.ExpectedBy = string(expected.Expected), &by
	}
	if !o.Since.IsZero() && o.Holds {
		since := metav1.NewTime(o.Since)
		s.Since = &since
	}
	return s
}

// State names a pod's state as the controller distinguishes it.
func State(pod *corev1.Pod) string {
	switch {
	case pod == nil:
		return "Missing"
	case pod.DeletionTimestamp != nil:
		return "Terminating"
	case pod.Status.Phase == corev1.PodRunning && controller.RunningAndReady(pod):
		return "Ready"
	case pod.Status.Phase == "":
		return "Pending"
	}
	return string(pod.Status.Phase)
}

// templateChanges lists what the update revision changes in the template, when both
// revisions can be read.
func templateChanges(snap *stuck.Objects, set *appsv1.StatefulSet, current, update string) []string {
	if current == "" || update == "" || current == update {
		return nil
	}
	var from, to *corev1.PodTemplateSpec
	for _, rev := range controller.ByController(snap.Pods, snap.Revisions).Revisions[set.UID] {
		if _, tmpl, err := controller.RevisionTemplate(rev); err == nil {
			switch rev.Name {
			case current:
				from = tmpl
			case update:
				to = tmpl
			}
		}
	}
	if from == nil || to == nil {
		return nil
	}
	return controller.TemplateDiff(from, to)
}
