package e2e

import (
	"context"
	"testing"

	imagev1 "github.com/openshift/api/image/v1"
	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// streamTag is one tag of a test ImageStream: its spec referencePolicy and its status items.
type streamTag struct {
	name   string
	policy imagev1.TagReferencePolicyType
	items  []imagev1.TagEvent
}

// createImageStream creates an ImageStream and writes its status (repository and tag events)
// through the status subresource, as the image API server would.
func createImageStream(ctx context.Context, t *testing.T, images imageclient.Interface, ns, name string, lookup bool, repo string, tags ...streamTag) {
	t.Helper()
	is := &imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: lookup}}}
	for _, tag := range tags {
		is.Spec.Tags = append(is.Spec.Tags, imagev1.TagReference{Name: tag.name, ReferencePolicy: imagev1.TagReferencePolicy{Type: tag.policy}})
	}
	created, err := images.ImageV1().ImageStreams(ns).Create(ctx, is, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.DockerImageRepository = repo
	for _, tag := range tags {
		if tag.items != nil {
			created.Status.Tags = append(created.Status.Tags, imagev1.NamedTagEventList{Tag: tag.name, Items: tag.items})
		}
	}
	if _, err := images.ImageV1().ImageStreams(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
