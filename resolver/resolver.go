// Package resolver is OpenShift's image lookup modelled: what the ImagePolicy admission plugin
// (openshift/apiserver-library-go pkg/admission/imagepolicy) writes for a container image, and
// which StatefulSets carry an ImageStream name it should have resolved — the rules behind
// `oc stsdiag check`'s UnresolvedImageReference, ImageStreamTagNotFound, ImageLookupDisabled,
// ImageResolutionSkipped and image-trigger findings.
//
// It is pure: ImageStreams and workloads in, answers out; no API call (package
// github.com/stsdiag/stsdiag/openshift reads them from a cluster). Every rule cites the upstream
// line it follows; the upstream test tables are ported in its tests.
package resolver

import (
	"fmt"
	"io"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	rules "github.com/stsdiag/stsdiag/internal/resolver"
	"github.com/stsdiag/stsdiag/internal/snapshot"
)

// Outcome says how admission treats an image reference.
type Outcome string

// Outcomes, as admission's resolveImageReference and resolveImageStreamTag decide.
const (
	Unparsable     Outcome = "Unparsable"     // not a reference OpenShift parses
	ByDigest       Outcome = "ByDigest"       // already by digest: left as it is
	NotLocal       Outcome = "NotLocal"       // a registry or namespace is written: not looked up
	RegistryOnly   Outcome = "RegistryOnly"   // a single segment OpenShift reads as a registry
	InvalidName    Outcome = "InvalidName"    // a name no ImageStream can have
	NoStream       Outcome = "NoStream"       // no ImageStream of that name in the namespace
	LookupDisabled Outcome = "LookupDisabled" // the stream exists without lookupPolicy.local
	TagNotFound    Outcome = "TagNotFound"    // the tag has no image (yet)
	BadPullSpec    Outcome = "BadPullSpec"    // the tag's pull spec does not parse
	Resolved       Outcome = "Resolved"       // the tag has an image: Image is its pull spec
)

// Resolution is what admission does with one image reference.
type Resolution struct {
	Outcome Outcome
	// Image is the pull spec admission writes ("" when it writes nothing).
	Image string
	// Namespace and Tag of the ImageStreamTag looked up, when one was.
	Namespace, Tag string
}

// Resolve says what OpenShift's image lookup writes for image, used in a pod or workload of
// namespace, given the ImageStreams there; forced is the template annotation
// alpha.image.policy.openshift.io/resolve-names: "*" (`oc set image-lookup sts/NAME`).
func Resolve(image, namespace string, streams []imagev1.ImageStream, forced bool) Resolution {
	adm := &rules.Admission{Stream: func(ns, name string) *imagev1.ImageStream {
		for i := range streams {
			if streams[i].Namespace == ns && streams[i].Name == name {
				return &streams[i]
			}
		}
		return nil
	}}
	res := adm.Resolve(image, namespace, forced)
	out := Resolution{Outcome: Outcome(res.Outcome), Namespace: res.Namespace, Tag: res.Tag}
	if res.LocalRewrite || res.Outcome == rules.Resolved {
		out.Image = res.Image
	}
	return out
}

// Objects are what Diagnose reads: the workloads of a cluster or namespace, the ImageStreams
// their images may name, and the Namespaces (run levels skip admission).
type Objects struct {
	Now          time.Time
	Namespaces   []corev1.Namespace
	StatefulSets []appsv1.StatefulSet
	Pods         []corev1.Pod
	ImageStreams []imagev1.ImageStream
}

// Diagnose reports every image reference of the StatefulSets (templates and pods) that OpenShift's
// image lookup should have resolved and did not, or will not, and image triggers that are invalid
// or not applied — findings of the stsdiag/v1 contract, remedies naming oc. Each
// UnresolvedImageReference carries the exact JSON patch that pins the image
// (details.patch).
func Diagnose(objs Objects) []apiv1.Finding {
	s := &snapshot.Snapshot{Now: objs.Now, OpenShift: true, Namespaces: objs.Namespaces, StatefulSets: objs.StatefulSets,
		Pods: objs.Pods, ImageStreams: objs.ImageStreams}
	findings := rules.Diagnose(s)
	explain.Findings(findings, explain.ForCluster(true))
	model.SortFindings(findings)
	return model.PublicFindings(findings)
}

// Load reads Objects from a multi-document YAML stream of objects (the scenarios of
// testdata/resolver); kinds it does not read are skipped.
func Load(r io.Reader, now time.Time) (Objects, error) {
	s, err := snapshot.Load(r, now)
	if err != nil {
		return Objects{}, fmt.Errorf("loading objects: %w", err)
	}
	return Objects{Now: now, Namespaces: s.Namespaces, StatefulSets: s.StatefulSets, Pods: s.Pods, ImageStreams: s.ImageStreams}, nil
}
