package watch_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/internal/watch"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// findingsJSON is what a finding says, words and facts included.
func findingsJSON(t *testing.T, findings []stuck.Finding) string {
	t.Helper()
	type said struct {
		Finding any
		Short   string
		Facts   any
	}
	out := make([]said, 0, len(findings))
	for _, f := range findings {
		out = append(out, said{f.Finding, f.Short, f.Facts})
	}
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestFirstPassEqualsSyncs: the first pass diagnoses the StatefulSets of a namespace together
// (Selected nil) where a worker's sync diagnoses one (Selected: that one). On every scenario of
// testdata/stuck and testdata/resolver, each StatefulSet gets the same findings, in the same
// order, both ways, and the pass's time to look again is never later than the sync's.
func TestFirstPassEqualsSyncs(t *testing.T) {
	files, err := filepath.Glob("../../testdata/*/*/objects.yaml")
	if err != nil || len(files) < 80 {
		t.Fatalf("%d scenarios: %v", len(files), err)
	}
	opts := stuck.DefaultOptions()
	var multi, found, rechecks int
	for _, file := range files {
		snap, err := stuck.LoadFile(file, snapshottest.Now)
		if err != nil {
			t.Fatal(err)
		}
		snap.Selected = nil
		together := diagnose.Report(snap, opts)
		byKey := map[string][]stuck.Finding{}
		for _, f := range together.Findings {
			byKey[types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}.String()] = append(byKey[types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}.String()], f)
		}
		if len(snap.StatefulSets) > 1 {
			multi++
		}
		for i := range snap.StatefulSets {
			set := &snap.StatefulSets[i]
			key := types.NamespacedName{Namespace: set.Namespace, Name: set.Name}.String()
			one := *snap
			one.Selected = map[types.NamespacedName]bool{{Namespace: set.Namespace, Name: set.Name}: true}
			alone := diagnose.Report(&one, opts)
			if got, want := findingsJSON(t, byKey[key]), findingsJSON(t, alone.Findings); got != want {
				t.Errorf("%s: %s: together\n%s\nalone\n%s", file, key, got, want)
			}
			found += len(alone.Findings)
			if !alone.RecheckAt.IsZero() {
				rechecks++
				if together.RecheckAt.IsZero() || together.RecheckAt.After(alone.RecheckAt) {
					t.Errorf("%s: %s: looks again at %v together, %v alone", file, key, together.RecheckAt, alone.RecheckAt)
				}
			}
		}
	}
	t.Logf("%d scenarios with several StatefulSets, %d findings, %d rechecks", multi, found, rechecks)
	// The comparison is not vacuous: scenarios with several StatefulSets, findings, rechecks.
	if multi < 15 || found < 100 || rechecks < 10 {
		t.Fatalf("%d scenarios with several StatefulSets, %d findings, %d rechecks", multi, found, rechecks)
	}
}

// The first pass's verdict stands: after start-up no StatefulSet is diagnosed again
// (stsdiag_diagnosis_duration_seconds counts the workers' diagnoses) unless it changes, and
// its Stalled condition is still written from the first pass's findings; a change after the
// first pass is diagnosed (its new finding reported).
func TestFirstPassVerdictStands(t *testing.T) {
	objs := stuckObjects()
	healthy := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "db-uid"}}
	objs = append(objs, healthy)
	kube := fake.NewClientset(objs...)
	metrics, _ := run(t, kube, watch.Options{Hold: time.Nanosecond})
	waitStalled(t, kube, "web's Stalled=True from the first pass", func(c *appsv1.StatefulSetCondition) bool {
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "StaleRevisionStuck"
	})
	if got := testutil.ToFloat64(metrics.FindingsTotal.WithLabelValues("StaleRevisionStuck", "shop")); got != 1 {
		t.Fatalf("StaleRevisionStuck counted %v times; want 1", got)
	}
	// web's status patch comes back through the informer and queues it again (a change): wait
	// for that, then count the diagnoses.
	time.Sleep(300 * time.Millisecond)
	before := histogramCount(t, metrics)
	t.Logf("%d diagnoses after the first pass", before)
	if before > 1 {
		t.Fatalf("%d diagnoses by the workers after the first pass; want at most web's after its patch", before)
	}
	// A change after the first pass is diagnosed.
	ctx := context.Background()
	healthy.Labels = map[string]string{"touched": "yes"}
	if _, err := kube.AppsV1().StatefulSets("shop").Update(ctx, healthy, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return histogramCount(t, metrics) > before, nil
	})
	if err != nil {
		t.Fatalf("db changed after the first pass and was not diagnosed again (%d diagnoses)", histogramCount(t, metrics))
	}
}

func histogramCount(t *testing.T, metrics *watch.Metrics) uint64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "stsdiag_diagnosis_duration_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no stsdiag_diagnosis_duration_seconds")
	return 0
}

// TestFirstPassWhileCachesFill: watching all namespaces, the first pass diagnoses each namespace
// as the caches' first LISTs read it (pods are LISTed once besides the probe, not again by their
// informer), and a change made before every cache is filled (here: while the ImageStreams'
// informer still LISTs) voids its StatefulSet's verdict: a worker diagnoses it again. The first
// pass's Events are held until the caches are filled.
func TestFirstPassWhileCachesFill(t *testing.T) {
	healthy := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "bank", UID: "db-uid"}}
	objs := append(stuckObjects(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bank"}}, healthy)
	kube := fake.NewClientset(objs...)
	images := imagefake.NewClientset()
	// The ImageStreams' informer LISTs (resourceVersion 0) fail until release, and its reflector
	// retries: its cache is not filled before. (A reactor that blocked would hold the fake's lock
	// and block the first pass's own ImageStreams LIST too.)
	release := make(chan struct{})
	images.PrependReactor("list", "imagestreams", func(a k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case <-release:
		default:
			if a.(k8stesting.ListActionImpl).ListOptions.ResourceVersion == "0" {
				return true, nil, apierrors.NewTooManyRequests("not yet", 1)
			}
		}
		return false, nil, nil
	})
	metrics := watch.NewMetrics()
	ctrl := watch.New(gather.Clients{Clients: read.Clients{Kube: kube, Image: images}}, gather.Scope{OpenShift: openshift.ModeAlways},
		watch.Options{Hold: time.Nanosecond, NoConditions: true}, metrics)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = ctrl.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return countActions(kube, "watch", "statefulsets") > 0, nil
	})
	if err != nil {
		t.Fatal("StatefulSets are not watched")
	}
	if ctrl.Ready() {
		t.Fatal("ready while the ImageStreams' informer still LISTs")
	}
	healthy.Labels = map[string]string{"touched": "yes"}
	if _, err := kube.AppsV1().StatefulSets("bank").Update(ctx, healthy, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // for the change to reach the informer before the caches are filled
	// web's finding comes to be known (the first pass ends) while the caches fill; its Event is
	// held until they are filled.
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(metrics.FindingsTotal.WithLabelValues("StaleRevisionStuck", "shop")) == 1, nil
	})
	if err != nil {
		t.Errorf("StaleRevisionStuck not counted before the caches are filled")
	}
	if ctrl.Ready() {
		t.Fatal("ready while the ImageStreams' informer still LISTs")
	}
	if n := countActions(kube, "create", "events"); n != 0 {
		t.Errorf("%d Events written while the caches fill; want them held", n)
	}
	close(release)
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return histogramCount(t, metrics) > 0, nil
	})
	if err != nil {
		t.Fatalf("db changed during start-up and was not diagnosed again (%d diagnoses)", histogramCount(t, metrics))
	}
	if got := testutil.ToFloat64(metrics.FindingsTotal.WithLabelValues("StaleRevisionStuck", "shop")); got != 1 {
		t.Errorf("StaleRevisionStuck counted %v times; want 1 (the first pass's)", got)
	}
	if got := countActions(kube, "list", "pods"); got != 2 {
		t.Errorf("pods LISTed %d times; want 2 (the probe and the first pass's, which fills the cache)", got)
	}
	if got := histogramCount(t, metrics); got != 1 {
		t.Errorf("%d diagnoses by the workers; want 1 (db's)", got)
	}
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return countActions(kube, "create", "events") == 1, nil
	})
	if err != nil {
		t.Errorf("%d Events written once the caches are filled; want web's", countActions(kube, "create", "events"))
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "events" {
			e := a.(k8stesting.CreateAction).GetObject().(*corev1.Event)
			if got := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name + "/" + string(e.InvolvedObject.UID) + " " + e.Reason; got != "StatefulSet/shop/web/set-uid StaleRevisionStuck" {
				t.Errorf("Event about %s", got)
			}
		}
	}
}

func countActions(kube *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}
