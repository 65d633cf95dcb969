// Package openshift is verbs over OpenShift's image API, in the style of crane: detect the API
// (Detect), list ImageStreams (ListImageStreams), say what the cluster's image lookup writes for
// an image (Resolve, over package resolver's model of the ImagePolicy admission plugin), and pin
// a StatefulSet container's image to a digest without overwriting a concurrent change
// (PatchDigest). It works on any clientset, the fakes of k8s.io/client-go and
// openshift/client-go included.
package openshift

import (
	"context"

	imagev1 "github.com/openshift/api/image/v1"
	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	"k8s.io/client-go/discovery"

	"github.com/stsdiag/stsdiag/internal/imageapi"
)

// Detect reports whether the API server serves image.openshift.io/v1 imagestreams (OpenShift,
// or its image API aggregated elsewhere).
func Detect(d discovery.DiscoveryInterface) (bool, error) { return imageapi.Detect(d) }

// ListImageStreams lists the ImageStreams of a namespace ("" for all), in pages.
func ListImageStreams(ctx context.Context, c imageclient.Interface, namespace string) ([]imagev1.ImageStream, error) {
	return imageapi.ListImageStreams(ctx, c, namespace)
}
