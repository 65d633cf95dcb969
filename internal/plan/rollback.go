package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// fix --rollback: the StatefulSet documentation's forced rollback. When the update revision
// itself fails at startup (CurrentRevisionFailing), return spec.template to the earlier revision
// whose pods are Ready, then delete the pods still on the failing revision: under OrderedReady
// the controller never replaces a pod that is not Running and Ready, so reverting the template
// alone (what `kubectl rollout undo` does) leaves the rollout stuck exactly as in
// kubernetes#67250.
//
// kubectl's StatefulSetRollbacker (k8s.io/kubectl@v0.35.4 pkg/polymorphichelpers/rollback.go:349-402)
// is not reused, on purpose:
//   - it GETs the StatefulSet and LISTs its ControllerRevisions itself (statefulSetHistory,
//     rollback.go:362), where stsdiag plans from the one snapshot it diagnosed;
//   - it sends the revision's data as a strategic merge patch with no precondition
//     (rollback.go:397): a template changed by someone between plan and patch would be
//     overwritten. stsdiag sends a JSON patch that tests the UID, the generation and the current
//     image of every container first;
//   - "toRevision 0" means the revision numbered just before the newest (findHistory), whatever
//     its pods did; stsdiag returns only to status.currentRevision, and only while pods of it are
//     Ready;
//   - its client dry run decodes the template into this client's Go types (applyRevision,
//     rollback.go:408-416), dropping fields a newer server knows. stsdiag writes the revision's
//     own template JSON.
// The data is the same: a StatefulSet ControllerRevision holds {"spec":{"template":{...,
// "$patch":"replace"}}} (getPatch, pkg/controller/statefulset/stateful_set_utils.go:552-570@v1.37.2),
// so writing its template back is what applying it does.
//
// Once the template equals the revision's again, the controller reuses that ControllerRevision
// as the update revision, incrementing its Revision number (getStatefulSetRevisions,
// stateful_set_control.go:292-305@v1.37.2): status.updateRevision becomes the good revision,
// the failing pods are then off-revision, and a fresh diagnosis proves them StaleRevisionStuck.

// planRollbacks extends the default plan (its actions and the findings it left unrepaired)
// with fix --rollback: for each StatefulSet whose update revision fails at startup
// (CurrentRevisionFailing on pods of status.updateRevision) and whose status.currentRevision is
// an earlier revision with Ready pods, a Rollback to that revision, then a delete of each failing
// pod once the controller has observed the rollback (proven again then). Its findings leave the
// unrepaired list. A StatefulSet with no such revision — broken since it was created, or whose
// earlier revision has no Ready pod left to prove it worked — is never rolled back: its findings
// stay unrepaired, with the reason in their remedy and in details.rollback. StatefulSets the plan
// already patches are left to the patch. It reads the findings' typed fields and the snapshot,
// never details.
func planRollbacks(o objects, actions []model.Action, unrepaired []stuck.Finding) (rollbacks, deletes []model.Action, left []stuck.Finding) {
	patched := map[string]bool{}
	for _, a := range actions {
		if a.Kind() == apiv1.PatchImage || a.Kind() == apiv1.Rollback {
			patched[types.NamespacedName{Namespace: a.Namespace, Name: a.StatefulSet}.String()] = true
		}
	}
	failing := map[string][]stuck.Finding{}
	var order []string
	for _, f := range unrepaired {
		key := types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}.String()
		if f.Code != apiv1.CurrentRevisionFailing || f.Target == nil || patched[key] {
			continue
		}
		if _, ok := failing[key]; !ok {
			order = append(order, key)
		}
		failing[key] = append(failing[key], f)
	}
	if len(order) == 0 {
		return nil, nil, unrepaired
	}
	reasons := map[string]string{}
	repaired := map[string]bool{}
	for _, key := range order {
		rollback, pods, reason := planRollback(o, key, failing[key])
		if reason != "" {
			reasons[key] = reason
			continue
		}
		rollbacks = append(rollbacks, rollback)
		for _, pod := range pods {
			repaired[types.NamespacedName{Namespace: rollback.Namespace, Name: pod}.String()] = true
			deletes = append(deletes, model.Action{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: rollback.Namespace, StatefulSet: rollback.StatefulSet, Pod: pod}, Cause: apiv1.CurrentRevisionFailing, AfterPatch: true})
		}
	}
	for _, f := range unrepaired {
		key := types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}.String()
		switch {
		case f.Code != apiv1.CurrentRevisionFailing:
			left = append(left, f)
		case repaired[types.NamespacedName{Namespace: f.Namespace, Name: f.Pod}.String()]:
		case reasons[key] != "":
			left = append(left, notRolledBack(f, reasons[key]))
		default:
			left = append(left, f)
		}
	}
	return rollbacks, deletes, left
}

// notRolledBack returns a copy of the finding that says why it was not rolled back.
func notRolledBack(f stuck.Finding, reason string) stuck.Finding {
	c := f.DeepCopy()
	c.Details.Rollback = reason
	c.Remedy = "not rolled back: " + reason + "; " + c.Remedy
	return c
}

// planRollback decides one StatefulSet: the Rollback and the pods to delete after it, or why not.
func planRollback(o objects, key string, failing []stuck.Finding) (model.Action, []string, string) {
	set, snap := o.sets[key], o.snap
	switch {
	case set == nil:
		return model.Action{Action: apiv1.Action{}}, nil, "the StatefulSet is not in the snapshot"
	case set.DeletionTimestamp != nil:
		return model.Action{Action: apiv1.Action{}}, nil, "the StatefulSet is being deleted"
	case set.Status.ObservedGeneration < set.Generation || set.Status.UpdateRevision == "":
		return model.Action{Action: apiv1.Action{}}, nil, "the controller has not observed the latest template yet; run again once it has"
	}
	update := set.Status.UpdateRevision
	pods := ownedPods(snap, set)
	var bad []string
	for _, f := range failing {
		if pod := pods[f.Target.Name]; pod != nil && pod.UID == f.Target.UID && controller.PodRevision(pod) == update {
			bad = append(bad, pod.Name)
		}
	}
	if len(bad) == 0 {
		return model.Action{Action: apiv1.Action{}}, nil, fmt.Sprintf("the failing pods do not run the update revision %s (they run the current revision, below the partition): a rollback would not change their template", update)
	}
	a, reason := rollbackToCurrent(set, snap, pods)
	if reason != "" {
		return a, nil, reason
	}
	a.Cause = apiv1.CurrentRevisionFailing
	sort.Strings(bad)
	return a, bad, ""
}

// AnalysisRollback plans canary's rollback of a StatefulSet whose canary analysis failed: its
// pods may all be Ready, so no pod is deleted — the controller replaces the canary pods, Ready on
// a revision no longer the update one, as any rolling update does (from the highest ordinal down
// to the partition, a pod not on the update revision and not terminating is deleted:
// updateStatefulSet, stateful_set_control.go:744-760@v1.37.2) — but the template returns to
// status.currentRevision under the same conditions and guards as fix --rollback's (planRollback):
// the controller observed the spec, an earlier revision exists, and pods of it are Ready.
func AnalysisRollback(snap *stuck.Objects, set *appsv1.StatefulSet) (model.Action, string) {
	switch {
	case set.DeletionTimestamp != nil:
		return model.Action{Action: apiv1.Action{}}, "the StatefulSet is being deleted"
	case set.Status.ObservedGeneration < set.Generation || set.Status.UpdateRevision == "":
		return model.Action{Action: apiv1.Action{}}, "the controller has not observed the latest template yet"
	}
	return rollbackToCurrent(set, snap, ownedPods(snap, set))
}

// ownedPods are the snapshot's pods set controls, by name.
func ownedPods(snap *stuck.Objects, set *appsv1.StatefulSet) map[string]*corev1.Pod {
	pods := map[string]*corev1.Pod{}
	for i := range snap.Pods {
		pod := &snap.Pods[i]
		if pod.Namespace == set.Namespace && metav1.IsControlledBy(pod, set) {
			pods[pod.Name] = pod
		}
	}
	return pods
}

// rollbackToCurrent is the Rollback of set to status.currentRevision, or why there is none.
func rollbackToCurrent(set *appsv1.StatefulSet, snap *stuck.Objects, pods map[string]*corev1.Pod) (model.Action, string) {
	update, current := set.Status.UpdateRevision, set.Status.CurrentRevision
	switch {
	case current == "" || current == update:
		// At creation the controller makes the first revision the current one without any pod
		// being Ready (stateful_set_control.go:326-329@v1.37.2); afterwards only a completed
		// rollout, every replica updated and Ready, promotes one (completeUpdate,
		// stateful_set_utils.go:644-650@v1.37.2).
		return model.Action{Action: apiv1.Action{}}, fmt.Sprintf("no earlier revision was Ready: %s is both the current and the update revision (the StatefulSet has been failing since it was created, or since its last rollout completed); fix the template", update)
	}
	var rev *appsv1.ControllerRevision
	for i := range snap.Revisions {
		r := &snap.Revisions[i]
		if r.Namespace == set.Namespace && r.Name == current && metav1.IsControlledBy(r, set) {
			rev = r
		}
	}
	if rev == nil {
		return model.Action{Action: apiv1.Action{}}, fmt.Sprintf("the ControllerRevision %s of the current revision no longer exists", current)
	}
	ready := 0
	for _, pod := range pods {
		if controller.PodRevision(pod) == current && pod.DeletionTimestamp == nil && controller.RunningAndReady(pod) {
			ready++
		}
	}
	if ready == 0 {
		return model.Action{Action: apiv1.Action{}}, fmt.Sprintf("no pod of the earlier revision %s is Ready, so nothing proves it worked; stsdiag never rolls back past a revision that was not Ready", current)
	}
	raw, tmpl, err := revisionTemplate(rev)
	if err != nil {
		return model.Action{Action: apiv1.Action{}}, fmt.Sprintf("the ControllerRevision %s cannot be read: %v", current, err)
	}
	a := model.Action{Action: apiv1.Action{Action: apiv1.Rollback, Namespace: set.Namespace, StatefulSet: set.Name, UID: string(set.UID),
		Rollback: &apiv1.RollbackTarget{Revision: current, FromRevision: update, Images: imageChanges(&set.Spec.Template, tmpl)}},
		Guard: &model.RollbackPlan{Template: raw, Generation: set.Generation, Tests: imageFields(&set.Spec.Template)}}
	return a, ""
}

// revisionTemplate is the revision's template (controller.RevisionTemplate), which a rollback
// writes only if it has containers.
func revisionTemplate(rev *appsv1.ControllerRevision) (json.RawMessage, *corev1.PodTemplateSpec, error) {
	raw, tmpl, err := controller.RevisionTemplate(rev)
	if err == nil && len(tmpl.Spec.Containers) == 0 {
		err = fmt.Errorf("its template has no containers")
	}
	return raw, tmpl, err
}

// imageFields lists the image field of every container of a template, init containers first.
func imageFields(t *corev1.PodTemplateSpec) []stuck.ImagePatch {
	var out []stuck.ImagePatch
	for i, c := range t.Spec.InitContainers {
		out = append(out, stuck.ImagePatch{Path: fmt.Sprintf("/spec/template/spec/initContainers/%d/image", i), From: c.Image})
	}
	for i, c := range t.Spec.Containers {
		out = append(out, stuck.ImagePatch{Path: fmt.Sprintf("/spec/template/spec/containers/%d/image", i), From: c.Image})
	}
	return out
}

// imageChanges lists the containers whose image differs between two templates, by name.
func imageChanges(from, to *corev1.PodTemplateSpec) []apiv1.ImageChange {
	images := func(t *corev1.PodTemplateSpec) (map[string]string, []string) {
		m := map[string]string{}
		var names []string
		for _, cs := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
			for _, c := range cs {
				m[c.Name] = c.Image
				names = append(names, c.Name)
			}
		}
		return m, names
	}
	a, names := images(from)
	b, more := images(to)
	var out []apiv1.ImageChange
	seen := map[string]bool{}
	for _, name := range append(names, more...) {
		if seen[name] {
			continue
		}
		seen[name] = true
		if a[name] != b[name] {
			out = append(out, apiv1.ImageChange{Container: name, From: a[name], To: b[name]})
		}
	}
	return out
}

// CanaryRollback are the actions of a canary's rollback: fix --rollback's plan (the same planner
// and guards) for the StatefulSet, keeping only its Rollback and the deletes, after it, of its
// canary pods (those at or above the partition, canary/engine's CanaryPods). When the plan has no rollback, actions is nil and why says
// what the planner said of it, if anything.
func CanaryRollback(rep *model.Report, snap *stuck.Objects, set *appsv1.StatefulSet, canary []string) (actions []model.Action, why model.Unrollable) {
	planned := Planner{Policy: Policy{Rollback: true}}.Plan(rep, snap)
	for _, a := range planned.For(set.Namespace, set.Name) {
		switch {
		case a.Kind() == apiv1.Rollback:
			actions = append(actions, a)
		case a.Kind() == apiv1.DeletePod && a.AfterPatch && slices.Contains(canary, a.Pod):
			actions = append(actions, a)
		}
	}
	if len(actions) > 0 && actions[0].Kind() == apiv1.Rollback {
		return actions, model.Unrollable{}
	}
	why = model.Unrollable{Namespace: set.Namespace, Name: set.Name}
	for _, f := range planned.Unrepaired {
		if f.Details.Rollback != "" && f.Namespace == set.Namespace && f.StatefulSet == set.Name {
			why.Why = f.Details.Rollback
			break
		}
	}
	return nil, why
}
