// Package imageapi detects OpenShift's image API (--openshift auto|always|never) and lists
// ImageStreams, for the read path; package openshift exposes Detect and ListImageStreams.
package imageapi

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

// Mode says whether to use the image.openshift.io API.
type Mode string

const (
	ModeAuto   Mode = "auto"
	ModeAlways Mode = "always"
	ModeNever  Mode = "never"
)

// ParseMode validates --openshift.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeAuto, ModeAlways, ModeNever:
		return Mode(s), nil
	}
	return "", fmt.Errorf("invalid --openshift %q: want auto, always or never", s)
}

// ImageGroupVersion is the API the ImageStream checks need.
var ImageGroupVersion = imagev1.GroupVersion.String()

// Detect reports whether the cluster serves image.openshift.io/v1 imagestreams.
func Detect(d discovery.DiscoveryInterface) (bool, error) {
	resources, err := d.ServerResourcesForGroupVersion(ImageGroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", ImageGroupVersion, err)
	}
	for _, r := range resources.APIResources {
		if r.Name == "imagestreams" {
			return true, nil
		}
	}
	return false, nil
}

// Enabled applies the mode to discovery.
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
