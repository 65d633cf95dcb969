package stuck

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// Finding is a printed finding plus the typed hand-offs repair and the table read.
type Finding struct {
	apiv1.Finding

	// Facts are what the rules established, typed per code (package stuck/facts); Diagnose words them into
	// Message, Short, Remedy and the details that are sentences.
	Facts facts.Facts
	// Short is the message as the table shows it.
	Short string
	// Target is the exact pod diagnosed, for repair preconditions.
	Target *PodRef
	// Patch is the template change that repairs an unresolved image reference.
	Patch *ImagePatch
	// FailingPods are the pods that fail to pull the image of an image finding.
	FailingPods []string
	// LostNode names the node of a pod stuck terminating when that node is gone or has not been
	// Ready for longer than the terminating threshold: the only case fix may force-delete.
	LostNode string
	// LogCurrent: the container's last run is its current, terminated one, whose log the
	// kubelet serves as the current log (it has no previous one then).
	LogCurrent bool
}

// PodRef identifies one pod object as it was when diagnosed.
type PodRef struct {
	Name string
	UID  types.UID
}

// ImagePatch is a JSON-patch replace of one image field of a StatefulSet's template.
type ImagePatch struct {
	// Path is the JSON pointer of the image, e.g. /spec/template/spec/containers/0/image.
	Path string
	// From is the image as diagnosed (the patch tests it first).
	From string
	// To is the image to write.
	To string
	// Admission is the API server's answer to To, when it was asked (--confirm-with-admission);
	// To is then what admission wrote.
	Admission *apiv1.AdmissionCheck
}

// JSONPatch is the JSON patch that tests the image, and the object's UID unless uid is "", then
// replaces the image: what the remedy shows, and what stsdiag fix and openshift.PatchDigest send.
func (p ImagePatch) JSONPatch(uid types.UID) string {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value string `json:"value"`
	}
	ops := []op{{"test", p.Path, p.From}, {"replace", p.Path, p.To}}
	if uid != "" {
		ops = append([]op{{"test", "/metadata/uid", string(uid)}}, ops...)
	}
	body, _ := json.Marshal(ops) // strings only: it cannot fail
	return string(body)
}

// DeepCopy copies a finding, its details and its hand-offs (facts are shared: nothing changes
// them once worded).
func (f Finding) DeepCopy() Finding {
	c := f
	c.Finding = f.Finding.DeepCopy()
	if f.Target != nil {
		t := *f.Target
		c.Target = &t
	}
	if f.Patch != nil {
		p := *f.Patch
		if p.Admission != nil {
			a := *p.Admission
			p.Admission = &a
		}
		c.Patch = &p
	}
	c.FailingPods = append([]string(nil), f.FailingPods...)
	return c
}

// Blocking reports whether a finding keeps a rollout from completing by itself (wait's policy):
// every error, a tag not imported yet, an orphan pod holding an ordinal's name, and OnDelete pods
// on an old revision (they change only when someone deletes them).
func (f Finding) Blocking() bool {
	return f.Severity == apiv1.SeverityError || f.Code == apiv1.ImageStreamTagNotFound || f.Code == apiv1.OnDeleteStale ||
		(f.Code == apiv1.OrphanedRevision && f.Pod != "")
}

// Key identifies a finding across diagnoses.
func (f Finding) Key() string {
	return strings.Join([]string{f.Context, string(f.Code), f.Namespace, f.StatefulSet, f.Pod, f.Container, f.Image}, "/")
}
