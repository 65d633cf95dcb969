package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// createCase is one way the real API server refuses what the StatefulSet controller creates.
type createCase struct {
	name string
	// setup makes the namespace refuse and creates StatefulSet web; it returns the pod the
	// controller cannot create.
	setup func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) string
	// object is details.object, reason details.reason; words must all appear in the message.
	object, reason string
	words          []string
}

// TestPodCreateFailed: for each admission refusal a local control plane produces (default
// admission plugins, the real StatefulSet controller), the premise is proven first — the
// missing pod stays missing and the set does not move for 30 s, and the controller recorded a
// FailedCreate Event — then check names the pod, the reason and the admission's own words.
func TestPodCreateFailed(t *testing.T) {
	t.Parallel()
	cases := []createCase{
		{name: "quota", object: "pod", reason: "QuotaExceeded", words: []string{"exceeded quota: pods", "limited: pods=2"},
			setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) string {
				quota(ctx, t, cs, ns, corev1.ResourcePods, "2")
				createSet(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 3, false))
				return "web-2"
			}},
		{name: "podsecurity", object: "pod", reason: "PodSecurity", words: []string{`violates PodSecurity "restricted:latest"`, "runAsNonRoot"},
			setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) string {
				labelNamespace(ctx, t, cs, ns, "pod-security.kubernetes.io/enforce", "restricted")
				createSet(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false))
				return "web-0"
			}},
		{name: "serviceaccount", object: "pod", reason: "ServiceAccountMissing", words: []string{`serviceaccount "nope" not found`},
			setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) string {
				set := scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false)
				set.Spec.Template.Spec.ServiceAccountName = "nope"
				createSet(ctx, t, cs, set)
				return "web-0"
			}},
		{name: "limitrange", object: "pod", reason: "LimitRange", words: []string{"maximum cpu usage per Container is 100m, but limit is 200m"},
			setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) string {
				createSet(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 3, false))
				if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 2*time.Minute); err != nil {
					t.Fatal(err)
				}
				lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "cpu-max", Namespace: ns},
					Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
						Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}
				if _, err := cs.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				// Mid-rollout: the controller deletes web-2 to update it and cannot create it again.
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
				set.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: cpu, Requests: cpu}
				if _, err := cs.AppsV1().StatefulSets(ns).Update(ctx, set, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				return "web-2"
			}},
		{name: "policy", object: "pod", reason: "AdmissionDenied", words: []string{"ValidatingAdmissionPolicy 'stsdiag-e2e-team-label'", "every pod needs a team label"},
			setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) string {
				denyPodsWithoutTeam(ctx, t, cs, ns)
				createSet(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false))
				return "web-0"
			}},
		{name: "claimquota", object: "claim", reason: "QuotaExceeded", words: []string{`persistentvolumeclaims "data-web-1" is forbidden`, "exceeded quota"},
			setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) string {
				if err := scenario.Volumes(ctx, cs, ns, 2); err != nil {
					t.Fatal(err)
				}
				quota(ctx, t, cs, ns, corev1.ResourcePersistentVolumeClaims, "1")
				createSet(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, true))
				return "web-1"
			}},
	}
	var fs []features.Feature
	for _, c := range cases {
		fs = append(fs, createFailedFeature(c))
	}
	testenv.TestInParallel(t, fs...)
}

func createFailedFeature(c createCase) features.Feature {
	ns := "create-" + c.name
	var pod string
	return features.New("PodCreateFailed/"+c.reason+"/"+c.name).
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			pod = c.setup(ctx, t, cs, ns)
			return ctx
		}).
		Assess("premise: the pod is never created, the set does not move for 30 s, a FailedCreate Event says why", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			neverCreated(ctx, t, clientset(t, cfg), ns, "web", pod, 30*time.Second)
			return ctx
		}).
		Assess("check: PodCreateFailed naming the pod, the reason and the admission's words", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
			rep := decodeReport(t, r)
			f := harness.FindingOf(rep, apiv1.PodCreateFailed, pod)
			if r.code != 1 || f == nil {
				t.Fatalf("exit %d, findings %v: want PodCreateFailed for %s, exit 1", r.code, harness.Codes(rep), pod)
			}
			if f.Severity != apiv1.SeverityError || harness.Detail(*f, "reason") != c.reason || harness.Detail(*f, "object") != c.object || f.Remedy == "" {
				t.Errorf("finding %s", toJSON(f))
			}
			for _, w := range c.words {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message lacks %q: %s", w, f.Message)
				}
			}
			if len(rep.StatefulSets) != 1 || rep.StatefulSets[0].Status != apiv1.StatusStuck {
				t.Errorf("statefulSets %+v, want web Stuck", rep.StatefulSets)
			}
			return ctx
		}).
		Assess("explain: the controller holds at that pod, to create it, and check's finding says why", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "explain", "web", "-n", ns, "-o", "json")
			var e apiv1.Explanation
			if err := json.Unmarshal([]byte(r.stdout), &e); err != nil || e.Kind != "Explanation" {
				t.Fatalf("not an Explanation (%v): %s", err, r.stdout)
			}
			var holding []string
			for _, o := range e.Ordinals {
				if o.Holds {
					holding = append(holding, o.Pod+"/"+o.Next+"/"+strings.SplitN(o.Why, ":", 2)[0])
				}
			}
			if want := pod + "/Create/PodCreateFailed"; r.code != 1 || len(holding) != 1 || holding[0] != want {
				t.Errorf("exit %d, holding %v: want exit 1 and [%s]", r.code, holding, want)
			}
			return ctx
		}).
		Assess("wait: Stuck, exit 1, with the same finding", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "wait", "web", "-n", ns, "--hold", "3s", "--timeout", "2m", "-o", "json")
			res := decodeWait(t, r)
			if r.code != 1 || res.Result != apiv1.WaitStuck || len(res.Findings) == 0 || res.Findings[0].Code != apiv1.PodCreateFailed || res.Findings[0].Pod != pod {
				t.Errorf("wait: exit %d, %s, findings %+v: want Stuck with PodCreateFailed for %s", r.code, res.Result, res.Findings, pod)
			}
			return ctx
		}).
		Assess("fix repairs nothing and says why", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--yes", "-o", "json")
			if r.code != 1 || !strings.Contains(r.stdout, `"actions": []`) || !strings.Contains(r.stdout, string(apiv1.PodCreateFailed)) {
				t.Errorf("fix: exit %d, want 1 with no action and PodCreateFailed unrepaired", r.code)
			}
			return ctx
		}).Feature()
}

// neverCreated proves the premise: pod stays missing, the set's status does not change for d,
// and the controller's FailedCreate Event names the pod.
func neverCreated(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, set, pod string, d time.Duration) {
	t.Helper()
	state := func() string {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, set, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("replicas %d ready %d updated %d current %s update %s", s.Status.Replicas, s.Status.ReadyReplicas,
			s.Status.UpdatedReplicas, s.Status.CurrentRevision, s.Status.UpdateRevision)
	}
	// The 30 s start once the controller has tried and failed (its FailedCreate Event names the
	// pod) and its status has settled: two reads 2 s apart agree.
	holdsUntil(ctx, t, time.Minute, func(ctx context.Context) bool { return failedCreate(ctx, t, cs, ns, set, pod) != "" })
	first := harness.Settled(state)
	harness.HoldsFor(ctx, t, d, func(ctx context.Context) error {
		if _, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %s exists (or cannot be read: %v)", pod, err)
		}
		if now := state(); now != first {
			return fmt.Errorf("the set moved: %s → %s", first, now)
		}
		return nil
	})
	t.Logf("FailedCreate: %s", failedCreate(ctx, t, cs, ns, set, pod))
}

// failedCreate returns the message of the StatefulSet's FailedCreate Event naming the pod, or "".
func failedCreate(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, set, pod string) string {
	t.Helper()
	events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate,involvedObject.name=" + set})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, pod) {
			return e.Message
		}
	}
	return ""
}

func createSet(ctx context.Context, t *testing.T, cs kubernetes.Interface, set *appsv1.StatefulSet) {
	t.Helper()
	if _, err := cs.AppsV1().StatefulSets(set.Namespace).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// quota makes a ResourceQuota and waits for the quota controller to fill its status (admission
// refuses everything it counts until then).
func quota(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, name corev1.ResourceName, hard string) {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: string(name), Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{name: resource.MustParse(hard)}}}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holdsUntil(ctx, t, 30*time.Second, func(ctx context.Context) bool {
		got, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, q.Name, metav1.GetOptions{})
		return err == nil && got.Status.Hard != nil
	})
}

func labelNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, key, value string) {
	t.Helper()
	n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels[key] = value
	if _, err := cs.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// denyPodsWithoutTeam makes a ValidatingAdmissionPolicy refusing pods without a team label in
// the namespace, and waits until it refuses one.
func denyPodsWithoutTeam(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	const name = "stsdiag-e2e-team-label"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "has(object.metadata.labels) && 'team' in object.metadata.labels",
				Message: "every pod needs a team label"}},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: scenario.GoodImage}}}}
	holdsUntil(ctx, t, 30*time.Second, func(ctx context.Context) bool {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "every pod needs a team label")
	})
}

// holdsUntil waits up to d for cond.
func holdsUntil(ctx context.Context, t *testing.T, d time.Duration, cond func(ctx context.Context) bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(ctx); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not so after %s", d)
		}
	}
}

// TestNoSilentProgress: rollouts that progress, or are held by design, get no error finding —
// a partitioned rollout, a long minReadySeconds, and a FailedCreate Event for a pod that was
// created once its quota was raised.
func TestNoSilentProgress(t *testing.T) {
	t.Parallel()
	const ns = "progress-controls"
	f := features.New("negative controls").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			part := scenario.StatefulSet(ns, "part", scenario.GoodImage, 3, false)
			slow := scenario.StatefulSet(ns, "slow", scenario.GoodImage, 3, false)
			slow.Spec.MinReadySeconds = 600
			for _, s := range []*appsv1.StatefulSet{part, slow} {
				createSet(ctx, t, cs, s)
			}
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, "part", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "part", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			set.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}
			set.Spec.Template.Labels["rev"] = "2"
			if _, err := cs.AppsV1().StatefulSets(ns).Update(ctx, set, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			// A quota refuses web-1 until it is raised: the FailedCreate Event stays.
			quota(ctx, t, cs, ns, corev1.ResourcePods, "4")
			createSet(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false))
			holdsUntil(ctx, t, time.Minute, func(ctx context.Context) bool {
				ev, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate,involvedObject.name=web"})
				return err == nil && len(ev.Items) > 0
			})
			q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("20")
			if _, err := cs.CoreV1().ResourceQuotas(ns).Update(ctx, q, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: the partition holds, slow creates pods one by one, web's FailedCreate Event outlived its cause", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			holdsUntil(ctx, t, time.Minute, func(ctx context.Context) bool {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, "part-2", metav1.GetOptions{})
				s, err2 := cs.AppsV1().StatefulSets(ns).Get(ctx, "part", metav1.GetOptions{})
				return err == nil && err2 == nil && p.Labels[appsv1.ControllerRevisionHashLabelKey] == s.Status.UpdateRevision &&
					s.Status.UpdatedReplicas == 1 && s.Status.ReadyReplicas == 3
			})
			if _, err := cs.CoreV1().Pods(ns).Get(ctx, "slow-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("slow-1 exists before slow-0 was available for minReadySeconds (%v)", err)
			}
			ev, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate,involvedObject.name=web"})
			if err != nil || len(ev.Items) == 0 {
				t.Fatalf("no FailedCreate Event left for web (%v)", err)
			}
			return ctx
		}).
		Assess("check: no error finding", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
			rep := decodeReport(t, r)
			if r.code != 0 || len(harness.Errors(rep)) != 0 {
				t.Errorf("exit %d, findings %v: want none", r.code, harness.Codes(rep))
			}
			return ctx
		}).Feature()
	testenv.TestInParallel(t, f)
}
