package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestTriagedCheck: check -A reads pods, claims, revisions and Events only where a StatefulSet's
// status is not settled, and reads everything when kube-controller-manager, whose statuses it
// trusts, does not renew its leader Lease.
//
// It runs on a control plane of its own whose kube-controller-manager runs with leader election
// (cluster.LeaderElect), as on every real cluster: the shared one runs without (no Lease, so
// check -A assumes the statuses current: TestStuckRollout), and it must not be paused for
// longer than its Lease's 15 s + the 30 s skew stsdiag allows while other tests run — their
// check -A would read everything and report ControllerManagerNotRunning, and after a pause that
// long a leader-electing controller manager may exit when it resumes (its renew deadline
// passed). Here it is alone: the request counts are computed from the objects this test
// created and no other test's namespaces.
//
// Several namespaces of settled StatefulSets (and a Deployment's pods) and one with
// kubernetes#67250: the triaged check -A and check -A --full give the same report; the triaged
// one's requests are computed from the objects (the namespaces whose StatefulSets the status
// calls unsettled are read deep, 5 LISTs each); it receives fewer bytes. Then the stopped
// controller: kube-controller-manager is paused (SIGSTOP), a pod of a settled StatefulSet
// breaks, and the premise is proven on the real system (the Lease's renewTime does not move for
// over 45 s while the StatefulSet's status still says settled and the pod is broken); both
// reads report the pod, and the triaged one names the stopped controller. Once it runs again
// and renews its Lease, the triaged read no longer does.
func TestTriagedCheck(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	cl := cluster.New(filepath.Join(logDir, "triage"))
	cl.LeaderElect = true
	if _, err := cl.Create(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Destroy(context.Background()); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	if err := cl.WaitForControlPlane(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane with leader election ready in %s (logs: %s)", time.Since(start).Round(100*time.Millisecond), cl.LogDir())
	kubeconfig := cl.GetKubeconfig()
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, args ...string) (harness.Result, apiv1.Report, stats) {
		t.Helper()
		r := harness.Run(t, kubeconfig, binDir, []string{"STSDIAG_REQUEST_STATS=1"}, stsdiag, append([]string{"check", "-A", "-o", "json"}, args...)...)
		return r, harness.DecodeReport(t, r.Stdout), requestStats(t, r.Stderr)
	}
	// both runs check -A and check -A --full back to back until they give the same report: the
	// simulated node flips web-0's pull error between ErrImagePull and ImagePullBackOff every
	// 3-5 s (a new resourceVersion, an Event counted again), so two reads a second apart may see
	// two states of the cluster. A read that misses something differs every time.
	both := func(t *testing.T) (triaged, full harness.Result, triagedRep, fullRep apiv1.Report, triagedStats, fullStats stats) {
		t.Helper()
		for try := 1; ; try++ {
			triaged, triagedRep, triagedStats = check(t)
			full, fullRep, fullStats = check(t, "--full")
			a, b := comparable(t, triagedRep), comparable(t, fullRep)
			if a == b {
				return
			}
			if try == 5 {
				t.Fatalf("5 times a different report; the last, triaged:\n%s\nfull:\n%s", a, b)
			}
			t.Logf("try %d: the reports differ; again", try)
		}
	}

	// The cluster: three namespaces of settled StatefulSets (one with a Deployment's pods too),
	// and kubernetes#67250 in a fourth.
	settled := []string{"triage-a", "triage-b", "triage-c"}
	const stuckNS = "triage-stuck"
	for _, ns := range append(settled, stuckNS) {
		if err := scenario.Namespace(ctx, cs, ns); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range settled {
		if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, "db", scenario.GoodImage, 2, false), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	front := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: "triage-a"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "front"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "front"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "front", Image: scenario.GoodImage}}}}}}
	if _, err := cs.AppsV1().Deployments("triage-a").Create(ctx, front, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := scenario.StuckRollout(ctx, cs, stuckNS, "web", 2); err != nil {
		t.Fatal(err)
	}
	for _, ns := range settled {
		if err := scenario.WaitRolloutComplete(ctx, cs, ns, "db", 90*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	lease := renewedLease(ctx, t, cs, time.Minute)
	t.Logf("Lease kube-system/kube-controller-manager held by %s, renewed %s", *lease.Spec.HolderIdentity, lease.Spec.RenewTime.UTC().Format(time.RFC3339Nano))

	t.Run("triaged and full give the same report; the triaged requests are computed from the objects", func(t *testing.T) {
		// The premise, on the real controller: web-0 of triage-stuck stays on the old revision.
		harness.ProvenStuck(ctx, t, cs, stuckNS, "web", 10*time.Second)
		deep := unsettledNamespaces(ctx, t, cs)
		if fmt.Sprint(deep) != "["+stuckNS+"]" {
			t.Fatalf("namespaces the statuses call unsettled: %v; want [%s] (the premise)", deep, stuckNS)
		}
		triaged, full, triagedRep, _, triagedStats, fullStats := both(t)
		if triaged.Code != 1 || full.Code != 1 {
			t.Fatalf("exit %d triaged, %d full; want 1 and 1", triaged.Code, full.Code)
		}
		if f := harness.FindingOf(triagedRep, apiv1.StaleRevisionStuck, "web-0"); f == nil || f.Namespace != stuckNS || len(triagedRep.Findings) != 1 {
			t.Errorf("findings %v; want StaleRevisionStuck/web-0 of %s alone", harness.Codes(triagedRep), stuckNS)
		}
		if len(triagedRep.StatefulSets) != len(settled)+1 {
			t.Errorf("%d StatefulSets in the report, want %d", len(triagedRep.StatefulSets), len(settled)+1)
		}
		if cm := triagedRep.Server.ControllerManager; cm == nil || cm.State != "Renewed" || cm.Lease != "kube-system/kube-controller-manager" || cm.Holder == "" {
			t.Errorf("server.controllerManager %+v; want the Lease Renewed", cm)
		}
		if want := triagedRequests(len(deep)); triagedStats.requests != want {
			t.Errorf("triaged check -A made %d requests; want %d (8 + 5 × %d namespaces read deep)", triagedStats.requests, want, len(deep))
		}
		if want := fullRequests(ctx, t, cs); fullStats.requests != want {
			t.Errorf("check -A --full made %d requests; want %d", fullStats.requests, want)
		}
		// One page per kind either way: the triaged read makes more requests than the full one
		// here (8 + 5 per namespace read deep, against 11), and receives less.
		if triagedStats.bytes >= fullStats.bytes {
			t.Errorf("triaged check -A received %d bytes, --full %d: want fewer", triagedStats.bytes, fullStats.bytes)
		}
		t.Logf("triaged: %d requests, %d bytes; full: %d requests, %d bytes (%.2f×)", triagedStats.requests, triagedStats.bytes,
			fullStats.requests, fullStats.bytes, float64(triagedStats.bytes)/float64(fullStats.bytes))
	})

	t.Run("the stopped controller: both reads report the broken pod, the triaged one names the Lease", func(t *testing.T) {
		const ns, set, pod = "triage-a", "db", "db-1"
		renewedLease(ctx, t, cs, time.Minute)
		if err := cl.PauseControllerManager(); err != nil {
			t.Fatal(err)
		}
		paused := true
		t.Cleanup(func() {
			if paused {
				_ = cl.ResumeControllerManager()
			}
		})
		time.Sleep(time.Second) // a renewal sent just before the pause lands
		before, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kube-controller-manager paused; its Lease was last renewed %s", before.Spec.RenewTime.UTC().Format(time.RFC3339Nano))
		breakPod(ctx, t, cs, ns, pod)

		// The premise, on the real system: no renewal for over 45 s (the Lease's 15 s and the
		// 30 s skew check allows), while the StatefulSet's status still says settled and the pod
		// stays broken.
		renewed := before.Spec.RenewTime.Time
		for {
			l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !l.Spec.RenewTime.Equal(before.Spec.RenewTime) {
				t.Fatalf("the Lease was renewed at %s while kube-controller-manager is paused: the premise does not hold", l.Spec.RenewTime.UTC().Format(time.RFC3339Nano))
			}
			s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, set, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !statusSettled(s) {
				t.Fatalf("%s/%s's status no longer says settled (%+v): the premise does not hold", ns, set, s.Status)
			}
			p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if harness.PodReady(p) {
				t.Fatalf("%s/%s is Ready again: the premise does not hold", ns, pod)
			}
			if time.Since(renewed) > 50*time.Second {
				break
			}
			time.Sleep(2 * time.Second)
		}
		t.Logf("premise: the Lease not renewed for %s, %s/%s's status settled, %s not Ready", time.Since(renewed).Round(time.Second), ns, set, pod)

		// A Lease not renewed: everything is read, as --full reads it (the same report).
		triaged, full, triagedRep, fullRep, triagedStats, fullStats := both(t)
		if full.Code != 1 || triaged.Code != 1 {
			t.Fatalf("exit %d full, %d triaged; want 1 and 1", full.Code, triaged.Code)
		}
		for name, rep := range map[string]apiv1.Report{"full": fullRep, "triaged": triagedRep} {
			if f := harness.FindingOf(rep, apiv1.CurrentRevisionFailing, pod); f == nil || f.Namespace != ns || f.Reason != "CrashLoopBackOff" {
				t.Errorf("%s: findings %v; want CurrentRevisionFailing/%s (CrashLoopBackOff) of %s", name, harness.Codes(rep), pod, ns)
			}
		}
		stale := harness.ByCode(triagedRep, apiv1.ControllerManagerNotRunning)
		if len(stale) != 1 || harness.Detail(stale[0], "lease") != "kube-system/kube-controller-manager" || stale[0].Severity != apiv1.SeverityError ||
			!strings.Contains(stale[0].Message, "kube-system/kube-controller-manager") || harness.Detail(stale[0], "holder") != *before.Spec.HolderIdentity {
			t.Errorf("triaged: ControllerManagerNotRunning %+v; want one naming the Lease and its holder %s", stale, *before.Spec.HolderIdentity)
		}
		if cm := triagedRep.Server.ControllerManager; cm == nil || cm.State != "NotRenewed" || cm.Lease != "kube-system/kube-controller-manager" {
			t.Errorf("server.controllerManager %+v; want the Lease NotRenewed", cm)
		}
		if want := fullRequests(ctx, t, cs); triagedStats.requests != want || fullStats.requests != want {
			t.Errorf("%d requests triaged, %d full; want %d each (everything read)", triagedStats.requests, fullStats.requests, want)
		}

		if err := cl.ResumeControllerManager(); err != nil {
			t.Fatal(err)
		}
		paused = false
		// A leader-electing controller manager whose renew deadline passed while it was stopped
		// may exit when it resumes; the kubelet of a real control plane starts it again.
		time.Sleep(3 * time.Second)
		if exited, why := cl.ControllerManagerExited(); exited {
			t.Logf("kube-controller-manager exited on resuming (%v): started again", why)
			if err := cl.RestartControllerManager(); err != nil {
				t.Fatal(err)
			}
		}
		after := renewedLease(ctx, t, cs, 90*time.Second)
		t.Logf("Lease renewed again %s by %s", after.Spec.RenewTime.UTC().Format(time.RFC3339Nano), *after.Spec.HolderIdentity)
		// The controller catches up with the broken pod: the status no longer says settled.
		err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, set, metav1.GetOptions{})
			return err == nil && !statusSettled(s), nil
		})
		if err != nil {
			t.Fatalf("%s/%s's status still says settled a minute after the controller resumed", ns, set)
		}
		deep := unsettledNamespaces(ctx, t, cs)
		if fmt.Sprint(deep) != fmt.Sprintf("[%s %s]", ns, stuckNS) {
			t.Fatalf("namespaces the statuses call unsettled: %v; want [%s %s]", deep, ns, stuckNS)
		}
		r, rep, st := check(t)
		if r.Code != 1 || len(harness.ByCode(rep, apiv1.ControllerManagerNotRunning)) != 0 {
			t.Errorf("exit %d, findings %v; want 1 and no ControllerManagerNotRunning", r.Code, harness.Codes(rep))
		}
		if cm := rep.Server.ControllerManager; cm == nil || cm.State != "Renewed" {
			t.Errorf("server.controllerManager %+v; want the Lease Renewed", cm)
		}
		if f := harness.FindingOf(rep, apiv1.CurrentRevisionFailing, pod); f == nil || f.Namespace != ns {
			t.Errorf("findings %v; want CurrentRevisionFailing/%s, read deep now that its status says so", harness.Codes(rep), pod)
		}
		if want := triagedRequests(len(deep)); st.requests != want {
			t.Errorf("triaged check -A made %d requests; want %d (8 + 5 × %d namespaces read deep)", st.requests, want, len(deep))
		}
	})
}

// stats is what STSDIAG_REQUEST_STATS printed.
type stats struct {
	requests int
	bytes    int64
}

func requestStats(t *testing.T, stderr string) stats {
	t.Helper()
	var s stats
	i := strings.LastIndex(stderr, "stsdiag: ")
	if i < 0 {
		t.Fatalf("no request count: %q", stderr)
	}
	if _, err := fmt.Sscanf(stderr[i:], "stsdiag: %d HTTP requests, %d response bytes", &s.requests, &s.bytes); err != nil {
		t.Fatalf("no request count: %q (%v)", stderr, err)
	}
	return s
}

// triagedRequests is what a triaged check -A asks of the API server, without the image API
// (internal/check.ClusterWide, internal/gather.Triage): kube-controller-manager's Lease (1 GET);
// discovery of the image API and of the server version (2); StatefulSets, Services,
// StorageClasses and Nodes, each in one unpaged LIST (4), and the ControllerRevisions' metadata
// (1 LIST); then, in every namespace read deep, its StatefulSets again (whole: the cluster-wide
// LIST kept only the triage's facts), Pods, ControllerRevisions, PVCs and Warning Events (5
// LISTs each). No StatefulSet is terminating: no owner is looked up.
func triagedRequests(deep int) int { return 1 + 2 + 4 + 1 + 5*deep }

// fullRequests is what check -A --full asks (internal/check.AllNamespaces, gather.EachNamespace):
// the Lease (1), discovery (2), StorageClasses and Nodes whole (2), and the namespaced kinds in
// pages of 5000 (gather.PageSize): StatefulSets, Pods, ControllerRevisions, PVCs, Warning Events
// and Services, each counted here.
func fullRequests(ctx context.Context, t *testing.T, cs kubernetes.Interface) int {
	t.Helper()
	pages := func(n int) int { return max(1, (n+4999)/5000) }
	count := func(l runtime.Object, err error) int {
		if err != nil {
			t.Fatal(err)
		}
		return meta.LenList(l)
	}
	n := 1 + 2 + 2
	n += pages(count(cs.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})))
	n += pages(count(cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})))
	n += pages(count(cs.AppsV1().ControllerRevisions("").List(ctx, metav1.ListOptions{})))
	n += pages(count(cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})))
	n += pages(count(cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})))
	n += pages(count(cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})))
	return n
}

// statusSettled is the test's reading of a StatefulSet's status, from issue 36's definition: not
// being deleted, the latest spec observed, every replica created, Ready, available and on the
// update revision, and the current revision the update revision.
func statusSettled(s *appsv1.StatefulSet) bool {
	n := int32(1)
	if s.Spec.Replicas != nil {
		n = *s.Spec.Replicas
	}
	st := s.Status
	return s.DeletionTimestamp == nil && st.ObservedGeneration >= s.Generation && st.Replicas == n && st.ReadyReplicas == n &&
		st.AvailableReplicas == n && st.UpdatedReplicas == n && st.UpdateRevision != "" && st.CurrentRevision == st.UpdateRevision
}

// unsettledNamespaces are the namespaces, sorted, holding a StatefulSet whose status is not
// settled (statusSettled) or a ControllerRevision whose StatefulSet is gone or replaced: those a
// triaged check -A reads deep.
func unsettledNamespaces(ctx context.Context, t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	sets, err := cs.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revisions, err := cs.AppsV1().ControllerRevisions("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deep := map[string]bool{}
	uids := map[string]string{}
	for i := range sets.Items {
		s := &sets.Items[i]
		uids[s.Namespace+"/"+s.Name] = string(s.UID)
		if !statusSettled(s) {
			deep[s.Namespace] = true
		}
	}
	for _, r := range revisions.Items {
		if ref := metav1.GetControllerOf(&r); ref != nil && ref.Kind == "StatefulSet" && uids[r.Namespace+"/"+ref.Name] != string(ref.UID) {
			deep[r.Namespace] = true
		}
	}
	var out []string
	for ns := range deep {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// renewedLease waits until kube-controller-manager's Lease is renewed after this call (its
// renewTime moves) and returns it.
func renewedLease(ctx context.Context, t *testing.T, cs kubernetes.Interface, timeout time.Duration) *coordinationv1.Lease {
	t.Helper()
	since := time.Now().Add(-time.Second)
	var out *coordinationv1.Lease
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil || l.Spec.HolderIdentity == nil || l.Spec.RenewTime.Time.Before(since) {
			return false, nil
		}
		out = l
		return true, nil
	})
	if err != nil {
		t.Fatalf("kube-controller-manager's Lease kube-system/kube-controller-manager not renewed within %s", timeout)
	}
	return out
}

// breakPod makes a pod's container crash loop as the kubelet reports it (kwok, the simulated
// node, writes no status to a Running pod: the API server's status is what every reader sees):
// not Ready, waiting in CrashLoopBackOff after its 5th restart, its last run exited 1.
func breakPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.LastTransitionTime = corev1.ConditionFalse, now
		}
	}
	for i := range p.Status.ContainerStatuses {
		c := &p.Status.ContainerStatuses[i]
		c.Ready, c.Started, c.RestartCount = false, ptr.To(false), 5
		c.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off 2m40s restarting failed container=%s pod=%s_%s(%s)", c.Name, name, ns, p.UID)}}
		c.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
			StartedAt: metav1.NewTime(now.Add(-4 * time.Second)), FinishedAt: metav1.NewTime(now.Add(-2 * time.Second))}}
	}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// comparable is a report as JSON without what changes between two reads seconds apart: the
// Lease's renewTime, and how long it has not been renewed.
func comparable(t *testing.T, rep apiv1.Report) string {
	t.Helper()
	if rep.Server != nil && rep.Server.ControllerManager != nil {
		cm := *rep.Server.ControllerManager
		cm.RenewTime = ""
		server := *rep.Server
		server.ControllerManager = &cm
		rep.Server = &server
	}
	findings := make([]apiv1.Finding, len(rep.Findings))
	for i, f := range rep.Findings {
		if f.Code == apiv1.ControllerManagerNotRunning {
			f.Message, f.Details.NotRenewedFor = "", ""
		}
		findings[i] = f
	}
	rep.Findings = findings
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
