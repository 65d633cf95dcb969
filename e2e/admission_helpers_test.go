package e2e

import (
	"context"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
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

// waitRevision waits until the StatefulSet has a ControllerRevision and returns its creation time.
func waitRevision(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) time.Time {
	t.Helper()
	var created time.Time
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, nil
		}
		created = list.Items[0].CreationTimestamp.Time
		return true, nil
	})
	if err != nil {
		t.Fatalf("no ControllerRevision in %s: %v", ns, err)
	}
	return created
}
