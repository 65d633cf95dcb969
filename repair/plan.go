// Package repair turns findings into safe actions and carries them out with preconditions: it
// patches a StatefulSet's image only if the image is still what was diagnosed, and deletes a pod
// only if it is still the very pod proven stuck. It never deletes a PersistentVolumeClaim or a
// StatefulSet, and never scales.
package repair

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/snapshot"
)

// Plan lists the safe repairs for a report: image patches for UnresolvedImageReference, then
// deletes of StaleRevisionStuck pods, and of the pods the patches leave on an old revision.
// Error findings without a safe repair are returned as unrepaired. It reads only the findings'
// typed hand-offs (Target, Patch, FailingPods), never their details.
func Plan(rep *apiv1.Report, snap *snapshot.Snapshot) (actions []apiv1.Action, unrepaired []apiv1.Finding) {
	setUIDs := map[string]types.UID{}
	for i := range snap.StatefulSets {
		setUIDs[snapshot.Key(snap.StatefulSets[i].Namespace, snap.StatefulSets[i].Name)] = snap.StatefulSets[i].UID
	}
	var patches, deletes []apiv1.Action
	planned := map[string]bool{}
	afterPatch := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Code != apiv1.UnresolvedImageReference || f.Pod != "" || f.Patch == nil || f.Patch.To == "" {
			continue
		}
		uid, ok := setUIDs[snapshot.Key(f.Namespace, f.StatefulSet)]
		if !ok {
			continue
		}
		patches = append(patches, apiv1.Action{Action: apiv1.PatchImage, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Container: f.Container,
			From: f.Patch.From, To: f.Patch.To, Path: f.Patch.Path, UID: string(uid)})
		for _, pod := range f.FailingPods {
			key := snapshot.Key(f.Namespace, pod)
			if !afterPatch[key] {
				afterPatch[key] = true
				deletes = append(deletes, apiv1.Action{Action: apiv1.DeletePod, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Pod: pod, AfterPatch: true})
			}
		}
	}
	for _, f := range rep.Findings {
		if f.Code != apiv1.StaleRevisionStuck || f.Target == nil || f.Target.UID == "" {
			continue
		}
		key := snapshot.Key(f.Namespace, f.Target.Name)
		if planned[key] || afterPatch[key] {
			continue
		}
		planned[key] = true
		deletes = append(deletes, apiv1.Action{Action: apiv1.DeletePod, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Pod: f.Target.Name,
			UID: string(f.Target.UID), ResourceVersion: f.Target.ResourceVersion})
	}
	for _, f := range rep.Findings {
		if f.Severity != apiv1.SeverityError {
			continue
		}
		switch {
		case f.Code == apiv1.UnresolvedImageReference || f.Code == apiv1.StaleRevisionStuck:
		case f.Code == apiv1.CurrentRevisionFailing && afterPatch[snapshot.Key(f.Namespace, f.Pod)]:
		default:
			unrepaired = append(unrepaired, f)
		}
	}
	sort.SliceStable(deletes, func(i, j int) bool {
		if deletes[i].Namespace != deletes[j].Namespace {
			return deletes[i].Namespace < deletes[j].Namespace
		}
		return deletes[i].Pod < deletes[j].Pod
	})
	return append(patches, deletes...), unrepaired
}
