package stuck

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// governingService checks the Service spec.serviceName names. The controller gives every pod
// hostname = its name and subdomain = spec.serviceName (initIdentity,
// pkg/controller/statefulset/stateful_set_utils.go:446-451@v1.37.2); the pod's stable DNS name
// <pod>.<serviceName>.<namespace>.svc exists only when a Service of that name in the namespace
// selects the pod — the EndpointSlice controller gives a Service without a selector no endpoints
// (pkg/controller/endpointslice/endpointslice_controller.go:398-402@v1.37.2, pods listed by
// labels.Set(spec.selector) at :406) and sets an endpoint's hostname only for a pod whose
// subdomain is the Service's name (ShouldSetHostname, k8s.io/endpointslice@v0.37.2
// util/controller_utils.go:201) — and is headless (clusterIP: None): cluster DNS publishes
// <hostname>.<service> records only for headless Services (Kubernetes DNS-Based Service
// Discovery specification, section 2.4, github.com/kubernetes/dns docs/specification.md). The
// pods start without it; peers that find each other by name do not. A warning, never blocking.
// Not judged: a StatefulSet naming no Service (the field is optional), a terminating one, and
// any when Services could not be listed.
func (d *diagnosis) governingService(set *appsv1.StatefulSet) {
	name := set.Spec.ServiceName
	if name == "" || set.DeletionTimestamp != nil || !d.snap.ServicesListed {
		return
	}
	var svc *corev1.Service
	for i := range d.snap.Services {
		if s := &d.snap.Services[i]; s.Namespace == set.Namespace && s.Name == name && s.DeletionTimestamp == nil {
			svc = s
		}
	}
	podLabels := set.Spec.Template.Labels
	f := Finding{Finding: apiv1.Finding{Code: apiv1.ServiceMissing, Severity: apiv1.SeverityWarning, Namespace: set.Namespace, StatefulSet: set.Name,
		Details: apiv1.FindingDetails{Service: name}}}
	fx := facts.ServiceProblem{Service: name, Wanted: selectorFor(set)}
	switch {
	case svc == nil:
		f.Reason = facts.ServiceNotFound
		// kubectl create service selects app=<name> (k8s.io/kubectl@v0.35.4 pkg/cmd/create/create_service.go:175-176).
		fx.SelectsApp = podLabels["app"] == name && len(fx.Wanted) == 1 && fx.Wanted["app"] == name
	case svc.Spec.ClusterIP != corev1.ClusterIPNone:
		f.Reason = facts.ServiceNotHeadless
		fx.ClusterIP, fx.ExternalName = svc.Spec.ClusterIP, svc.Spec.Type == corev1.ServiceTypeExternalName
		f.Details.ClusterIP = ptr.To(svc.Spec.ClusterIP)
	case len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(podLabels)):
		f.Reason = facts.ServiceSelectorMismatch
		fx.Selector, fx.PodLabels = svc.Spec.Selector, podLabels
		f.Details.Selector = ptr.To(svc.Spec.Selector)
		f.Details.PodLabels = podLabels
	default:
		return
	}
	f.Details.Reason = f.Reason
	f.Facts = fx
	d.add(f)
}

// selectorFor is the selector a governing Service needs: the StatefulSet's own matchLabels when it
// has them (they select exactly its pods), else the template's labels.
func selectorFor(set *appsv1.StatefulSet) map[string]string {
	if set.Spec.Selector != nil && len(set.Spec.Selector.MatchLabels) > 0 {
		return set.Spec.Selector.MatchLabels
	}
	return set.Spec.Template.Labels
}
