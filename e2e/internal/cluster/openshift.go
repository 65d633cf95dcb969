package cluster

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

//go:embed imagestream-crd.yaml
var imageStreamCRD []byte

//go:embed owner-crd.yaml
var ownerCRD []byte

// OwnerResource is the e2e.stsdiag.io/v1 Owner custom resource (see owner-crd.yaml).
var OwnerResource = schema.GroupVersionResource{Group: "e2e.stsdiag.io", Version: "v1", Resource: "owners"}

// InstallOwnerCRD serves e2e.stsdiag.io/v1 owners and waits until discovery shows it.
func InstallOwnerCRD(ctx context.Context, cfg *rest.Config) error {
	return installCRD(ctx, cfg, ownerCRD, "e2e.stsdiag.io/v1")
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallImageStreamCRD serves image.openshift.io/v1 imagestreams and waits until discovery shows it.
func InstallImageStreamCRD(ctx context.Context, cfg *rest.Config) error {
	return installCRD(ctx, cfg, imageStreamCRD, "image.openshift.io/v1")
}

func installCRD(ctx context.Context, cfg *rest.Config, manifest []byte, groupVersion string) error {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(manifest, &obj.Object); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(crdResource).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the CRD for %s: %w", groupVersion, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := disc.ServerResourcesForGroupVersion(groupVersion)
		return err == nil, nil
	})
}
