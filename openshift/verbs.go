package openshift

import (
	"context"
	"fmt"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck"
)

// Resolve says what the cluster's image lookup writes for image in a pod or workload of
// namespace, from the namespace's ImageStreams as they are now (resolver.Resolve); forced is the
// resolve-names "*" annotation.
func Resolve(ctx context.Context, c imageclient.Interface, namespace, image string, forced bool) (resolver.Resolution, error) {
	streams, err := ListImageStreams(ctx, c, namespace)
	if err != nil {
		return resolver.Resolution{}, err
	}
	return resolver.Resolve(image, namespace, streams, forced), nil
}

// PatchDigest sets the image of container (an app or init container) of the StatefulSet's
// template to image, with a JSON patch that first tests the StatefulSet's UID and the container's
// current image as set has them: if someone changed either since set was read, the API server
// refuses the patch (a conflict, 422) and nothing is overwritten. dryRun sends it with
// dryRun=All. The pods keep their revision until deleted or rolled by the controller.
func PatchDigest(ctx context.Context, kube kubernetes.Interface, set *appsv1.StatefulSet, container, image string, dryRun bool) (*appsv1.StatefulSet, error) {
	path, from := "", ""
	for i, c := range set.Spec.Template.Spec.Containers {
		if c.Name == container {
			path, from = fmt.Sprintf("/spec/template/spec/containers/%d/image", i), c.Image
		}
	}
	for i, c := range set.Spec.Template.Spec.InitContainers {
		if c.Name == container && path == "" {
			path, from = fmt.Sprintf("/spec/template/spec/initContainers/%d/image", i), c.Image
		}
	}
	if path == "" {
		return nil, fmt.Errorf("statefulset %s/%s has no container %q", set.Namespace, set.Name, container)
	}
	patch := stuck.ImagePatch{Path: path, From: from, To: image}.JSONPatch(set.UID)
	opts := metav1.PatchOptions{FieldManager: "stsdiag"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return kube.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.JSONPatchType, []byte(patch), opts)
}
