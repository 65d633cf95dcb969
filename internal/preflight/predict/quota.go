package predict

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubectl/pkg/util/qos"

	"github.com/stsdiag/stsdiag/stuck/facts"
)

// Quotas counts what ResourceQuota admission charges, object by object, as the controller creates
// a namespace's pods and claims. Admission checks each object alone against the quota's
// status.used (CheckRequest, k8s.io/apiserver pkg/admission/plugin/resourcequota/
// controller.go@v0.37.2): a dry run of one pod says nothing of the pods after it, so the count
// is kept here: replicas × a pod's usage against hard − used names the first object refused.
type Quotas struct {
	quotas []quotaUse
	now    time.Time
}

// quotaUse is one quota: its hard limits and what is used so far.
type quotaUse struct {
	quota corev1.ResourceQuota
	hard  corev1.ResourceList
	used  corev1.ResourceList
}

// NewQuotas starts a count from the namespace's quotas as the quota controller last wrote their
// status. A quota of the manifests (created by the same apply) has no status yet: its usage is
// what the namespace's pods and claims use now, as the quota controller would compute it
// (generic.CalculateUsageStats). A quota whose status the controller has not written is left to
// admission (it refuses "status unknown for quota", and the dry run says so).
func NewQuotas(cluster, manifest []corev1.ResourceQuota, pods []corev1.Pod, claims []corev1.PersistentVolumeClaim, now time.Time) *Quotas {
	q := &Quotas{now: now}
	for _, rq := range cluster {
		if len(rq.Status.Hard) > 0 {
			q.quotas = append(q.quotas, quotaUse{quota: rq, hard: rq.Status.Hard, used: rq.Status.Used.DeepCopy()})
		}
	}
	for _, rq := range manifest {
		u := quotaUse{quota: rq, hard: rq.Spec.Hard, used: corev1.ResourceList{}}
		for i := range pods {
			if matchesPod(&rq, &pods[i]) {
				u.used = add(u.used, mask(PodUsage(&pods[i], now), names(u.hard)))
			}
		}
		for i := range claims {
			if matchesClaim(&rq) {
				u.used = add(u.used, mask(ClaimUsage(&claims[i]), names(u.hard)))
			}
		}
		q.quotas = append(q.quotas, u)
	}
	return q
}

// Pod charges the creation of pod, after the deletion of old (a replacement: nil for a new
// pod), and returns the refusal of the first quota it exceeds (nil: admitted, and charged).
// When the controller deletes a pod to replace it, the quota controller takes its usage back
// before the new one is created.
func (q *Quotas) Pod(pod, old *corev1.Pod, statefulSet string) *facts.Refusal {
	if old != nil {
		for i := range q.quotas {
			u := &q.quotas[i]
			if matchesPod(&u.quota, old) {
				u.used = subtract(u.used, mask(PodUsage(old, q.now), names(u.hard)))
			}
		}
	}
	usage := PodUsage(pod, q.now)
	return q.charge(usage, func(u *quotaUse) bool { return matchesPod(&u.quota, pod) },
		facts.KindPod, "pods", pod.Name, pod.Name, statefulSet)
}

// Claim charges the creation of a claim for pod.
func (q *Quotas) Claim(claim *corev1.PersistentVolumeClaim, pod, statefulSet string) *facts.Refusal {
	return q.charge(ClaimUsage(claim), func(u *quotaUse) bool { return matchesClaim(&u.quota) },
		facts.KindClaim, "persistentvolumeclaims", claim.Name, pod, statefulSet)
}

// charge is CheckRequest's count for a create (controller.go:565-596@v0.37.2): for each quota
// that matches, the usage masked to its hard resources, added to status.used, must stay within
// hard; the refusal quotes requested, used and limited masked to the resources exceeded, as
// admission does (prettyPrint: sorted name=value).
func (q *Quotas) charge(usage corev1.ResourceList, matches func(*quotaUse) bool, kind, resourceName, name, pod, statefulSet string) *facts.Refusal {
	var charged []int
	for i := range q.quotas {
		u := &q.quotas[i]
		if !matches(u) {
			continue
		}
		requested := removeZeros(mask(usage, names(u.hard)))
		if len(requested) == 0 {
			continue
		}
		newUsage := add(u.used, requested)
		if exceeded := exceeds(mask(newUsage, names(requested)), u.hard); len(exceeded) > 0 {
			text := fmt.Sprintf("%s %q is forbidden: exceeded quota: %s, requested: %s, used: %s, limited: %s", resourceName, name, u.quota.Name,
				prettyPrint(mask(requested, exceeded)), prettyPrint(mask(u.used, exceeded)), prettyPrint(mask(u.hard, exceeded)))
			r := facts.NewRefusal(kind, name, pod, statefulSet, text)
			return &r
		}
		charged = append(charged, i)
	}
	for _, i := range charged {
		u := &q.quotas[i]
		u.used = add(u.used, removeZeros(mask(usage, names(u.hard))))
	}
	return nil
}

// PodUsage is what quota charges for a pod (PodUsageFunc and podComputeUsageHelper,
// pkg/quota/v1/evaluator/core/pods.go:294-411@v1.37.2): count/pods always; for a pod that is
// not terminal nor terminating past its grace period (QuotaV1Pod, :491-509) pods, and its
// requests and limits of cpu, memory and ephemeral storage (each request also under its bare
// name), hugepages and extended resources as requests.<name>.
func PodUsage(pod *corev1.Pod, now time.Time) corev1.ResourceList {
	out := corev1.ResourceList{"count/pods": resource.MustParse("1")}
	if !chargedPod(pod, now) {
		return out
	}
	out[corev1.ResourcePods] = resource.MustParse("1")
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	for _, r := range []struct{ name, request, limit corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.name]; ok {
			out[r.name], out[r.request] = q, q
		}
		if q, ok := limits[r.name]; ok {
			out[r.limit] = q
		}
	}
	for name, q := range requests {
		switch {
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			out[name], out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(name))] = q, q
		case strings.Contains(string(name), "/") && !strings.HasPrefix(string(name), "kubernetes.io/"):
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(name))] = q
		}
	}
	return out
}

// chargedPod is QuotaV1Pod (pods.go:491-509@v1.37.2).
func chargedPod(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		if now.After(pod.DeletionTimestamp.Add(grace)) {
			return false
		}
	}
	return true
}

// ClaimUsage is what quota charges for a claim (pvcEvaluator.Usage,
// pkg/quota/v1/evaluator/core/persistent_volume_claims.go@v1.37.2): the claim, its storage
// request, each also under its StorageClass.
func ClaimUsage(c *corev1.PersistentVolumeClaim) corev1.ResourceList {
	one := resource.MustParse("1")
	out := corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: one, "count/persistentvolumeclaims": one}
	class := ""
	if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	const suffix = ".storageclass.storage.k8s.io/"
	if class != "" {
		out[corev1.ResourceName(class+suffix+string(corev1.ResourcePersistentVolumeClaims))] = one
	}
	if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		out[corev1.ResourceRequestsStorage] = q
		if class != "" {
			out[corev1.ResourceName(class+suffix+string(corev1.ResourceRequestsStorage))] = q
		}
	}
	return out
}

// matchesPod is the pod evaluator's Matches (pods.go:203-222@v1.37.2, generic.Matches): a pod
// resource among the quota's hard ones, and every scope of the quota matching the pod
// (podMatchesScopeFunc, :350-379).
func matchesPod(rq *corev1.ResourceQuota, pod *corev1.Pod) bool {
	if !anyPodResource(names(hardOf(rq))) {
		return false
	}
	for _, s := range scopes(rq) {
		if !podInScope(s, pod) {
			return false
		}
	}
	return true
}

// matchesClaim: a claim resource among the hard ones, and no scope (the claim evaluator
// matches only the VolumeAttributesClass scope, which the StatefulSet's claims are not judged by).
func matchesClaim(rq *corev1.ResourceQuota) bool {
	if len(scopes(rq)) > 0 {
		return false
	}
	for _, n := range names(hardOf(rq)) {
		s := string(n)
		if n == corev1.ResourcePersistentVolumeClaims || n == corev1.ResourceRequestsStorage || s == "count/persistentvolumeclaims" ||
			strings.Contains(s, ".storageclass.storage.k8s.io/") {
			return true
		}
	}
	return false
}

func hardOf(rq *corev1.ResourceQuota) corev1.ResourceList {
	if len(rq.Status.Hard) > 0 {
		return rq.Status.Hard
	}
	return rq.Spec.Hard
}

// anyPodResource is whether the pod evaluator's MatchingResources (pods.go:207-222) finds any.
func anyPodResource(hard []corev1.ResourceName) bool {
	for _, n := range hard {
		switch n {
		case "count/pods", corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
			corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
			corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage:
			return true
		}
		if s := string(n); strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
			return true
		}
	}
	return false
}

// scopes is getScopeSelectorsFromQuota (apiserver pkg/quota/v1/generic/evaluator.go:171-182).
func scopes(rq *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range rq.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if rq.Spec.ScopeSelector != nil {
		out = append(out, rq.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// podInScope is podMatchesScopeFunc (pods.go:350-379@v1.37.2).
func podInScope(s corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) bool {
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminatingScope(pod)
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminatingScope(pod)
	case corev1.ResourceQuotaScopeBestEffort:
		return qos.GetPodQOS(pod) == corev1.PodQOSBestEffort
	case corev1.ResourceQuotaScopeNotBestEffort:
		return qos.GetPodQOS(pod) != corev1.PodQOSBestEffort
	case corev1.ResourceQuotaScopePriorityClass:
		if s.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != ""
		}
		op := map[corev1.ScopeSelectorOperator]selection.Operator{corev1.ScopeSelectorOpIn: selection.In,
			corev1.ScopeSelectorOpNotIn: selection.NotIn, corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist}[s.Operator]
		req, err := labels.NewRequirement(string(s.ScopeName), op, s.Values)
		if err != nil {
			return false
		}
		return labels.NewSelector().Add(*req).Matches(labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName})
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod)
	}
	return false
}

// terminatingScope is IsTerminating (pods.go:417-422@v1.37.2): an active deadline.
func terminatingScope(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= int64(0)
}

// crossNamespaceAffinity is usesCrossNamespacePodAffinity (pods.go:446-489@v1.37.2).
func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if len(t.Namespaces) != 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

// The ResourceList arithmetic of k8s.io/apiserver pkg/quota/v1/resources.go@v0.37.2 (Add,
// Subtract, Mask, LessThanOrEqual, RemoveZeros), here because that package reaches client-go.

func names(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	return out
}

func mask(l corev1.ResourceList, keep []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range keep {
		if q, ok := l[n]; ok {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

func add(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for n, q := range b {
		sum := out[n].DeepCopy()
		sum.Add(q)
		out[n] = sum
	}
	return out
}

func subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	for n, q := range b {
		if have, ok := out[n]; ok {
			have.Sub(q)
			out[n] = have
		}
	}
	return out
}

func removeZeros(l corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range l {
		if !q.IsZero() {
			out[n] = q
		}
	}
	return out
}

// exceeds lists the resources of a over their limit in b (LessThanOrEqual's exceeded list).
func exceeds(a, b corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for n, q := range a {
		if lim, ok := b[n]; ok && q.Cmp(lim) > 0 {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// prettyPrint is admission's (controller.go:741-754@v0.37.2): name=value, sorted by name.
func prettyPrint(l corev1.ResourceList) string {
	keys := names(l)
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, n := range keys {
		q := l[n]
		parts[i] = string(n) + "=" + q.String()
	}
	return strings.Join(parts, ",")
}
