// Package openshift is verbs over OpenShift's image API, in the style of crane: detect the API
// (Detect), list ImageStreams (ListImageStreams), say what the cluster's image lookup writes for
// an image (Resolve, over package resolver's model of the ImagePolicy admission plugin), and pin
// a StatefulSet container's image to a digest without overwriting a concurrent change
// (PatchDigest). It works on any clientset, the fakes of k8s.io/client-go and
// openshift/client-go included.
package openshift

import (
	"context"
	"fmt"

	imagev1 "github.com/openshift/api/image/v1"
	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/pager"
)

// Mode says whether to use the image.openshift.io API: ModeAuto uses it when the API server
// serves it (Detect).
type Mode string

const (
	ModeAuto   Mode = "auto"
	ModeAlways Mode = "always"
	ModeNever  Mode = "never"
)

// ParseMode parses a mode (auto, always or never).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeAuto, ModeAlways, ModeNever:
		return Mode(s), nil
	}
	return "", fmt.Errorf("invalid OpenShift mode %q: want auto, always or never", s)
}

// imageGroupVersion is the API the ImageStream checks need.
var imageGroupVersion = imagev1.GroupVersion.String()

// Detect reports whether the cluster serves image.openshift.io/v1 imagestreams.
func Detect(d discovery.DiscoveryInterface) (bool, error) {
	resources, err := d.ServerResourcesForGroupVersion(imageGroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", imageGroupVersion, err)
	}
	for _, r := range resources.APIResources {
		if r.Name == "imagestreams" {
			return true, nil
		}
	}
	return false, nil
}

// Enabled says whether to use the image API in this mode: for ModeAuto, whether the API server
// serves it.
func Enabled(ctx context.Context, mode Mode, d discovery.DiscoveryInterface) (bool, error) {
	switch mode {
	case ModeNever:
		return false, nil
	case ModeAlways:
		return true, nil
	}
	return Detect(d)
}

// ListImageStreams lists ImageStreams in one namespace ("" = all) in pages of 500
// (client-go's pager): ImageStreams are served by openshift-apiserver or, off OpenShift, a CRD,
// where a page limit bounds each response.
func ListImageStreams(ctx context.Context, c imageclient.Interface, namespace string) ([]imagev1.ImageStream, error) {
	var out []imagev1.ImageStream
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.ImageV1().ImageStreams(namespace).List(ctx, opts)
	})
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		is, ok := obj.(*imagev1.ImageStream)
		if !ok {
			return fmt.Errorf("unexpected %T in an ImageStream list", obj)
		}
		is.ManagedFields = nil
		out = append(out, *is)
		return nil
	})
	return out, err
}
