package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// run runs the built binary against the cluster.
func run(t *testing.T, cfg *envconf.Config, args ...string) harness.Result {
	t.Helper()
	return harness.Run(t, cfg.KubeconfigFile(), binDir, nil, stsdiag, args...)
}

func clientset(t *testing.T, cfg *envconf.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// rawFinding is the finding of a code about a pod as check's JSON has it, keys and all (details
// keys are read by name, whatever version of FindingDetails this package was built with).
func rawFinding(t *testing.T, stdout string, code apiv1.Code, pod string) map[string]any {
	t.Helper()
	var doc struct {
		Findings []map[string]any `json:"findings"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not a JSON report: %v", err)
	}
	for _, f := range doc.Findings {
		if f["code"] == string(code) && f["pod"] == pod {
			return f
		}
	}
	return nil
}

// detailOf reads details.key of a raw finding.
func detailOf(f map[string]any, key string) any {
	d, _ := f["details"].(map[string]any)
	return d[key]
}

// setup makes a namespace and n hostPath volumes under the node's directory.
func setup(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, volumes int) {
	t.Helper()
	if err := scenario.Namespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	if err := scenario.VolumesAt(ctx, cs, ns, volumes, local.NodeDir()+"/volumes"); err != nil {
		t.Fatal(err)
	}
}

// appSet is a StatefulSet of the suite's app image (serving HTTP unless args say otherwise) with
// a claim template and an HTTP readiness probe on /ready.
func appSet(ns, name string, replicas int32, args ...string) *appsv1.StatefulSet {
	set := scenario.StatefulSet(ns, name, local.Image(cluster.AppImage), replicas, true)
	c := &set.Spec.Template.Spec.Containers[0]
	c.Args = args
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	return set
}

func create(ctx context.Context, t *testing.T, cs kubernetes.Interface, set *appsv1.StatefulSet) {
	t.Helper()
	if _, err := cs.AppsV1().StatefulSets(set.Namespace).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// update changes a StatefulSet's template (retrying on conflicts with the controller's status
// writes) and waits until the controller has observed it.
func update(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, change func(*appsv1.StatefulSet)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(set)
		_, err = cs.AppsV1().StatefulSets(ns).Update(ctx, set, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitObserved(ctx, cs, ns, name); err != nil {
		t.Fatal(err)
	}
}

// waitPod polls a pod until ok says so, failing with the last state seen.
func waitPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, within time.Duration, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return ok(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: %s not seen within %s; last status %s", ns, name, what, within, statusJSON(last))
	}
	return last
}

func statusJSON(p *corev1.Pod) string {
	if p == nil {
		return "(no pod)"
	}
	data, _ := json.Marshal(p.Status)
	return string(data)
}

// onUpdateRevision says whether a pod runs the StatefulSet's update revision.
func onUpdateRevision(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, set string) bool {
	s, err := cs.AppsV1().StatefulSets(p.Namespace).Get(ctx, set, metav1.GetOptions{})
	return err == nil && p.Labels[appsv1.ControllerRevisionHashLabelKey] == s.Status.UpdateRevision
}

// containerStatus returns the status of a container (init containers included) by name.
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func waitingReason(p *corev1.Pod, container string) string {
	if st := containerStatus(p, container); st != nil && st.State.Waiting != nil {
		return st.State.Waiting.Reason
	}
	return ""
}

// eventWith waits until the pod has an Event of the reason whose message contains phrase, and
// returns that message: the kubelet's own words.
func eventWith(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, pod, reason, phrase string, within time.Duration) string {
	t.Helper()
	var seen []string
	var msg string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range list.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == reason && strings.Contains(e.Message, phrase) {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s Event containing %q for %s/%s within %s; events: %s", reason, phrase, ns, pod, within, strings.Join(seen, " | "))
	}
	return msg
}

// frozen proves on the real controller and kubelet that a rollout does not move for d: the
// StatefulSet's revisions and updated count, and every pod's identity and revision, stay as
// they are, the rollout is not complete, and kubelet (checked on each poll) still holds.
func frozen(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, d time.Duration, kubelet func(ctx context.Context) error) {
	t.Helper()
	read := func() string {
		set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			t.Fatal(err)
		}
		s := fmt.Sprintf("updated=%d current=%s update=%s complete=%v", set.Status.UpdatedReplicas, set.Status.CurrentRevision,
			set.Status.UpdateRevision, set.Status.UpdatedReplicas == *set.Spec.Replicas && set.Status.ReadyReplicas == *set.Spec.Replicas)
		for _, p := range pods.Items {
			s += fmt.Sprintf(" %s/%s/%s/deleting=%v", p.Name, p.UID, p.Labels[appsv1.ControllerRevisionHashLabelKey], p.DeletionTimestamp != nil)
		}
		return s
	}
	first := harness.Settled(read)
	if strings.Contains(first, "complete=true") {
		t.Fatalf("%s/%s is complete: %s", ns, name, first)
	}
	harness.HoldsFor(ctx, t, d, func(ctx context.Context) error {
		if now := read(); now != first {
			return fmt.Errorf("%s/%s moved by itself: %s → %s", ns, name, first, now)
		}
		return kubelet(ctx)
	})
}

// pollCheck runs `check -o json` with args until the finding of code about pod appears (at most
// within), and returns that run and the finding as the JSON has it.
func pollCheck(t *testing.T, cfg *envconf.Config, ns string, code apiv1.Code, pod string, within time.Duration, args ...string) (harness.Result, map[string]any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := run(t, cfg, append([]string{"check", "--openshift", "never", "-n", ns, "-o", "json"}, args...)...)
		harness.DecodeReport(t, r.Stdout)
		if f := rawFinding(t, r.Stdout, code, pod); f != nil {
			return r, f
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s finding for %s within %s; last report:\n%s", code, pod, within, r.Stdout)
		}
		time.Sleep(3 * time.Second)
	}
}

// num reads a JSON number (float64) as an int, -1 if it is not one.
func num(v any) int {
	f, ok := v.(float64)
	if !ok {
		return -1
	}
	return int(f)
}
