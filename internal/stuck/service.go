package stuck

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
)

// Reasons of ServiceMissing (details.reason).
const (
	ServiceNotFound         = "NotFound"
	ServiceNotHeadless      = "NotHeadless"
	ServiceSelectorMismatch = "SelectorMismatch"
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
	f := model.Finding{Finding: apiv1.Finding{Code: apiv1.ServiceMissing, Severity: apiv1.SeverityWarning, Namespace: set.Namespace, StatefulSet: set.Name,
		Details: apiv1.FindingDetails{Service: name}}}
	wanted := selectorFor(set)
	create := fmt.Sprintf("apiVersion: v1, kind: Service, metadata: {name: %s, namespace: %s}, spec: {clusterIP: None, selector: %s}", name, set.Namespace, flowMap(wanted))
	switch {
	case svc == nil:
		f.Reason = ServiceNotFound
		f.Message = fmt.Sprintf("StatefulSet %s names Service %q (spec.serviceName), which does not exist in namespace %s: its pods get no stable DNS names (%s-0.%s.%s.svc)",
			set.Name, name, set.Namespace, set.Name, name, set.Namespace)
		f.Short = fmt.Sprintf("Service %s does not exist: pods get no DNS names", name)
		f.Remedy = fmt.Sprintf("create the headless Service: %s apply -f - <<< '{%s}' (spec.serviceName cannot be changed)", d.opts.CLI, create)
		// kubectl create service selects app=<name> (k8s.io/kubectl@v0.35.4 pkg/cmd/create/create_service.go:175-176).
		if v, ok := podLabels["app"]; ok && v == name && len(wanted) == 1 && wanted["app"] == name {
			f.Remedy = fmt.Sprintf("%s create service clusterip %s --clusterip=None -n %s (it selects app=%s)", d.opts.CLI, name, set.Namespace, name)
		}
	case svc.Spec.ClusterIP != corev1.ClusterIPNone:
		f.Reason = ServiceNotHeadless
		kind := fmt.Sprintf("clusterIP %s", svc.Spec.ClusterIP)
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			kind = "type ExternalName"
		}
		f.Details.ClusterIP = model.Ptr(svc.Spec.ClusterIP)
		f.Message = fmt.Sprintf("Service %s, the governing Service of StatefulSet %s, is not headless (%s): cluster DNS publishes no per-pod names (%s-0.%s.%s.svc) for it",
			name, set.Name, kind, set.Name, name, set.Namespace)
		f.Short = fmt.Sprintf("Service %s is not headless (%s)", name, kind)
		f.Remedy = fmt.Sprintf("the clusterIP of a Service cannot be changed and spec.serviceName is immutable: recreate Service %s with clusterIP: None (%s delete service %s -n %s, then create {%s}); give clients that need a virtual IP a second Service",
			name, d.opts.CLI, name, set.Namespace, create)
	case len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(podLabels)):
		f.Reason = ServiceSelectorMismatch
		f.Details.Selector = model.Ptr(svc.Spec.Selector)
		f.Details.PodLabels = podLabels
		why := fmt.Sprintf("its selector %s does not select the pods (labels %s)", flowMap(svc.Spec.Selector), flowMap(podLabels))
		if len(svc.Spec.Selector) == 0 {
			why = "it has no selector, so no endpoints are created for the pods"
		}
		f.Message = fmt.Sprintf("Service %s, the governing Service of StatefulSet %s, does not cover its pods: %s; they get no stable DNS names (%s-0.%s.%s.svc)",
			name, set.Name, why, set.Name, name, set.Namespace)
		f.Short = fmt.Sprintf("Service %s does not select the pods", name)
		selector, _ := json.Marshal(wanted)
		f.Remedy = fmt.Sprintf(`%s patch service %s -n %s --type=json -p '[{"op":"replace","path":"/spec/selector","value":%s}]'`, d.opts.CLI, name, set.Namespace, selector)
	default:
		return
	}
	f.Details.Reason = f.Reason
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

// flowMap prints labels as a YAML flow map, keys sorted: {app: web}.
func flowMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + m[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
