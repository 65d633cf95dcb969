package predict

import (
	"strings"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/resolver"
)

// Pull is one container image of the applied template: as the manifest writes it, as admission
// writes it into the StatefulSet, and how preflight learns whether it exists.
type Pull struct {
	Container string
	Init      bool
	// Image is the manifest's; Written what the StatefulSet holds after admission.
	Image, Written string
	// Check is Found with Digest when an ImageStream holds the image written (no registry is
	// asked), Skipped when an image lookup finding of check explains it (a tag the stream does
	// not hold, lookup off), "" when its registry is to be asked.
	Check  apiv1.ImageCheck
	Digest string
	// NoStream is the ImageStream a local name looked for and that does not exist (OpenShift):
	// the name is pulled from docker.io.
	NoStream string
}

// Streams finds an ImageStream of a namespace, nil when there is none.
type Streams func(namespace, name string) *imagev1.ImageStream

// Pulls lists the images of the applied StatefulSet. Off OpenShift the StatefulSet holds the
// manifest's images as they are. On OpenShift the ImagePolicy admission plugin may rewrite a
// local name into the pull spec of an ImageStream tag (resolver.Admission: on create, and on
// update only for an image that changed): where the dry run's answer differs from the manifest,
// admission was asked and answered; otherwise the model says what it would write (ImageStreams
// served as a CRD, or one the same manifests create, are not seen by any admission at dry-run
// time).
func Pulls(manifest, applied, live *appsv1.StatefulSet, streams Streams, openshift bool, namespaceLabels map[string]string) []Pull {
	adm := &resolver.Admission{Stream: streams}
	forced := resolver.Forced(applied.Annotations, applied.Spec.Template.Annotations)
	skipped, _ := resolver.NamespaceSkipped(applied.Namespace, namespaceLabels)
	owned := metav1.GetControllerOf(applied) != nil
	var out []Pull
	add := func(containers, written, old []corev1.Container, init bool) {
		for i, c := range containers {
			p := Pull{Container: c.Name, Init: init, Image: c.Image, Written: c.Image}
			if i < len(written) && written[i].Name == c.Name {
				p.Written = written[i].Image
			}
			if openshift && p.Written == p.Image && !skipped {
				p.Written, p.Check, p.Digest, p.NoStream = predictAdmission(adm, applied, live, c, old, forced, owned)
			} else if openshift && p.Written != p.Image {
				p.Check, p.Digest = streamHolds(applied.Namespace, p.Written, streams)
			}
			out = append(out, p)
		}
	}
	var oldInit, oldApp []corev1.Container
	if live != nil {
		oldInit, oldApp = live.Spec.Template.Spec.InitContainers, live.Spec.Template.Spec.Containers
	}
	add(manifest.Spec.Template.Spec.InitContainers, applied.Spec.Template.Spec.InitContainers, oldInit, true)
	add(manifest.Spec.Template.Spec.Containers, applied.Spec.Template.Spec.Containers, oldApp, false)
	return out
}

// predictAdmission is what the ImagePolicy plugin writes for one container (Admit), and how the
// result is known to exist.
func predictAdmission(adm *resolver.Admission, set, live *appsv1.StatefulSet, c corev1.Container, old []corev1.Container, forced, owned bool) (written string, check apiv1.ImageCheck, digest, noStream string) {
	req := resolver.Request{Namespace: set.Namespace, Resource: schema.GroupResource{Group: "apps", Resource: "statefulsets"},
		Update: live != nil, ControllerOwned: owned, Image: c.Image, Forced: forced}
	if live != nil {
		req.OldForced = resolver.Forced(live.Annotations, live.Spec.Template.Annotations)
		for _, o := range old {
			if o.Name == c.Name {
				req.OldImage, req.HasOld = o.Image, true
			}
		}
	}
	written = adm.Admit(req)
	res := adm.Resolve(c.Image, set.Namespace, forced)
	switch {
	case res.Outcome == resolver.Resolved && written != c.Image:
		if res.Event != nil {
			digest = res.Event.Image
		}
		return written, apiv1.ImageFromStream, digest, ""
	case res.Outcome == resolver.Resolved, res.Outcome == resolver.TagNotFound:
		// check's image lookup findings say it, for the template: UnresolvedImageReference (a
		// name admission leaves that the stream resolves), ImageStreamTagNotFound. With lookup
		// off (ImageLookupDisabled, a warning) the name is pulled from docker.io: asked there.
		return written, apiv1.ImageSkipped, "", ""
	case res.Outcome == resolver.NoStream && res.Ref.Local(forced):
		return written, "", "", res.Ref.Name
	}
	return written, "", "", ""
}

// streamHolds says whether the image admission wrote is an ImageStream's (its repository and a
// tag event's image), as a digest the registry need not be asked about.
func streamHolds(namespace, written string, streams Streams) (apiv1.ImageCheck, string) {
	ref, err := resolver.Parse(written)
	if err != nil || ref.Name == "" {
		return "", ""
	}
	name := ref.Name
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	for _, ns := range []string{ref.Namespace, namespace} {
		s := streams(ns, name)
		if s == nil {
			continue
		}
		for _, t := range s.Status.Tags {
			for _, e := range t.Items {
				if e.Image != "" && strings.HasSuffix(written, "@"+e.Image) {
					return apiv1.ImageFromStream, e.Image
				}
			}
		}
	}
	return "", ""
}
