package check_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/internal/check"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestWatchSeesWhatCheckSees: for the same cluster state, the informer snapshot behind wait and
// watch gives the same findings as check's LISTs.
func TestWatchSeesWhatCheckSees(t *testing.T) {
	var objs []runtime.Object
	for _, scenario := range []string{"stale-revision-stuck-3-replicas", "pod-stuck-terminating-lost-node", "volume-claim-pending", "not-ready-stale"} {
		snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", "stuck", scenario, "objects.yaml"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, objects(t, snap, scenario)...)
	}
	kube := fake.NewClientset(objs...)
	clients := gather.Clients{Clients: read.Clients{Kube: kube}}
	opts := stuck.DefaultOptions()
	for _, ns := range []string{"", "s0"} {
		scope := gather.Scope{Namespace: ns, OpenShift: openshift.ModeNever}
		checked, _, err := check.Run(context.Background(), clients, scope, opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		live, _, err := gather.StartLive(ctx, clients, scope, nil)
		if err != nil {
			t.Fatal(err)
		}
		snap, _, err := live.Snapshot(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		watched := diagnose.Report(snap, opts)
		if got, want := keys(watched), keys(checked); len(want) == 0 || !equal(got, want) {
			t.Errorf("scope %q: watch %v, check %v", ns, got, want)
		}
	}
}

// objects moves a scenario's namespaced objects to a namespace of its own (s0, s1, ...), with
// UIDs unique in the cluster.
func objects(t *testing.T, snap *stuck.Objects, scenario string) []runtime.Object {
	t.Helper()
	ns := map[string]string{"stale-revision-stuck-3-replicas": "s0", "pod-stuck-terminating-lost-node": "s1", "volume-claim-pending": "s2", "not-ready-stale": "s3"}[scenario]
	out := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
	unique := func(o metav1.Object) {
		o.SetUID(types.UID(ns + "-" + string(o.GetUID())))
		refs := o.GetOwnerReferences()
		for i := range refs {
			refs[i].UID = types.UID(ns + "-" + string(refs[i].UID))
		}
		o.SetOwnerReferences(refs)
	}
	for i := range snap.StatefulSets {
		unique(&snap.StatefulSets[i])
		snap.StatefulSets[i].Namespace = ns
		out = append(out, &snap.StatefulSets[i])
	}
	for i := range snap.Pods {
		unique(&snap.Pods[i])
		snap.Pods[i].Namespace = ns
		out = append(out, &snap.Pods[i])
	}
	for i := range snap.Revisions {
		unique(&snap.Revisions[i])
		snap.Revisions[i].Namespace = ns
		out = append(out, &snap.Revisions[i])
	}
	for i := range snap.PVCs {
		snap.PVCs[i].Namespace = ns
		out = append(out, &snap.PVCs[i])
	}
	for i := range snap.Events {
		snap.Events[i].Namespace, snap.Events[i].InvolvedObject.Namespace = ns, ns
		out = append(out, &snap.Events[i])
	}
	for i := range snap.Nodes {
		out = append(out, &snap.Nodes[i])
	}
	for i := range snap.StorageClasses {
		out = append(out, &snap.StorageClasses[i])
	}
	return out
}

func keys(rep *model.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, f.Key()+"/"+f.Reason+"/"+string(f.Severity))
	}
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestWatchSeesOtherNamespacesStreams: a StatefulSet's image trigger follows an ImageStreamTag
// of another namespace, whose ImageStreams hold no such stream: check -A judges it, and so does
// the snapshot of one namespace a watch -A worker diagnoses (the ImageStreams of every namespace
// are found in the cache).
func TestWatchSeesOtherNamespacesStreams(t *testing.T) {
	snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", "resolver", "triggers-invalid", "objects.yaml"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var kubeObjs, imageObjs []runtime.Object
	kubeObjs = append(kubeObjs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}})
	for i := range snap.StatefulSets {
		kubeObjs = append(kubeObjs, &snap.StatefulSets[i])
	}
	for i := range snap.ImageStreams {
		imageObjs = append(imageObjs, &snap.ImageStreams[i])
	}
	imageObjs = append(imageObjs, &imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "base", Namespace: "elsewhere"}})
	clients := gather.Clients{Clients: read.Clients{Kube: fake.NewClientset(kubeObjs...), Image: imagefake.NewClientset(imageObjs...)}}
	scope := gather.Scope{OpenShift: openshift.ModeAlways}
	opts := stuck.DefaultOptions()
	checked, _, err := check.AllNamespaces(context.Background(), gather.Paged{Clients: clients, Scope: scope}, opts, false)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range checked.Findings {
		if f.StatefulSet == "otherns" {
			want = append(want, said(f))
		}
	}
	if fmt.Sprint(want) != "[ImageTriggerInvalid//StreamNotFound ServiceMissing/NotFound/NotFound]" {
		t.Fatalf("check -A on otherns: %v; want [ImageTriggerInvalid//StreamNotFound ServiceMissing/NotFound/NotFound]", want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live, _, err := gather.StartLive(ctx, clients, scope, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range diagnose.Report(live.CachedOf("shop", "otherns"), opts).Findings {
		got = append(got, said(f))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("watch -A's sync of otherns: %v; check -A: %v", got, want)
	}
}

// said is a finding's code, reason and reason in details.
func said(f stuck.Finding) string {
	return string(f.Code) + "/" + f.Reason + "/" + f.Details.Reason
}
