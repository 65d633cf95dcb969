package resolver

import imagev1 "github.com/openshift/api/image/v1"

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
	adm := &Admission{Stream: func(ns, name string) *imagev1.ImageStream {
		for i := range streams {
			if streams[i].Namespace == ns && streams[i].Name == name {
				return &streams[i]
			}
		}
		return nil
	}}
	res := adm.Resolve(image, namespace, forced)
	out := Resolution{Outcome: Outcome(res.Outcome), Namespace: res.Namespace, Tag: res.Tag}
	if res.LocalRewrite || res.Outcome == Resolved {
		out.Image = res.Image
	}
	return out
}
