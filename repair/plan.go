// Package repair turns findings into safe actions and carries them out with preconditions: it
// patches a StatefulSet's image only if the image is still what was diagnosed, and deletes a pod
// only if it is still the very pod (UID and resourceVersion) proven stuck. It never deletes a
// PersistentVolumeClaim or a StatefulSet, and never scales.
package repair

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/report"
	"github.com/stsdiag/stsdiag/snapshot"
)

// Kind of action.
type Kind string

const (
	PatchImage Kind = "PatchImage"
	DeletePod  Kind = "DeletePod"
)

// Results of an action.
const (
	Done    = "done"
	Skipped = "skipped"
	Failed  = "failed"
)

// Action is one planned change and, once applied, its result.
type Action struct {
	Action      Kind   `json:"action"`
	Namespace   string `json:"namespace"`
	StatefulSet string `json:"statefulSet"`
	Pod         string `json:"pod,omitempty"`
	Container   string `json:"container,omitempty"`
	From        string `json:"from,omitempty"`
	To          string `json:"to,omitempty"`
	UID         string `json:"uid,omitempty"`
	Result      string `json:"result,omitempty"`
	Message     string `json:"message,omitempty"`

	// Path is the JSON pointer of the image field to patch.
	Path string `json:"-"`
	// ResourceVersion is the pod's resourceVersion at diagnosis (a delete precondition).
	ResourceVersion string `json:"-"`
	// AfterPatch marks a pod that becomes an off-revision pod only once its StatefulSet is
	// patched: it is deleted only if a fresh diagnosis after the patch proves it stuck.
	AfterPatch bool `json:"-"`
}

// Describe is the action as one line of the plan.
func (a Action) Describe() string {
	switch a.Action {
	case PatchImage:
		return fmt.Sprintf("patch statefulset/%s -n %s: container %q image %s → %s", a.StatefulSet, a.Namespace, a.Container, a.From, a.To)
	case DeletePod:
		s := fmt.Sprintf("delete pod/%s -n %s (uid %s)", a.Pod, a.Namespace, a.UID)
		if a.AfterPatch {
			s = fmt.Sprintf("delete pod/%s -n %s once the patch makes it an old revision (proven again after the patch)", a.Pod, a.Namespace)
		}
		return s
	}
	return string(a.Action)
}

// Plan lists the safe repairs for a report: image patches for UnresolvedImageReference, then
// deletes of StaleRevisionStuck pods, and of the pods the patches leave on an old revision.
// Error findings without a safe repair are returned as unrepaired.
func Plan(rep *report.Report, snap *snapshot.Snapshot) (actions []Action, unrepaired []report.Finding) {
	sets := map[string]metav1.Object{}
	for i := range snap.StatefulSets {
		sets[snapshot.Key(snap.StatefulSets[i].Namespace, snap.StatefulSets[i].Name)] = &snap.StatefulSets[i]
	}
	var patches, deletes []Action
	planned := map[string]bool{}
	afterPatch := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Code != report.UnresolvedImageReference || f.Pod != "" || f.ResolvedImage == "" {
			continue
		}
		path, from, to := patchOf(f)
		set := sets[snapshot.Key(f.Namespace, f.StatefulSet)]
		if path == "" || set == nil {
			continue
		}
		patches = append(patches, Action{Action: PatchImage, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Container: f.Container,
			From: from, To: to, Path: path, UID: string(set.GetUID())})
		for _, pod := range stringList(f.Details["failingPods"]) {
			key := snapshot.Key(f.Namespace, pod)
			if !afterPatch[key] {
				afterPatch[key] = true
				deletes = append(deletes, Action{Action: DeletePod, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Pod: pod, AfterPatch: true})
			}
		}
	}
	for _, f := range rep.Findings {
		if f.Code != report.StaleRevisionStuck {
			continue
		}
		key := snapshot.Key(f.Namespace, f.Pod)
		uid, _ := f.Details["podUID"].(string)
		rv, _ := f.Details["podResourceVersion"].(string)
		if planned[key] || afterPatch[key] || uid == "" {
			continue
		}
		planned[key] = true
		deletes = append(deletes, Action{Action: DeletePod, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Pod: f.Pod, UID: uid, ResourceVersion: rv})
	}
	for _, f := range rep.Findings {
		if f.Severity != report.SeverityError {
			continue
		}
		switch {
		case f.Code == report.UnresolvedImageReference || f.Code == report.StaleRevisionStuck:
		case f.Code == report.CurrentRevisionFailing && afterPatch[snapshot.Key(f.Namespace, f.Pod)]:
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

func patchOf(f report.Finding) (path, from, to string) {
	p, ok := f.Details["patch"].(map[string]any)
	if !ok {
		return "", "", ""
	}
	path, _ = p["path"].(string)
	from, _ = p["from"].(string)
	to, _ = p["to"].(string)
	return path, from, to
}

func stringList(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		var out []string
		for _, s := range l {
			if str, ok := s.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}
