package facts

// Why the API server refused an object the StatefulSet controller tried to create: ParseEvent
// reads the controller's FailedCreate Events and classifies the admission error (quota,
// PodSecurity, SecurityContextConstraints, ServiceAccount, LimitRange, a webhook or a
// ValidatingAdmissionPolicy) into a Refusal, part of the CreateFailed facts.

import (
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Reason classifies a refusal.
type Reason string

// Reasons, as details.reason of a PodCreateFailed finding.
const (
	QuotaExceeded              Reason = "QuotaExceeded"
	PodSecurity                Reason = "PodSecurity"
	SecurityContextConstraints Reason = "SecurityContextConstraints"
	ServiceAccountMissing      Reason = "ServiceAccountMissing"
	LimitRange                 Reason = "LimitRange"
	AdmissionDenied            Reason = "AdmissionDenied"
	Other                      Reason = "Other"
	// Unknown: the pod is missing and no FailedCreate Event says why (Events expire).
	Unknown Reason = "Unknown"
)

// Object kinds the controller creates.
const (
	KindPod   = "Pod"
	KindClaim = "PersistentVolumeClaim"
)

// Refusal is one failed create, as the controller's Event records it.
type Refusal struct {
	// Kind is Pod or PersistentVolumeClaim; Name the object's name; Pod the pod it was for.
	Kind, Name, Pod string
	// StatefulSet that tried.
	StatefulSet string
	// Error is the API server's error, as quoted by the Event.
	Error  string
	Reason Reason
	// Quota is set for QuotaExceeded.
	Quota *Quota
	// Level and Checks are set for PodSecurity: the enforced level ("restricted:latest") and
	// each failed check with what to set.
	Level  string
	Checks []string
	// ServiceAccount is the missing ServiceAccount (ServiceAccountMissing).
	ServiceAccount string
	// Policy names the webhook or ValidatingAdmissionPolicy that denied it (AdmissionDenied);
	// PolicyKind is "webhook" or "ValidatingAdmissionPolicy"; Binding the policy's binding.
	Policy, PolicyKind, Binding string
	// Denial is what the webhook or policy, or the LimitRange, said.
	Denial string
}

// Quota is a ResourceQuota that refused an object.
type Quota struct {
	Name string
	// Requested, Used and Limited are as the quota admission prints them ("pods=1").
	Requested, Used, Limited string
	// Missing is the resource the quota requires the object to set ("limits.cpu"), for a
	// "failed quota: NAME: must specify ..." refusal.
	Missing string
	// Short is, per resource over its limit, how much is missing ("pods: 1").
	Short []string
}

// The controller's Event messages (recordPodEvent and recordClaimEvent,
// pkg/controller/statefulset/stateful_pod_control.go:333-363@v1.37.2): the verb is title-cased
// there, lower case in older releases.
var (
	podEvent   = regexp.MustCompile(`(?s)^(?i:create) Pod (\S+) in StatefulSet (\S+) failed error: (.*)$`)
	claimEvent = regexp.MustCompile(`(?s)^(?i:create) Claim (\S+) for Pod (\S+) in StatefulSet (\S+) failed error: (.*)$`)
)

// ParseEvent reads a FailedCreate Event of the StatefulSet controller. ok is false for any other
// message.
func ParseEvent(message string) (r Refusal, ok bool) {
	// client-go's EventAggregator prefixes this once many similar Events came within minutes
	// (tools/record/events_cache.go).
	message = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(message), "(combined from similar events): "))
	if m := claimEvent.FindStringSubmatch(message); m != nil {
		r = Refusal{Kind: KindClaim, Name: m[1], Pod: m[2], StatefulSet: m[3], Error: m[4]}
	} else if m := podEvent.FindStringSubmatch(message); m != nil {
		r = Refusal{Kind: KindPod, Name: m[1], Pod: m[1], StatefulSet: m[2], Error: m[3]}
		// The pod's event of a claim that could not be created wraps the claim's error
		// (createPersistentVolumeClaims, stateful_pod_control.go:389@v1.37.2).
		if c := wrappedClaim.FindStringSubmatch(r.Error); c != nil {
			r.Kind, r.Name, r.Error = KindClaim, c[1], c[2]
		}
	} else {
		return Refusal{}, false
	}
	classify(&r)
	return r, true
}

// NewRefusal is the refusal of an object the API server refused with apiError (its error text,
// "pods \"web-0\" is forbidden: ..."): kind is KindPod or KindClaim, name the object's name, pod
// the pod it is for. Its reason and details are read as ParseEvent reads an Event's: a program
// that asks the API server itself (stsdiag preflight's dry runs) classifies its answer as check
// classifies the controller's Events.
func NewRefusal(kind, name, pod, statefulSet, apiError string) Refusal {
	r := Refusal{Kind: kind, Name: name, Pod: pod, StatefulSet: statefulSet, Error: apiError}
	classify(&r)
	return r
}

var wrappedClaim = regexp.MustCompile(`(?s)^failed to create PVC (\S+): (.*)$`)

// The admission errors, each from its plugin:
var (
	// staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go:622-623@v1.37.2
	exceeded = regexp.MustCompile(`exceeded quota: ([^,]+), requested: (.*?), used: (.*?), limited: (.*)$`)
	// ... controller.go:471@v1.37.2
	failedQuota = regexp.MustCompile(`failed quota: ([^:]+): must specify (.*)$`)
	// staging/src/k8s.io/pod-security-admission/admission/admission.go:480-484@v1.37.2
	podSecurity = regexp.MustCompile(`violates PodSecurity "([^"]+)": (.*)$`)
	// openshift/apiserver-library-go pkg/securitycontextconstraints/sccadmission/admission.go
	// (Admit and Validate)
	scc = regexp.MustCompile(`unable to validate against any security context constraint: ?(.*)$`)
	// plugin/pkg/admission/serviceaccount/admission.go:164,228,389@v1.37.2
	serviceAccount = regexp.MustCompile(`error looking up service account ([^/\s]+)/([^:\s]+): .*not found`)
	// plugin/pkg/admission/limitranger/admission.go:318-354@v1.37.2 (and the ratio check)
	limitRange = regexp.MustCompile(`((?:minimum|maximum) \S+ usage per (?:Container|Pod|PersistentVolumeClaim) is .*|\S+ max limit to request ratio per (?:Container|Pod) is .*)$`)
	// staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go:29@v1.37.2
	webhook = regexp.MustCompile(`(?s)admission webhook "([^"]+)" denied the request:?\s*(.*)$`)
	// staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go:305-307@v1.37.2
	policy = regexp.MustCompile(`(?s)ValidatingAdmissionPolicy '([^']+)'(?: with binding '([^']+)')? denied request: (.*)$`)
)

func classify(r *Refusal) {
	text := r.Error
	switch {
	case exceeded.MatchString(text):
		m := exceeded.FindStringSubmatch(text)
		r.Reason = QuotaExceeded
		r.Quota = &Quota{Name: m[1], Requested: m[2], Used: m[3], Limited: strings.TrimSpace(m[4])}
		r.Quota.Short = shortfall(r.Quota)
	case failedQuota.MatchString(text):
		m := failedQuota.FindStringSubmatch(text)
		r.Reason, r.Quota = QuotaExceeded, &Quota{Name: m[1], Missing: strings.TrimSpace(m[2])}
	case podSecurity.MatchString(text):
		m := podSecurity.FindStringSubmatch(text)
		r.Reason, r.Level, r.Checks = PodSecurity, m[1], splitTopLevel(m[2])
	case scc.MatchString(text):
		r.Reason, r.Denial = SecurityContextConstraints, strings.TrimSpace(scc.FindStringSubmatch(text)[1])
	case serviceAccount.MatchString(text):
		r.Reason, r.ServiceAccount = ServiceAccountMissing, serviceAccount.FindStringSubmatch(text)[2]
	case policy.MatchString(text):
		m := policy.FindStringSubmatch(text)
		r.Reason, r.PolicyKind, r.Policy, r.Binding, r.Denial = AdmissionDenied, "ValidatingAdmissionPolicy", m[1], m[2], oneLine(m[3])
	case webhook.MatchString(text):
		m := webhook.FindStringSubmatch(text)
		r.Reason, r.PolicyKind, r.Policy, r.Denial = AdmissionDenied, "webhook", m[1], oneLine(m[2])
	case limitRange.MatchString(text):
		r.Reason, r.Denial = LimitRange, limitRange.FindStringSubmatch(text)[1]
	default:
		r.Reason = Other
	}
}

// shortfall says, per resource, how much used + requested exceeds the limit.
func shortfall(q *Quota) []string {
	requested, used, limited := quantities(q.Requested), quantities(q.Used), quantities(q.Limited)
	var out []string
	for name, req := range requested {
		lim, ok := limited[name]
		if !ok {
			continue
		}
		need := used[name].DeepCopy()
		need.Add(req)
		need.Sub(lim)
		if need.Sign() > 0 {
			out = append(out, string(name)+": "+need.String())
		}
	}
	sort.Strings(out)
	return out
}

// quantities parses "pods=1,requests.cpu=500m".
func quantities(s string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		if q, err := resource.ParseQuantity(value); err == nil {
			out[corev1.ResourceName(name)] = q
		}
	}
	return out
}

// splitTopLevel splits "a (x, y), b (z)" at the commas outside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

// oneLine joins a multi-line denial (Kyverno writes one line per rule) with single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
