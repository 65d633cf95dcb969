package scenario

import (
	"context"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The OpenShift seed case: an ImageStream with local lookup holds tag 1.0.1, but the StatefulSet's
// template kept the local name (admission did not rewrite it), so pods pull docker.io and fail.
const (
	SeedStream = "statefulset-issue-demo"
	SeedTag    = "1.0.1"
	SeedImage  = SeedStream + ":" + SeedTag
	SeedDigest = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	// InternalRegistry is OpenShift 4's image registry service.
	InternalRegistry = "image-registry.openshift-image-registry.svc:5000"
)

// SeedResolved is what admission would have written in namespace ns.
func SeedResolved(ns string) string {
	return InternalRegistry + "/" + ns + "/" + SeedStream + "@" + SeedDigest
}

// ImageStream creates a lookup-local stream whose tag points at a digest in the internal
// registry (referencePolicy Local, as `oc import-image --reference-policy=local` leaves it).
func ImageStream(ctx context.Context, images imageclient.Interface, ns, name, tag, digest string) error {
	is := &imagev1.ImageStream{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: imagev1.ImageStreamSpec{
			LookupPolicy: imagev1.ImageLookupPolicy{Local: true},
			Tags: []imagev1.TagReference{{Name: tag, ReferencePolicy: imagev1.TagReferencePolicy{Type: imagev1.LocalTagReferencePolicy},
				From: &corev1.ObjectReference{Kind: "DockerImage", Name: "quay.io/example/" + name + ":" + tag}}},
		},
	}
	created, err := images.ImageV1().ImageStreams(ns).Create(ctx, is, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	repo := InternalRegistry + "/" + ns + "/" + name
	created.Status = imagev1.ImageStreamStatus{
		DockerImageRepository: repo,
		Tags: []imagev1.NamedTagEventList{{Tag: tag, Items: []imagev1.TagEvent{{
			Created: metav1.Now(), DockerImageReference: "quay.io/example/" + name + "@" + digest, Image: digest, Generation: 1,
		}}}},
	}
	_, err = images.ImageV1().ImageStreams(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// UnresolvedImageStream builds the seed case: 3 replicas with PVCs, image SeedImage unresolved.
func UnresolvedImageStream(ctx context.Context, cs kubernetes.Interface, images imageclient.Interface, ns string) error {
	if err := ImageStream(ctx, images, ns, SeedStream, SeedTag, SeedDigest); err != nil {
		return err
	}
	if err := Volumes(ctx, cs, ns, 3); err != nil {
		return err
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, StatefulSet(ns, "web", SeedImage, 3, true), metav1.CreateOptions{}); err != nil {
		return err
	}
	return WaitPodReason(ctx, cs, ns, "web-0", "ImagePullBackOff", 60*time.Second)
}
