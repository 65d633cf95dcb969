package cmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// Each command's Run over fake clients: the options carry the clients (complete builds them from
// the kubeconfig; these tests put a fake clientset holding a testdata scenario there instead), so
// what a command prints and its exit code are tested without an API server.

// fakeCluster is a fake clientset holding the objects of testdata/stuck/<scenario>, its
// namespace shop and the headless Service web its StatefulSet names (the scenario's file has
// neither: it says nothing of Services).
func fakeCluster(t *testing.T, scenario string) *fake.Clientset {
	t.Helper()
	snap, err := stuck.LoadFile(filepath.Join("..", "testdata", "stuck", scenario, "objects.yaml"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	add := func(n int, at func(int) runtime.Object) {
		for i := 0; i < n; i++ {
			objs = append(objs, at(i))
		}
	}
	add(len(snap.Namespaces), func(i int) runtime.Object { return &snap.Namespaces[i] })
	add(len(snap.StatefulSets), func(i int) runtime.Object { return &snap.StatefulSets[i] })
	add(len(snap.Pods), func(i int) runtime.Object { return &snap.Pods[i] })
	add(len(snap.Revisions), func(i int) runtime.Object { return &snap.Revisions[i] })
	add(len(snap.PVCs), func(i int) runtime.Object { return &snap.PVCs[i] })
	add(len(snap.Events), func(i int) runtime.Object { return &snap.Events[i] })
	add(len(snap.Services), func(i int) runtime.Object { return &snap.Services[i] })
	add(len(snap.Nodes), func(i int) runtime.Object { return &snap.Nodes[i] })
	add(len(snap.StorageClasses), func(i int) runtime.Object { return &snap.StorageClasses[i] })
	if len(snap.Namespaces) == 0 {
		objs = append(objs, namespaceObject("shop"))
	}
	objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "web"}}})
	return fake.NewClientset(objs...)
}

func namespaceObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func clientsOf(kube *fake.Clientset) gather.Clients {
	return gather.Clients{Clients: read.Clients{Kube: kube}}
}

// optionsFrom parses args with a command's flags and builds its options as runE does, but not
// their clients: the test puts fakes there.
func optionsFrom[O runner](t *testing.T, c *cobra.Command, toOptions func([]string) (O, error), args ...string) O {
	t.Helper()
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	o, err := toOptions(c.Flags().Args())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// testStreams are streams with no terminal, and the kubeconfig flags of an API server that is
// never asked (the options' clients are fakes).
func testStreams(t *testing.T) (genericiooptions.IOStreams, *strings.Builder, *strings.Builder) {
	var out, errOut strings.Builder
	return genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, &out, &errOut
}

func codeOf(t *testing.T, err error) int {
	t.Helper()
	code, err := exitCode(err)
	if err != nil {
		t.Logf("error: %v", err)
	}
	return code
}

// writesTo are the fake's create, update, patch and delete actions that are not dry runs (the
// fake carries a dry run out: the request's options say what the server would do).
func writesTo(kube *fake.Clientset) []string {
	var w []string
	for _, a := range kube.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		var dryRun []string
		switch a := a.(type) {
		case k8stesting.CreateActionImpl:
			dryRun = a.CreateOptions.DryRun
		case k8stesting.UpdateActionImpl:
			dryRun = a.UpdateOptions.DryRun
		case k8stesting.PatchActionImpl:
			dryRun = a.PatchOptions.DryRun
		case k8stesting.DeleteActionImpl:
			dryRun = a.DeleteOptions.DryRun
		}
		if len(dryRun) == 0 {
			w = append(w, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetSubresource())
		}
	}
	return w
}

func TestCheckRunOverFakes(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		args     []string
		code     int
		findings string
		status   string
	}{
		{"stale-revision-stuck-1-replica", nil, ExitFindings, "StaleRevisionStuck web-0 kubectl delete pod web-0 -n shop", "Stuck"},
		{"stale-revision-stuck-1-replica", []string{"--fail-on", "never"}, ExitOK, "StaleRevisionStuck web-0 kubectl delete pod web-0 -n shop", "Stuck"},
		{"stale-revision-stuck-1-replica", []string{"--openshift", "always"}, ExitFindings, "StaleRevisionStuck web-0 oc delete pod web-0 -n shop", "Stuck"},
	} {
		t.Run(tc.scenario+strings.Join(tc.args, " "), func(t *testing.T) {
			streams, out, errOut := testStreams(t)
			f := newCheckFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), streams)
			o := optionsFrom(t, f.command(), f.ToOptions, append([]string{"-o", "json"}, tc.args...)...)
			kube := fakeCluster(t, tc.scenario)
			o.clients = clientsOf(kube)
			code := codeOf(t, o.Run(context.Background()))
			var rep apiv1.Report
			if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
				t.Fatalf("stdout is not a Report (%v): %s; stderr %s", err, out, errOut)
			}
			var got []string
			for _, f := range rep.Findings {
				got = append(got, string(f.Code)+" "+f.Pod+" "+f.Remedy)
			}
			if code != tc.code || strings.Join(got, "; ") != tc.findings || len(rep.StatefulSets) != 1 || string(rep.StatefulSets[0].Status) != tc.status {
				t.Errorf("exit %d, findings %q, sets %+v; want exit %d, %q, web %s", code, got, rep.StatefulSets, tc.code, tc.findings, tc.status)
			}
			if w := writesTo(kube); len(w) > 0 {
				t.Errorf("check wrote: %v", w)
			}
		})
	}
}

func TestExplainRunOverFakes(t *testing.T) {
	streams, out, errOut := testStreams(t)
	f := newExplainFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), streams)
	o := optionsFrom(t, f.command(), f.ToOptions, "web", "-o", "json")
	kube := fakeCluster(t, "stale-revision-stuck-1-replica")
	o.clients = clientsOf(kube)
	code := codeOf(t, o.Run(context.Background()))
	var e apiv1.Explanation
	if err := json.Unmarshal([]byte(out.String()), &e); err != nil {
		t.Fatalf("stdout is not an Explanation (%v): %s; stderr %s", err, out, errOut)
	}
	if code != ExitFindings || e.Status != apiv1.StatusStuck || len(e.Ordinals) != 1 || len(e.Findings) != 1 || e.Findings[0].Pod != "web-0" {
		t.Errorf("exit %d, status %s, ordinals %+v, findings %+v; want exit 1, Stuck, one ordinal, web-0's finding", code, e.Status, e.Ordinals, e.Findings)
	}
}

func TestWaitRunOverFakes(t *testing.T) {
	streams, out, errOut := testStreams(t)
	f := newWaitFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), streams)
	o := optionsFrom(t, f.command(), f.ToOptions, "web", "-o", "json", "--timeout", "20s", "--hold", "1s")
	kube := fakeCluster(t, "stale-revision-stuck-1-replica")
	o.clients = clientsOf(kube)
	start := time.Now()
	code := codeOf(t, o.Run(context.Background()))
	var res apiv1.WaitResult
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("stdout is not a WaitResult (%v): %s; stderr %s", err, out, errOut)
	}
	if code != ExitFindings || res.Result != apiv1.WaitStuck || len(res.Findings) != 1 || res.Findings[0].Pod != "web-0" {
		t.Errorf("exit %d, result %s, findings %+v; want exit 1, Stuck on web-0", code, res.Result, res.Findings)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("wait took %s: a finding held for 1s should end it within seconds", took)
	}
	if w := writesTo(kube); len(w) > 0 {
		t.Errorf("wait without --fix wrote: %v", w)
	}
}

// fix --yes over the #67250 scenario deletes the stuck pod, its UID a precondition, and nothing else.
func TestFixRunOverFakes(t *testing.T) {
	streams, out, errOut := testStreams(t)
	f := newFixFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), streams)
	o := optionsFrom(t, f.command(), f.ToOptions, "--yes", "-o", "json")
	kube := fakeCluster(t, "stale-revision-stuck-1-replica")
	o.fix.Clients = clientsOf(kube)
	code := codeOf(t, o.Run(context.Background()))
	var res apiv1.FixResult
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("stdout is not a FixResult (%v): %s; stderr %s", err, out, errOut)
	}
	var deletes []string
	for _, a := range kube.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			uid := ""
			if p := d.GetDeleteOptions().Preconditions; p != nil && p.UID != nil {
				uid = string(*p.UID)
			}
			deletes = append(deletes, d.GetResource().Resource+"/"+d.GetName()+" uid="+uid)
		}
	}
	if code != ExitOK || strings.Join(deletes, ",") != "pods/web-0 uid=pod-0" {
		t.Errorf("exit %d, deletes %v, result %+v; stderr %s; want exit 0 and pods/web-0 deleted with its UID", code, deletes, res, errOut)
	}
	if w := writesTo(kube); len(w) != 1 {
		t.Errorf("fix wrote %v; want the one delete", w)
	}
}

// fix with no --yes and no terminal changes nothing: exit 1.
func TestFixRunOverFakesWithoutConsent(t *testing.T) {
	streams, _, errOut := testStreams(t)
	f := newFixFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), streams)
	o := optionsFrom(t, f.command(), f.ToOptions, "-o", "json")
	kube := fakeCluster(t, "stale-revision-stuck-1-replica")
	o.fix.Clients = clientsOf(kube)
	if code := codeOf(t, o.Run(context.Background())); code != ExitFindings || len(writesTo(kube)) != 0 {
		t.Errorf("exit %d, writes %v, stderr %s; want exit 1 and no write", code, writesTo(kube), errOut)
	}
}

// canary --dry-run=client prints the plan and writes nothing.
func TestCanaryRunOverFakes(t *testing.T) {
	streams, out, errOut := testStreams(t)
	f := newCanaryFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), streams)
	o := optionsFrom(t, f.command(), f.ToOptions, "web", "--steps", "1,50%", "--image", "web=nginx:1.28", "--dry-run=client", "--timeout", "20s")
	kube := fake.NewClientset(namespaceObject("shop"), healthySet("shop", "web", 4))
	o.clients = clientsOf(kube)
	code := codeOf(t, o.Run(context.Background()))
	plan := out.String() + errOut.String()
	for _, want := range []string{"nginx:1.27 → nginx:1.28", "step 1: partition 3", "step 50%: partition 2", "step 100%: partition 0"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan does not say %q:\n%s", want, plan)
		}
	}
	if code != ExitOK || len(writesTo(kube)) != 0 {
		t.Errorf("exit %d, writes %v; want exit 0 and no write", code, writesTo(kube))
	}
}

// migrate --dry-run prints the plan of OrderedReady → Parallel and writes nothing.
func TestMigrateRunOverFakes(t *testing.T) {
	streams, out, errOut := testStreams(t)
	f := newMigrateFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), streams)
	o := optionsFrom(t, f.command(), f.ToOptions, "web", "--pod-management-policy", "Parallel", "--dry-run", "-o", "json")
	kube := fake.NewClientset(namespaceObject("shop"), healthySet("shop", "web", 2))
	o.migrate.Clients = clientsOf(kube)
	code := codeOf(t, o.Run(context.Background()))
	var res apiv1.MigrationResult
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("stdout is not a MigrationResult (%v): %s; stderr %s", err, out, errOut)
	}
	if code != ExitOK || len(res.Changes) != 1 || res.Changes[0].Field != "spec.podManagementPolicy" || len(writesTo(kube)) != 0 {
		t.Errorf("exit %d, changes %+v, writes %v; want exit 0, the policy's change, no write", code, res.Changes, writesTo(kube))
	}
}

// healthySet is an OrderedReady StatefulSet whose rollout is complete (no pods: the fakes need none
// for a plan).
func healthySet(ns, name string, replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "nginx:1.27"}}},
			},
		},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
			UpdatedReplicas: replicas, CurrentReplicas: replicas, CurrentRevision: name + "-1", UpdateRevision: name + "-1"},
	}
}

// watch over the #67250 scenario writes web's Stalled condition (True, StaleRevisionStuck) once
// the finding held for --hold, posts an Event, and stops with exit 0 when its context ends.
func TestWatchRunOverFakes(t *testing.T) {
	streams, _, _ := testStreams(t)
	// watch logs from its workers at once; os.Stderr takes that, a strings.Builder does not.
	errOut := &lockedBuilder{}
	streams.ErrOut = errOut
	f := newWatchFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), streams)
	o := optionsFrom(t, f.command(), f.ToOptions, "--hold", "1s", "--metrics-addr", "", "--health-addr", "")
	kube := fakeCluster(t, "stale-revision-stuck-1-replica")
	o.serve.Clients = clientsOf(kube)
	o.serve.Watch.Events = kube.CoreV1()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	var stalled *appsv1.StatefulSetCondition
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && stalled == nil; time.Sleep(100 * time.Millisecond) {
		set, err := kube.AppsV1().StatefulSets("shop").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range set.Status.Conditions {
			if c := set.Status.Conditions[i]; c.Type == "Stalled" && c.Status == corev1.ConditionTrue {
				stalled = &c
			}
		}
	}
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("watch still runs 20s after its context ended")
	}
	if stalled == nil || stalled.Reason != "StaleRevisionStuck" {
		t.Fatalf("no Stalled=True StaleRevisionStuck on web within 20s (%+v); stderr:\n%s", stalled, errOut.String())
	}
	if code := codeOf(t, err); code != ExitOK {
		t.Errorf("exit %d once its context ended; want 0", code)
	}
	events, err := kube.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var posted []string
	for _, e := range events.Items {
		if e.Source.Component == "stsdiag" {
			posted = append(posted, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+e.Type+" "+e.Reason)
		}
	}
	if strings.Join(posted, ", ") != "StatefulSet/web Warning StaleRevisionStuck" {
		t.Errorf("stsdiag posted %q; want one Warning StaleRevisionStuck on StatefulSet web", posted)
	}
}

// lockedBuilder is a strings.Builder that several goroutines may write to.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
