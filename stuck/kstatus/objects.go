package kstatus

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/event"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/object"
	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stsdiag/stsdiag/stuck"
)

// read is what the ClusterReader gave of one StatefulSet's world.
type read struct {
	objs *stuck.Objects
	// podStatuses are kstatus's statuses of the pods (the status's generated resources).
	podStatuses event.ResourceStatuses
	// missing names what the rules cannot do without and could not be read.
	missing []string
}

// read reads, through cr, what a diagnosis of set needs: its pods, ControllerRevisions (both by
// its selector: the controller lists them so, stateful_set_control.go:156-161@v1.37.2, and gives
// revisions the template's labels, stateful_set_utils.go:582-584) and claims (by the selector's
// matchLabels, which the controller gives every claim it creates, stateful_set_utils.go:408-414);
// the namespace's Warning Events; its governing Service; the nodes and StorageClasses; on
// OpenShift (the mapper knows image.openshift.io ImageStreams) the namespace's ImageStreams and
// the namespace itself. Only a context error fails it.
func (r *reader) read(ctx context.Context, cr engine.ClusterReader, set *appsv1.StatefulSet) (*read, error) {
	out := &read{objs: &stuck.Objects{Now: r.now(), ServerVersion: r.serverVersion, StatefulSets: []appsv1.StatefulSet{*set},
		Selected: map[types.NamespacedName]bool{{Namespace: set.Namespace, Name: set.Name}: true}}}
	objs := out.objs
	ns := set.Namespace
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || set.Spec.Selector == nil {
		out.missing = append(out.missing, fmt.Sprintf("the StatefulSet's selector: %v", err))
		return out, nil
	}
	// required reads a kind the rules cannot do without; optional one they can, with a warning.
	required := func(what string, err error) bool {
		if err != nil {
			out.missing = append(out.missing, fmt.Sprintf("cannot read %s: %v", what, firstLine(err)))
		}
		return err == nil
	}
	optional := func(warning string, err error) bool {
		if err != nil && !isContext(err) {
			objs.Warnings = append(objs.Warnings, fmt.Sprintf("%s: %v", warning, firstLine(err)))
		}
		return err == nil
	}
	var pods []unstructured.Unstructured
	if err := list(ctx, cr, corev1.SchemeGroupVersion.WithKind("Pod"), ns, selector, &pods); isContext(err) {
		return nil, err
	} else if required("pods", err) {
		objs.Pods = typed[corev1.Pod](pods, &out.missing)
		for i := range pods {
			if res, err := status.Compute(&pods[i]); err == nil {
				out.podStatuses = append(out.podStatuses, &event.ResourceStatus{Identifier: object.UnstructuredToObjMetadata(&pods[i]),
					Status: res.Status, Resource: &pods[i], Message: res.Message})
			}
		}
		sort.Sort(out.podStatuses)
	}
	var revisions []unstructured.Unstructured
	if err := list(ctx, cr, appsv1.SchemeGroupVersion.WithKind("ControllerRevision"), ns, selector, &revisions); isContext(err) {
		return nil, err
	} else if optional("revisions not read (no template compared)", err) {
		objs.Revisions = typed[appsv1.ControllerRevision](revisions, &out.missing)
	}
	if len(set.Spec.VolumeClaimTemplates) > 0 {
		claimSelector := labels.SelectorFromSet(set.Spec.Selector.MatchLabels)
		var claims []unstructured.Unstructured
		if err := list(ctx, cr, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), ns, claimSelector, &claims); isContext(err) {
			return nil, err
		} else if required("persistentvolumeclaims", err) {
			objs.PVCs = typed[corev1.PersistentVolumeClaim](claims, &out.missing)
		}
	}
	var events []unstructured.Unstructured
	if err := list(ctx, cr, corev1.SchemeGroupVersion.WithKind("Event"), ns, labels.Everything(), &events); isContext(err) {
		return nil, err
	} else if optional("no pod events", err) {
		for _, e := range typed[corev1.Event](events, &out.missing) {
			if e.Type == corev1.EventTypeWarning {
				objs.Events = append(objs.Events, e)
			}
		}
	}
	if name := set.Spec.ServiceName; name != "" {
		svc := &unstructured.Unstructured{}
		svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
		err := cr.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc)
		switch {
		case isContext(err):
			return nil, err
		case apierrors.IsNotFound(err):
			objs.ServicesListed = true
		case optional("governing Service not checked", err):
			objs.ServicesListed = true
			objs.Services = typed[corev1.Service]([]unstructured.Unstructured{*svc}, &out.missing)
		}
	}
	var nodes []unstructured.Unstructured
	if err := listCluster(ctx, cr, corev1.SchemeGroupVersion.WithKind("Node"), &nodes); isContext(err) {
		return nil, err
	} else if err == nil {
		// Nodes matter only to a pod stuck terminating, whose finding says when they are unknown.
		objs.Nodes, objs.NodesListed = typed[corev1.Node](nodes, &out.missing), true
	}
	if len(objs.PVCs) > 0 {
		var classes []unstructured.Unstructured
		if err := listCluster(ctx, cr, storagev1.SchemeGroupVersion.WithKind("StorageClass"), &classes); isContext(err) {
			return nil, err
		} else if err == nil {
			objs.StorageClasses, objs.StorageClassesListed = typed[storagev1.StorageClass](classes, &out.missing), true
		}
	}
	if _, err := r.mapper.RESTMapping(schema.GroupKind{Group: imagev1.GroupName, Kind: "ImageStream"}); err == nil {
		objs.OpenShift = true
		var streams []unstructured.Unstructured
		if err := list(ctx, cr, imagev1.GroupVersion.WithKind("ImageStream"), ns, labels.Everything(), &streams); isContext(err) {
			return nil, err
		} else if optional("ImageStream checks skipped", err) {
			objs.ImageStreams = typed[imagev1.ImageStream](streams, &out.missing)
		}
		namespace := &unstructured.Unstructured{}
		namespace.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		if err := cr.Get(ctx, types.NamespacedName{Name: ns}, namespace); isContext(err) {
			return nil, err
		} else if err == nil {
			objs.Namespaces = typed[corev1.Namespace]([]unstructured.Unstructured{*namespace}, &out.missing)
		}
	}
	return out, nil
}

// list lists the objects of kind in namespace ns that selector selects.
func list(ctx context.Context, cr engine.ClusterReader, kind schema.GroupVersionKind, ns string, selector labels.Selector, into *[]unstructured.Unstructured) error {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(kind)
	if err := cr.ListNamespaceScoped(ctx, l, ns, selector); err != nil {
		return err
	}
	*into = l.Items
	return nil
}

// listCluster lists every object of a cluster-scoped kind.
func listCluster(ctx context.Context, cr engine.ClusterReader, kind schema.GroupVersionKind, into *[]unstructured.Unstructured) error {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(kind)
	if err := cr.ListClusterScoped(ctx, l, labels.Everything()); err != nil {
		return err
	}
	*into = l.Items
	return nil
}

// typed converts objects read as unstructured; one that does not convert is named in missing.
func typed[T any](items []unstructured.Unstructured, missing *[]string) []T {
	out := make([]T, 0, len(items))
	for i := range items {
		var t T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, &t); err != nil {
			*missing = append(*missing, fmt.Sprintf("%s %s/%s does not convert: %v", items[i].GetKind(), items[i].GetNamespace(), items[i].GetName(), err))
			continue
		}
		out = append(out, t)
	}
	return out
}

func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}
