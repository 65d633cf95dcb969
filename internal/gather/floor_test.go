package gather_test

import (
	"context"
	"testing"

	imagev1 "github.com/openshift/api/image/v1"
	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestFloor: the bench's floor lists every kind of the resource table, the image API's only
// where it is used, and counts what it read.
func TestFloor(t *testing.T) {
	// A StatefulSet, its 3 pods and the namespace shop; a node.
	kube := fake.NewClientset(append(objects(1), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})...)
	image := imagefake.NewClientset(&imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}})
	c := gather.Clients{Clients: read.Clients{Kube: kube, Image: image}}
	plain, err := gather.Floor(context.Background(), c, false)
	if err != nil {
		t.Fatal(err)
	}
	openShift, err := gather.Floor(context.Background(), c, true)
	if err != nil {
		t.Fatal(err)
	}
	// The image API adds the namespace and the ImageStream.
	if plain != 5 || openShift != 7 {
		t.Errorf("read %d objects, %d with the image API: want 5 and 7", plain, openShift)
	}
	if got := len(gather.FloorResources()); got != 10 {
		t.Errorf("%d kinds, want the table's 10", got)
	}
}
