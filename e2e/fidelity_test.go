package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// The stuck rollouts a real kubelet produces (issue: readiness failures, pods stuck terminating
// behind a finalizer or on a lost node, an owner recreated over a terminating StatefulSet, and
// fix answered on a terminal while the kubelet churns the pod's status). Each premise is proven
// on the real controller first.
func TestRealKubeletFidelity(t *testing.T) {
	t.Parallel() // isolated namespaces; runs after the serial tests (TestWatch restarts kube-apiserver)
	testenv.TestInParallel(t, notReadyFeature(), finalizerFeature(), lostNodeFeature(), ownerRecreatedFeature(), promptUnderChurnFeature())
}

// notReadyFeature: probe-0 of the old revision runs but its readiness probe fails; the template is
// fixed; OrderedReady waits for probe-0 forever.
func notReadyFeature() features.Feature {
	const ns, name = "not-ready", "probe"
	return features.New("Running but never Ready (readiness probe)").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if err := scenario.NeverReadyRollout(ctx, cs, ns, name, 2, false); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: probe-0 stays on the old revision, not Ready, for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				pod, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-0", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if pod.Labels[appsv1.ControllerRevisionHashLabelKey] == set.Status.UpdateRevision || set.Status.ReadyReplicas != 0 {
					return fmt.Errorf("the controller moved: pod revision %s, %d ready", pod.Labels[appsv1.ControllerRevisionHashLabelKey], set.Status.ReadyReplicas)
				}
				if _, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("probe-1 was created")
				}
				return nil
			})
			return ctx
		}).
		Assess("within --not-ready-threshold (default 5m): no error", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json")
			if rep := decodeReport(t, r); r.code != 0 || len(harness.Errors(rep)) != 0 {
				t.Fatalf("a slow readiness within the threshold is not stuck: exit %d, %v", r.code, harness.Errors(rep))
			}
			return ctx
		}).
		Assess("past the threshold: StaleRevisionStuck NotReady with the probe output", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json", "--not-ready-threshold", "5s")
			rep := decodeReport(t, r)
			f := harness.FindingOf(rep, apiv1.StaleRevisionStuck, "probe-0")
			if r.code != 1 || f == nil || len(rep.Findings) != 1 {
				t.Fatalf("exit %d findings %v", r.code, harness.Codes(rep))
			}
			if f.Reason != "NotReady" || f.Image != scenario.UnreadyImage || f.Remedy != "kubectl delete pod probe-0 -n not-ready" ||
				!strings.Contains(f.Message, "last probe failure: Readiness probe failed: HTTP probe failed with statuscode: 503") {
				t.Errorf("finding %+v", f)
			}
			if blocks, _ := harness.Details(*f)["blocks"].([]any); len(blocks) != 1 || blocks[0] != "probe-1 (not created)" {
				t.Errorf("blocks %v", harness.Details(*f)["blocks"])
			}
			return ctx
		}).
		Assess("fix deletes it; the rollout completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--not-ready-threshold", "5s", "--wait=90s", "-o", "json")
			res := decodeFix(t, r)
			if r.code != 0 || len(res.Actions) != 1 || res.Actions[0].Pod != "probe-0" || res.Actions[0].Result != apiv1.ResultDone || res.Rollout != "complete" {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, clientset(t, cfg), ns, name)
			return ctx
		}).Feature()
}

func setPodFinalizers(ctx context.Context, cs kubernetes.Interface, ns, pod string, finalizers []string) error {
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s}}`, toJSON(finalizers))
	_, err := cs.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// finalizerFeature: held-1 of a live StatefulSet is deleted, but a finalizer nobody removes keeps
// it; a template change then never rolls (OrderedReady waits for the terminating pod).
func finalizerFeature() features.Feature {
	const ns, name, hold = "held-pod", "held", "e2e.stsdiag.io/hold"
	return features.New("pod stuck terminating behind a finalizer").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, name, scenario.GoodImage, 3, false), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 90*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := setPodFinalizers(ctx, cs, ns, name+"-1", []string{hold}); err != nil {
				t.Fatal(err)
			}
			if err := cs.CoreV1().Pods(ns).Delete(ctx, name+"-1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.SetImage(ctx, cs, ns, name, scenario.GoodImage+"-b"); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: held-1 stays terminating and nothing is updated for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				pod, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-1", metav1.GetOptions{})
				if err != nil || pod.DeletionTimestamp == nil {
					return fmt.Errorf("held-1 is not terminating: %v", err)
				}
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if set.Status.UpdatedReplicas != 0 && set.Status.UpdateRevision != set.Status.CurrentRevision {
					return fmt.Errorf("the rollout moved: %d updated", set.Status.UpdatedReplicas)
				}
				return nil
			})
			return ctx
		}).
		Assess("a deletion within --terminating-threshold is not reported", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json")
			if rep := decodeReport(t, r); r.code != 0 || len(harness.Errors(rep)) != 0 {
				t.Fatalf("exit %d errors %v", r.code, harness.Errors(rep))
			}
			return ctx
		}).
		Assess("past it: PodStuckTerminating naming the finalizer, fix leaves it to the user", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json", "--terminating-threshold", "5s")
			rep := decodeReport(t, r)
			f := harness.FindingOf(rep, apiv1.PodStuckTerminating, "held-1")
			if r.code != 1 || f == nil || len(harness.Errors(rep)) != 1 {
				t.Fatalf("exit %d findings %v", r.code, harness.Codes(rep))
			}
			finalizers, _ := harness.Details(*f)["finalizers"].([]any)
			if f.Reason != "Terminating" || len(finalizers) != 1 || finalizers[0] != hold || harness.Details(*f)["node"] != cluster.NodeName || harness.Details(*f)["nodeReady"] != "True" ||
				!strings.Contains(f.Remedy, `kubectl patch pod held-1 -n held-pod --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'`) {
				t.Errorf("finding %+v", f)
			}
			fix := stsdiagRun(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--terminating-threshold", "5s", "--force-lost-node", "-o", "json")
			if res := decodeFix(t, fix); fix.code != 1 || len(res.Actions) != 0 {
				t.Errorf("a finalizer is never force-deleted: exit %d %+v", fix.code, res)
			}
			return ctx
		}).
		Assess("once the finalizer goes the rollout completes and check is clean", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := setPodFinalizers(ctx, cs, ns, name+"-1", nil); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 90*time.Second); err != nil {
				t.Fatal(err)
			}
			if r := stsdiagRun(t, cfg, "check", "--openshift", "never", "-n", ns, "--terminating-threshold", "5s"); r.code != 0 {
				t.Errorf("exit %d", r.code)
			}
			return ctx
		}).Feature()
}

// lostNodeFeature: db-0 runs on lost-node; the node stops heartbeating (the real node lifecycle
// controller marks it Unknown), db-0 is then deleted and no kubelet ever confirms it.
func lostNodeFeature() features.Feature {
	const ns, name, node = "lost-node", "db", "lost-node"
	var podUID types.UID
	return features.New("pod stuck terminating on a node that stopped heartbeating").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if err := scenario.Volumes(ctx, cs, ns, 1); err != nil {
				t.Fatal(err)
			}
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": node, "kubernetes.io/os": "linux", "e2e.stsdiag.io/lost": "true"}},
				// Only db (which tolerates it) runs there: other tests' pods stay off the node to be lost.
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "e2e.stsdiag.io/lost", Value: "true", Effect: corev1.TaintEffectNoSchedule}}}}
			if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := waitNodeReady(ctx, cs, node, corev1.ConditionTrue); err != nil {
				t.Fatal(err)
			}
			set := scenario.StatefulSet(ns, name, scenario.GoodImage, 1, true)
			set.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
			set.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "e2e.stsdiag.io/lost", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			set.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "e2e.stsdiag.io/lost", Operator: corev1.NodeSelectorOpIn, Values: []string{"true"}}}}}}}}
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 90*time.Second); err != nil {
				t.Fatal(err)
			}
			pod, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-0", metav1.GetOptions{})
			if err != nil || pod.Spec.NodeName != node {
				t.Fatalf("db-0 is not on %s: %v", node, err)
			}
			podUID = pod.UID
			// The node's kubelet goes away: kwok stops heartbeating the node and handling its pod
			// (see the e2e.stsdiag.io/kubelet selectors in e2e/internal/cluster/stages.yaml.tmpl).
			stopped := []byte(`{"metadata":{"annotations":{"e2e.stsdiag.io/kubelet":"stopped"}}}`)
			if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, stopped, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name+"-0", types.MergePatchType, stopped, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := waitNodeReady(ctx, cs, node, corev1.ConditionUnknown); err != nil {
				t.Fatalf("the node lifecycle controller never marked lost-node Unknown: %v", err)
			}
			if err := cs.CoreV1().Pods(ns).Delete(ctx, name+"-0", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: db-0 stays terminating and is never replaced for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				pod, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-0", metav1.GetOptions{})
				if err != nil || pod.UID != podUID || pod.DeletionTimestamp == nil {
					return fmt.Errorf("db-0 went or was replaced: %v", err)
				}
				return nil
			})
			return ctx
		}).
		Assess("PodStuckTerminating with the node's state; fix needs --force-lost-node", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json", "--terminating-threshold", "5s")
			rep := decodeReport(t, r)
			f := harness.FindingOf(rep, apiv1.PodStuckTerminating, "db-0")
			if r.code != 1 || f == nil {
				t.Fatalf("exit %d findings %v", r.code, harness.Codes(rep))
			}
			if harness.Details(*f)["node"] != node || harness.Details(*f)["nodeReady"] != "Unknown" ||
				!strings.Contains(f.Remedy, "confirm node lost-node is really down") || !strings.Contains(f.Remedy, "kubectl delete pod db-0 -n lost-node --grace-period=0 --force") {
				t.Errorf("finding %+v", f)
			}
			plain := stsdiagRun(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--terminating-threshold", "5s", "-o", "json")
			if res := decodeFix(t, plain); plain.code != 1 || len(res.Actions) != 0 {
				t.Errorf("without --force-lost-node nothing is force-deleted: exit %d %+v", plain.code, res)
			}
			if pod, err := clientset(t, cfg).CoreV1().Pods(ns).Get(ctx, name+"-0", metav1.GetOptions{}); err != nil || pod.UID != podUID {
				t.Errorf("db-0 changed without --force-lost-node: %v", err)
			}
			return ctx
		}).
		Assess("fix --force-lost-node: force-deleted with the UID precondition, recreated elsewhere, PVC kept", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			before := harness.MarkClaims(ctx, t, cs, ns)
			r := stsdiagRun(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--terminating-threshold", "5s", "--force-lost-node", "--wait=90s", "-o", "json")
			res := decodeFix(t, r)
			if r.code != 0 || len(res.Actions) != 1 || res.Actions[0].Action != apiv1.ForceDeletePod || res.Actions[0].UID != string(podUID) ||
				res.Actions[0].Result != apiv1.ResultDone || res.Rollout != "complete" {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			pod, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-0", metav1.GetOptions{})
			if err != nil || pod.UID == podUID || pod.Spec.NodeName == node {
				t.Errorf("db-0 not recreated on a healthy node: %v", err)
			}
			harness.ClaimsKept(ctx, t, cs, ns, before)
			_ = cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
			return ctx
		}).Feature()
}

// waitNodeReady waits until the node's Ready condition has the status (and, for True, the
// not-ready taint is gone).
func waitNodeReady(ctx context.Context, cs kubernetes.Interface, name string, status corev1.ConditionStatus) error {
	return wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, taint := range n.Spec.Taints {
			if status == corev1.ConditionTrue && taint.Key == corev1.TaintNodeNotReady {
				return false, nil
			}
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == status, nil
			}
		}
		return false, nil
	})
}

// ownerRecreatedFeature: the LeaderWorkerSet case with a CRD owner: the owner is deleted and
// created again while its StatefulSet still terminates, and the new owner makes a revision.
func ownerRecreatedFeature() features.Feature {
	const ns, name, hold = "owner-recreated", "lws", "e2e.stsdiag.io/hold"
	var oldUID, newUID types.UID
	return features.New("owner recreated over a terminating StatefulSet").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := cluster.InstallOwnerCRD(ctx, cfg.Client().RESTConfig()); err != nil {
				t.Fatal(err)
			}
			dyn, err := dynamic.NewForConfig(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			owner := func() *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e2e.stsdiag.io/v1", "kind": "Owner", "metadata": map[string]any{"name": name}}}
			}
			old, err := dyn.Resource(cluster.OwnerResource).Namespace(ns).Create(ctx, owner(), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			oldUID = old.GetUID()
			set := scenario.StatefulSet(ns, name, scenario.GoodImage, 1, false)
			set.Finalizers = []string{hold}
			set.OwnerReferences = []metav1.OwnerReference{{APIVersion: "e2e.stsdiag.io/v1", Kind: "Owner", Name: name, UID: oldUID, Controller: ptr.To(true)}}
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 90*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := dyn.Resource(cluster.OwnerResource).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
				s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
				return err == nil && s.DeletionTimestamp != nil, nil
			})
			if err != nil {
				t.Fatal("the garbage collector never started deleting the owned StatefulSet")
			}
			created, err := dyn.Resource(cluster.OwnerResource).Namespace(ns).Create(ctx, owner(), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			newUID = created.GetUID()
			rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "lws-new-1", Namespace: ns,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "e2e.stsdiag.io/v1", Kind: "Owner", Name: name, UID: newUID, Controller: ptr.To(true)}}},
				Revision: 1, Data: runtime.RawExtension{Raw: []byte(`{}`)}}
			if _, err := cs.AppsV1().ControllerRevisions(ns).Create(ctx, rev, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: the old StatefulSet stays and the new owner cannot create its own for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil || s.DeletionTimestamp == nil {
					return fmt.Errorf("the StatefulSet is not terminating: %v", err)
				}
				_, err = cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, name, scenario.GoodImage, 1, false), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if !apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("a new StatefulSet %s could be created: %v", name, err)
				}
				return nil
			})
			return ctx
		}).
		Assess("StatefulSetTerminating at once (default threshold), naming both UIDs and the new revision", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json", "--fail-on", "warning")
			rep := decodeReport(t, r)
			f := harness.FindingOf(rep, apiv1.StatefulSetTerminating, "")
			if r.code != 1 || f == nil {
				t.Fatalf("exit %d findings %v", r.code, harness.Codes(rep))
			}
			revs, _ := harness.Details(*f)["newOwnerRevisions"].([]any)
			if f.Reason != "OwnerRecreated" || harness.Details(*f)["ownerUID"] != string(oldUID) || harness.Details(*f)["currentOwnerUID"] != string(newUID) ||
				len(revs) != 1 || revs[0] != "lws-new-1" || !strings.Contains(f.Message, string(oldUID)) || !strings.Contains(f.Message, string(newUID)) {
				t.Errorf("finding %+v", f)
			}
			cs := clientset(t, cfg)
			if _, err := cs.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).Feature()
}

// promptUnderChurnFeature: fix asks on a terminal; the person answers after 10 s while the
// kubelet flips web-0 between ErrImagePull and ImagePullBackOff (new resourceVersion each time).
func promptUnderChurnFeature() features.Feature {
	const ns = "fix-prompt"
	return features.New("fix on a terminal, answered after 10s under back-off churn").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if err := scenario.StuckRollout(ctx, cs, ns, "web", 2); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: web-0 stays on the old revision for 30s while its status churns", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			versions := map[string]bool{}
			reasons := map[string]bool{}
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				pod, err := cs.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if pod.Labels[appsv1.ControllerRevisionHashLabelKey] == set.Status.UpdateRevision {
					return fmt.Errorf("the controller replaced web-0")
				}
				versions[pod.ResourceVersion] = true
				if st := pod.Status.ContainerStatuses; len(st) > 0 && st[0].State.Waiting != nil {
					reasons[st[0].State.Waiting.Reason] = true
				}
				return nil
			})
			if len(versions) < 3 || !reasons["ErrImagePull"] || !reasons["ImagePullBackOff"] {
				t.Fatalf("the simulated kubelet does not churn: %d resourceVersions, reasons %v", len(versions), reasons)
			}
			return ctx
		}).
		Assess("answered y after 10s: deleted, exit 0, rollout complete", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			text, err := onTerminal(t, cfg, "y\n", func() {
				before, _ := cs.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
				time.Sleep(10 * time.Second)
				after, _ := cs.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
				if before.ResourceVersion == after.ResourceVersion {
					t.Errorf("web-0 did not change while the person read the plan (resourceVersion %s)", before.ResourceVersion)
				}
			}, "fix", "-n", ns, "--wait=90s")
			t.Logf("fix on a terminal:\n%s", text)
			if err != nil || !strings.Contains(text, "1 done, 0 skipped, 0 failed") || !strings.Contains(text, "rollout complete") {
				t.Fatalf("exit %v", err)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, "web")
			return ctx
		}).Feature()
}
