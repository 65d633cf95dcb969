package plan

import (
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck"
)

// planImagesAndStale plans the default repairs: image patches for UnresolvedImageReference and
// ImageTriggerStale, then deletes of StaleRevisionStuck pods, and of the pods the patches leave
// on an old revision. Error findings without a safe repair are returned as unrepaired. It reads
// only the findings' typed hand-offs (Target, Patch, FailingPods), never their details.
//
// A patch is planned only to a valid image reference that differs from the image diagnosed, and
// once per image field. The resolver sets Patch.To to exactly what OpenShift writes there: a
// digest, except where admission or the trigger controller writes a tag (a legacy image ID, or a
// trigger on a referencePolicy Source tag), which the finding's message says.
func planImagesAndStale(rep *model.Report, o objects) (actions []model.Action, unrepaired []stuck.Finding) {
	var patches, deletes []model.Action
	planned := map[string]bool{}
	afterPatch := map[string]bool{}
	patchedFields, governed := map[string]bool{}, map[string]bool{}
	for _, f := range rep.Findings {
		set := o.set(f.Namespace, f.StatefulSet)
		if !patchable(f) || set == nil || set.UID == "" {
			continue
		}
		field := types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}.String() + f.Patch.Path
		if patchedFields[field] {
			continue
		}
		patchedFields[field] = true
		governed[types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}.String()+"/"+f.Container] = true
		patches = append(patches, model.Action{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Container: f.Container,
			From: f.Patch.From, To: f.Patch.To, UID: string(set.UID), Admission: clone(f.Patch.Admission)}, Cause: f.Code, Path: f.Patch.Path})
		for _, pod := range f.FailingPods {
			key := types.NamespacedName{Namespace: f.Namespace, Name: pod}.String()
			if !afterPatch[key] {
				afterPatch[key] = true
				deletes = append(deletes, model.Action{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Pod: pod}, Cause: f.Code, AfterPatch: true})
			}
		}
	}
	for _, f := range rep.Findings {
		if f.Code != apiv1.StaleRevisionStuck || f.Target == nil || f.Target.UID == "" || o.set(f.Namespace, f.StatefulSet) == nil {
			continue
		}
		key := types.NamespacedName{Namespace: f.Namespace, Name: f.Target.Name}.String()
		if planned[key] || afterPatch[key] || o.templateFails(f.Namespace, f.StatefulSet, f.Target.Name) {
			continue
		}
		planned[key] = true
		deletes = append(deletes, model.Action{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Pod: f.Target.Name,
			UID: string(f.Target.UID)}, Cause: f.Code})
	}
	for _, f := range rep.Findings {
		if f.Severity != apiv1.SeverityError {
			continue
		}
		switch {
		case f.Code == apiv1.StaleRevisionStuck && f.Target != nil && (planned[types.NamespacedName{Namespace: f.Namespace, Name: f.Target.Name}.String()] || afterPatch[types.NamespacedName{Namespace: f.Namespace, Name: f.Target.Name}.String()]):
		case f.Code == apiv1.UnresolvedImageReference && f.Pod != "":
			// pods of an older template: stuck's findings carry their repair
		case (f.Code == apiv1.UnresolvedImageReference || f.Code == apiv1.ImageTriggerStale) && f.Patch != nil &&
			patchedFields[types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}.String()+f.Patch.Path]:
		case f.Code == apiv1.UnresolvedImageReference && f.Patch == nil && governed[types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}.String()+"/"+f.Container]:
			// an image trigger governs the container: its ImageTriggerStale patch repairs it
		case f.Code == apiv1.CurrentRevisionFailing && afterPatch[types.NamespacedName{Namespace: f.Namespace, Name: f.Pod}.String()]:
		default:
			unrepaired = append(unrepaired, f)
		}
	}
	return inOrder(patches, deletes), unrepaired
}

// patchable reports whether a finding hands over a template image patch fix may send: from an
// image finding on the template (not a pod), to a valid reference with a name — never empty, and
// never a dangling "@" — that differs from the image diagnosed, at a known field.
func patchable(f stuck.Finding) bool {
	if (f.Code != apiv1.UnresolvedImageReference && f.Code != apiv1.ImageTriggerStale) || f.Pod != "" || f.Patch == nil {
		return false
	}
	to, err := resolver.Parse(f.Patch.To)
	return err == nil && to.Name != "" && f.Patch.To != f.Patch.From && f.Patch.Path != ""
}

func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
