package facts

import (
	"fmt"
	"testing"
)

// Event messages recorded from a v1.37.2 control plane (kube-apiserver with its default
// admission plugins, the StatefulSet controller) on 2026-11-26, and from OpenShift, where noted.
func TestParseEvent(t *testing.T) {
	cases := []struct {
		name, message string
		want          string
	}{
		{"quota on pods",
			`Create Pod web-2 in StatefulSet web failed error: pods "web-2" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`,
			`Pod web-2 (pod web-2): QuotaExceeded quota=pods short=[pods: 1]`},
		{"quota on claims",
			`Create Claim data-web-0 for Pod web-0 in StatefulSet web failed error: persistentvolumeclaims "data-web-0" is forbidden: exceeded quota: claims, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=0, limited: persistentvolumeclaims=0`,
			`PersistentVolumeClaim data-web-0 (pod web-0): QuotaExceeded quota=claims short=[persistentvolumeclaims: 1]`},
		{"quota on claims, as the pod's event wraps it",
			`Create Pod web-0 in StatefulSet web failed error: failed to create PVC data-web-0: persistentvolumeclaims "data-web-0" is forbidden: exceeded quota: claims, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=0, limited: persistentvolumeclaims=0`,
			`PersistentVolumeClaim data-web-0 (pod web-0): QuotaExceeded quota=claims short=[persistentvolumeclaims: 1]`},
		{"quota on cpu, several resources",
			`Create Pod db-1 in StatefulSet db failed error: pods "db-1" is forbidden: exceeded quota: compute, requested: limits.cpu=2,requests.cpu=1, used: limits.cpu=3,requests.cpu=500m, limited: limits.cpu=4,requests.cpu=2`,
			`Pod db-1 (pod db-1): QuotaExceeded quota=compute short=[limits.cpu: 1]`},
		{"quota requiring limits",
			`Create Pod db-0 in StatefulSet db failed error: pods "db-0" is forbidden: failed quota: compute: must specify limits.cpu for: app; limits.memory for: app`,
			`Pod db-0 (pod db-0): QuotaExceeded quota=compute missing=limits.cpu for: app; limits.memory for: app`},
		{"PodSecurity restricted",
			`Create Pod web-0 in StatefulSet web failed error: pods "web-0" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
			`Pod web-0 (pod web-0): PodSecurity level=restricted:latest checks=4 first=allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)`},
		{"ServiceAccount missing",
			`Create Pod web-0 in StatefulSet web failed error: pods "web-0" is forbidden: error looking up service account sa/nope: serviceaccount "nope" not found`,
			`Pod web-0 (pod web-0): ServiceAccountMissing sa=nope`},
		{"LimitRange",
			`Create Pod web-2 in StatefulSet web failed error: pods "web-2" is forbidden: maximum cpu usage per Container is 100m, but limit is 200m`,
			`Pod web-2 (pod web-2): LimitRange denial=maximum cpu usage per Container is 100m, but limit is 200m`},
		{"ValidatingAdmissionPolicy",
			`Create Pod web-1 in StatefulSet web failed error: pods "web-1" is forbidden: ValidatingAdmissionPolicy 'deny-unlabelled-pods' with binding 'deny-unlabelled-pods-binding' denied request: every pod needs a team label`,
			`Pod web-1 (pod web-1): AdmissionDenied ValidatingAdmissionPolicy deny-unlabelled-pods binding=deny-unlabelled-pods-binding denial=every pod needs a team label`},
		// The webhook format of statuserror.go:29@v1.37.2, as Gatekeeper's denial prints it.
		{"webhook (Gatekeeper)",
			`Create Pod web-0 in StatefulSet web failed error: admission webhook "validation.gatekeeper.sh" denied the request: [require-team-label] you must provide labels: {"team"}`,
			`Pod web-0 (pod web-0): AdmissionDenied webhook validation.gatekeeper.sh denial=[require-team-label] you must provide labels: {"team"}`},
		// OpenShift 3.11, as recorded in a public report; 4.x prefixes each error with its provider.
		{"SecurityContextConstraints (OpenShift)",
			`create Pod dublin-0 in StatefulSet dublin failed error: pods "dublin-0" is forbidden: unable to validate against any security context constraint: [fsGroup: Invalid value: []int64{0}: 0 is not an allowed group]`,
			`Pod dublin-0 (pod dublin-0): SecurityContextConstraints denial=[fsGroup: Invalid value: []int64{0}: 0 is not an allowed group]`},
		{"ValidatingAdmissionPolicy without a binding name",
			`Create Pod web-1 in StatefulSet web failed error: pods "web-1" is forbidden: ValidatingAdmissionPolicy 'deny-unlabelled-pods' denied request: every pod needs a team label`,
			`Pod web-1 (pod web-1): AdmissionDenied ValidatingAdmissionPolicy deny-unlabelled-pods denial=every pod needs a team label`},
		// Kyverno's denial spans lines (one per rule); the webhook format is statuserror.go's.
		{"webhook (Kyverno), several lines",
			"Create Pod web-0 in StatefulSet web failed error: admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Pod/shop/web-0 was blocked due to the following policies\n\nrequire-labels:\n  check-team: 'label team is required'",
			`Pod web-0 (pod web-0): AdmissionDenied webhook validate.kyverno.svc-fail denial=resource Pod/shop/web-0 was blocked due to the following policies require-labels: check-team: 'label team is required'`},
		// client-go's EventAggregator (tools/record/events_cache.go) once many similar Events came.
		{"aggregated Event",
			`(combined from similar events): Create Pod web-12 in StatefulSet web failed error: pods "web-12" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=12, limited: pods=12`,
			`Pod web-12 (pod web-12): QuotaExceeded quota=pods short=[pods: 1]`},
		{"anything else",
			`Create Pod web-0 in StatefulSet web failed error: Pod "web-0" is invalid: spec.containers[0].image: Required value`,
			`Pod web-0 (pod web-0): Other`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ok := ParseEvent(c.message)
			if !ok {
				t.Fatal("not recognised as a FailedCreate event")
			}
			if got := describe(r); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestParseEventIgnoresOtherEvents(t *testing.T) {
	for _, m := range []string{
		"Delete Pod web-0 in StatefulSet web failed error: pods \"web-0\" not found",
		"create Pod web-0 in StatefulSet web successful",
		"0/1 nodes are available: 1 Insufficient cpu.",
	} {
		if r, ok := ParseEvent(m); ok {
			t.Errorf("%q parsed as %+v", m, r)
		}
	}
}

func describe(r Refusal) string {
	s := fmt.Sprintf("%s %s (pod %s): %s", r.Kind, r.Name, r.Pod, r.Reason)
	switch r.Reason {
	case QuotaExceeded:
		s += " quota=" + r.Quota.Name
		if r.Quota.Missing != "" {
			s += " missing=" + r.Quota.Missing
		} else {
			s += fmt.Sprintf(" short=%v", r.Quota.Short)
		}
	case PodSecurity:
		s += fmt.Sprintf(" level=%s checks=%d first=%s", r.Level, len(r.Checks), r.Checks[0])
	case ServiceAccountMissing:
		s += " sa=" + r.ServiceAccount
	case LimitRange, SecurityContextConstraints:
		s += " denial=" + r.Denial
	case AdmissionDenied:
		s += " " + r.PolicyKind + " " + r.Policy
		if r.Binding != "" {
			s += " binding=" + r.Binding
		}
		s += " denial=" + r.Denial
	}
	return s
}
