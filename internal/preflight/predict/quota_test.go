package predict

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/stuck/facts"
)

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func quotaPod(name string, requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "test"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}}}
}

func clusterQuota(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) corev1.ResourceQuota {
	return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "test"}, Spec: corev1.ResourceQuotaSpec{Scopes: scopes},
		Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

// TestQuotaAdmissionTable ports cases of quota admission's own tests
// (plugin/pkg/admission/resourcequota/admission_test.go@v1.37.2), named after them: whether
// the pod is admitted, admission's message when it is not, and each quota's usage after.
func TestQuotaAdmissionTable(t *testing.T) {
	cases := []struct {
		name   string
		quotas []corev1.ResourceQuota
		pod    *corev1.Pod
		// refusal is the error text ("" admitted); used the quotas' usage after, by name.
		refusal string
		used    map[string]corev1.ResourceList
	}{{
		name:   "TestAdmitBelowQuotaLimit",
		quotas: []corev1.ResourceQuota{clusterQuota("quota", list("cpu", "3", "memory", "100Gi", "pods", "5"), list("cpu", "1", "memory", "50Gi", "pods", "3"))},
		pod:    quotaPod("allowed-pod", list("cpu", "100m", "memory", "2Gi"), nil),
		used:   map[string]corev1.ResourceList{"quota": list("cpu", "1100m", "memory", "52Gi", "pods", "4")},
	}, {
		name:    "TestAdmitExceedQuotaLimit",
		quotas:  []corev1.ResourceQuota{clusterQuota("quota", list("cpu", "3", "memory", "100Gi", "pods", "5"), list("cpu", "1", "memory", "50Gi", "pods", "3"))},
		pod:     quotaPod("not-allowed-pod", list("cpu", "3", "memory", "2Gi"), nil),
		refusal: `pods "not-allowed-pod" is forbidden: exceeded quota: quota, requested: cpu=3, used: cpu=1, limited: cpu=3`,
		used:    map[string]corev1.ResourceList{"quota": list("cpu", "1", "memory", "50Gi", "pods", "3")},
	}, {
		name:   "TestAdmitWhenUnrelatedResourceExceedsQuota",
		quotas: []corev1.ResourceQuota{clusterQuota("quota", list("services", "3", "pods", "4"), list("services", "4", "pods", "1"))},
		pod:    quotaPod("allowed-pod", nil, nil),
		used:   map[string]corev1.ResourceList{"quota": list("services", "4", "pods", "2")},
	}, {
		name: "TestAdmitBelowBestEffortQuotaLimit: a BestEffort pod is charged to the BestEffort quota only",
		quotas: []corev1.ResourceQuota{
			clusterQuota("quota", list("cpu", "3", "memory", "100Gi", "pods", "5"), list("cpu", "1", "memory", "50Gi", "pods", "3"), corev1.ResourceQuotaScopeNotBestEffort),
			clusterQuota("quota-besteffort", list("pods", "5"), list("pods", "3"), corev1.ResourceQuotaScopeBestEffort)},
		pod: quotaPod("allowed-pod", nil, nil),
		used: map[string]corev1.ResourceList{"quota": list("cpu", "1", "memory", "50Gi", "pods", "3"),
			"quota-besteffort": list("pods", "4")},
	}, {
		name: "quota fails, though covering quota for configured limited scope PriorityClassNameExists exists",
		quotas: []corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: "test"},
			Spec: corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpExists}}}},
			Status: corev1.ResourceQuotaStatus{Hard: list("memory", "10Gi"), Used: list("memory", "1Gi")}}},
		pod: func() *corev1.Pod {
			p := quotaPod("not-allowed-pod", list("cpu", "3", "memory", "20Gi"), nil)
			p.Spec.PriorityClassName = "fake-priority"
			return p
		}(),
		refusal: `pods "not-allowed-pod" is forbidden: exceeded quota: quota, requested: memory=20Gi, used: memory=1Gi, limited: memory=10Gi`,
		used:    map[string]corev1.ResourceList{"quota": list("memory", "1Gi")},
	}, {
		name:   "a Terminating quota does not charge a pod without an active deadline",
		quotas: []corev1.ResourceQuota{clusterQuota("terminating", list("pods", "0"), list("pods", "0"), corev1.ResourceQuotaScopeTerminating)},
		pod:    quotaPod("web-0", nil, nil),
		used:   map[string]corev1.ResourceList{"terminating": list("pods", "0")},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := NewQuotas(c.quotas, nil, nil, nil, time.Now())
			r := q.Pod(c.pod, nil, "web")
			got := ""
			if r != nil {
				got = r.Error
				if r.Reason != facts.QuotaExceeded {
					t.Errorf("reason %s", r.Reason)
				}
			}
			if got != c.refusal {
				t.Errorf("refusal %q\nwant    %q", got, c.refusal)
			}
			for _, u := range q.quotas {
				if !equalLists(u.used, c.used[u.quota.Name]) {
					t.Errorf("quota %s used %v, want %v", u.quota.Name, u.used, c.used[u.quota.Name])
				}
			}
		})
	}
}

func equalLists(a, b corev1.ResourceList) bool {
	a, b = removeZeros(a), removeZeros(b)
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		if o, ok := b[n]; !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

// TestQuotaCountsEveryPod: a dry run asks about one pod; the count names the first ordinal the
// quota refuses, frees what a replaced pod used, and charges claims.
func TestQuotaCountsEveryPod(t *testing.T) {
	now := time.Now()
	t.Run("three new pods against pods=2 with none used: the third is refused", func(t *testing.T) {
		q := NewQuotas([]corev1.ResourceQuota{clusterQuota("two-pods", list("pods", "2"), list("pods", "0"))}, nil, nil, nil, now)
		for i, want := range []string{"", "", `pods "web-2" is forbidden: exceeded quota: two-pods, requested: pods=1, used: pods=2, limited: pods=2`} {
			got := ""
			if r := q.Pod(quotaPod(podNameFor(i), nil, nil), nil, "web"); r != nil {
				got = r.Error
				if r.Quota == nil || r.Quota.Name != "two-pods" || len(r.Quota.Short) != 1 || r.Quota.Short[0] != "pods: 1" {
					t.Errorf("quota facts %+v", r.Quota)
				}
			}
			if got != want {
				t.Errorf("web-%d: %q, want %q", i, got, want)
			}
		}
	})
	t.Run("a replacement asking more cpu than the pod it replaces: only the difference is charged", func(t *testing.T) {
		old := quotaPod("web-1", list("cpu", "500m"), nil)
		q := NewQuotas([]corev1.ResourceQuota{clusterQuota("cpu", list("requests.cpu", "1"), list("requests.cpu", "1"))}, nil, nil, nil, now)
		if r := q.Pod(quotaPod("web-1", list("cpu", "500m"), nil), old, "web"); r != nil {
			t.Errorf("same request refused: %s", r.Error)
		}
		if r := q.Pod(quotaPod("web-0", list("cpu", "700m"), nil), quotaPod("web-0", list("cpu", "500m"), nil), "web"); r == nil ||
			r.Error != `pods "web-0" is forbidden: exceeded quota: cpu, requested: requests.cpu=700m, used: requests.cpu=500m, limited: requests.cpu=1` {
			t.Errorf("raised request: %+v", r)
		}
	})
	t.Run("a quota of the manifests counts the namespace's pods and claims as used", func(t *testing.T) {
		existing := []corev1.Pod{*quotaPod("other-0", nil, nil), *quotaPod("done", nil, nil)}
		existing[1].Status.Phase = corev1.PodSucceeded
		claims := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data-other-0"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast"), Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "5Gi")}}}}
		manifest := []corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Name: "team"},
			Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "2", "count/pods", "3", "fast.storageclass.storage.k8s.io/requests.storage", "8Gi")}}}
		q := NewQuotas(nil, manifest, existing, claims, now)
		if !equalLists(q.quotas[0].used, list("pods", "1", "count/pods", "2", "fast.storageclass.storage.k8s.io/requests.storage", "5Gi")) {
			t.Fatalf("used %v", q.quotas[0].used)
		}
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-web-0"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast"), Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "5Gi")}}}
		r := q.Claim(claim, "web-0", "web")
		if r == nil || r.Kind != facts.KindClaim || r.Error != `persistentvolumeclaims "data-web-0" is forbidden: exceeded quota: team, requested: fast.storageclass.storage.k8s.io/requests.storage=5Gi, used: fast.storageclass.storage.k8s.io/requests.storage=5Gi, limited: fast.storageclass.storage.k8s.io/requests.storage=8Gi` {
			t.Errorf("claim: %+v", r)
		}
		if r := q.Pod(quotaPod("web-0", nil, nil), nil, "web"); r != nil {
			t.Errorf("web-0 refused: %s", r.Error)
		}
		if r := q.Pod(quotaPod("web-1", nil, nil), nil, "web"); r == nil || r.Error != `pods "web-1" is forbidden: exceeded quota: team, requested: count/pods=1,pods=1, used: count/pods=3,pods=2, limited: count/pods=3,pods=2` {
			t.Errorf("web-1: %+v", r)
		}
	})
	t.Run("a quota the controller has not counted yet is left to admission", func(t *testing.T) {
		q := NewQuotas([]corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "0")}}}, nil, nil, nil, now)
		if r := q.Pod(quotaPod("web-0", nil, nil), nil, "web"); r != nil {
			t.Errorf("refused: %s", r.Error)
		}
	})
}

// podNameFor is web-<i>.
func podNameFor(i int) string { return "web-" + string(rune('0'+i)) }

func TestPodUsage(t *testing.T) {
	pod := quotaPod("p", list("cpu", "250m", "memory", "1Gi", "hugepages-2Mi", "2Mi", "example.com/gpu", "1"), list("cpu", "1", "memory", "2Gi"))
	want := list("count/pods", "1", "pods", "1", "cpu", "250m", "requests.cpu", "250m", "limits.cpu", "1",
		"memory", "1Gi", "requests.memory", "1Gi", "limits.memory", "2Gi", "hugepages-2Mi", "2Mi", "requests.hugepages-2Mi", "2Mi",
		"requests.example.com/gpu", "1")
	if got := PodUsage(pod, time.Now()); !equalLists(got, want) {
		t.Errorf("usage %v\nwant  %v", got, want)
	}
	pod.Status.Phase = corev1.PodFailed
	if got := PodUsage(pod, time.Now()); !equalLists(got, list("count/pods", "1")) {
		t.Errorf("failed pod: %v", got)
	}
}
