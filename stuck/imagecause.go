package stuck

import (
	"sort"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// revision is one ControllerRevision of a StatefulSet and the template it records.
type revision struct {
	rev  *appsv1.ControllerRevision
	tmpl *corev1.PodTemplateSpec
}

// decodeRevisions decodes the templates of a StatefulSet's ControllerRevisions, newest first.
func decodeRevisions(revs []*appsv1.ControllerRevision) []revision {
	out := make([]revision, 0, len(revs))
	for _, rev := range revs {
		if _, tmpl, err := controller.RevisionTemplate(rev); err == nil {
			out = append(out, revision{rev: rev, tmpl: tmpl})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rev.Revision > out[j].rev.Revision })
	return out
}

// containerImage is the image of the container named name, init containers first, as admission
// compares an update with the old object (hasIdenticalPodSpecImage, pods.go:221-236@ALG).
func containerImage(spec *corev1.PodSpec, name string) (string, bool) {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return c.Image, true
			}
		}
	}
	return "", false
}

// introducedBy returns the ControllerRevision that set container's image to image: the oldest of
// the newest unbroken run of revisions that have it. It returns nil when no revision has it, or
// when that revision came back by a rollback (an older revision number was created later), since
// then when the image returned is unknown.
func introducedBy(revs []revision, container, image string) *appsv1.ControllerRevision {
	var first *appsv1.ControllerRevision
	for _, r := range revs {
		got, ok := containerImage(&r.tmpl.Spec, container)
		if ok && got == image {
			first = r.rev
			continue
		}
		if first != nil {
			break
		}
	}
	if first == nil {
		return nil
	}
	for _, r := range revs {
		if r.rev.Revision < first.Revision && r.rev.CreationTimestamp.After(first.CreationTimestamp.Time) {
			return nil
		}
	}
	return first
}

// causeOf compares the revision that set the image with the stream's and the tag's creation,
// and returns the time of the one that came later.
func causeOf(rev *appsv1.ControllerRevision, stream *imagev1.ImageStream, tag string) (string, metav1.Time) {
	if rev == nil {
		return facts.CauseUnknown, metav1.Time{}
	}
	at := rev.CreationTimestamp.Time
	if stream.CreationTimestamp.After(at) {
		return facts.CauseStreamCreatedAfterTemplate, stream.CreationTimestamp
	}
	for _, t := range stream.Status.Tags {
		if t.Tag == tag && len(t.Items) > 0 && t.Items[len(t.Items)-1].Created.After(at) {
			return facts.CauseTagCreatedAfterTemplate, t.Items[len(t.Items)-1].Created
		}
	}
	return facts.CauseUnknown, metav1.Time{}
}
