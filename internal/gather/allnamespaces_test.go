package gather_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestAllNamespacesDiagnosesAsNamespaced: watch -A's caches hold less than watch -n's — the
// pods of StatefulSets only (the rest looked up by name), settled StatefulSets without most of
// their templates, revisions as metadata with the data a diagnosis reads fetched by Refresh —
// yet on every scenario of testdata/stuck and testdata/resolver (a fake cluster of its objects)
// the namespace's diagnosis from them, report and explanations, is byte for byte the one from
// the caches of that namespace alone, which hold every object whole. Revision data is fetched
// only where a StatefulSet is not settled (or OpenShift looks up its images).
func TestAllNamespacesDiagnosesAsNamespaced(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../testdata/*/*/objects.yaml")
	if err != nil || len(files) < 80 {
		t.Fatalf("%d scenarios: %v", len(files), err)
	}
	opts := stuck.DefaultOptions()
	compared, revisionGETs, revisions := 0, 0, 0
	for _, file := range files {
		for _, done := range []bool{false, true} {
			snap, err := stuck.LoadFile(file, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if done {
				// Every status says settled, as a stopped controller may leave it while pods fail:
				// the diagnosis then reads settled StatefulSets' templates and revisions too (an
				// unresolved image's cause).
				for i := range snap.StatefulSets {
					snapshottest.SayDone(&snap.StatefulSets[i])
				}
			}
			namespaces := map[string]bool{}
			for _, set := range snap.StatefulSets {
				namespaces[set.Namespace] = true
			}
			if len(namespaces) != 1 {
				continue
			}
			var ns string
			for n := range namespaces {
				ns = n
			}
			var kubeObjs, imageObjs []runtime.Object
			fields := reflect.ValueOf(snap).Elem()
			for f := 0; f < fields.NumField(); f++ {
				if field := fields.Field(f); field.Kind() == reflect.Slice {
					for j := 0; j < field.Len(); j++ {
						obj, ok := field.Index(j).Addr().Interface().(runtime.Object)
						switch {
						case !ok:
						case reflect.TypeOf(obj) == reflect.TypeFor[*imagev1.ImageStream]():
							imageObjs = append(imageObjs, obj)
						default:
							kubeObjs = append(kubeObjs, asServed(obj))
						}
					}
				}
			}
			if len(snap.Namespaces) == 0 {
				kubeObjs = append(kubeObjs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			}
			revisions += len(snap.Revisions)
			diagnosed := func(scope gather.Scope) (string, int) {
				kube := fake.NewClientset(kubeObjs...)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				live, _, err := gather.StartLive(ctx, gather.Clients{Clients: read.Clients{Kube: kube, Image: imagefake.NewClientset(imageObjs...)}}, scope, nil)
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				live.Refresh(ctx, ns)
				s := live.NamespaceSnapshots()(ns)
				s.Now = snap.Now
				rep, expl := diagnose.ReportWithExplanations(s, opts)
				data, err := json.Marshal([]any{rep, expl})
				if err != nil {
					t.Fatal(err)
				}
				gets := 0
				for _, a := range kube.Actions() {
					if a.GetVerb() == "get" && a.GetResource().Resource == "controllerrevisions" {
						gets++
					}
				}
				return string(data), gets
			}
			mode := openshift.ModeNever
			if len(imageObjs) > 0 {
				mode = openshift.ModeAlways
			}
			whole, _ := diagnosed(gather.Scope{Namespace: ns, OpenShift: mode})
			all, gets := diagnosed(gather.Scope{OpenShift: mode})
			if all != whole {
				i := 0
				for i < len(all) && i < len(whole) && all[i] == whole[i] {
					i++
				}
				from := max(0, i-300)
				t.Errorf("%s (statuses settled: %v): all namespaces …%s…\nnamespace %s …%s…", file, done, all[from:min(len(all), i+300)], ns, whole[from:min(len(whole), i+300)])
			}
			compared++
			revisionGETs += gets
		}
	}
	t.Logf("%d scenarios compared, %d of their %d revisions read by GET", compared, revisionGETs, revisions)
	if compared < 160 || revisionGETs == 0 || revisionGETs >= revisions {
		t.Fatalf("%d scenarios compared, %d of %d revisions read by GET: the comparison says little", compared, revisionGETs, revisions)
	}
}

// asServed gives a scenario's object what the API server and the StatefulSet controller always
// give it and the fixtures may leave out: a UID, and on a pod a StatefulSet controls the label
// statefulset.kubernetes.io/pod-name (set with the pod: initIdentity → updateIdentity,
// stateful_set_utils.go:446-462@v1.37.2), which watch -A's pods informer selects by.
func asServed(obj runtime.Object) runtime.Object {
	m := obj.(metav1.Object)
	if m.GetUID() == "" {
		m.SetUID(types.UID(fmt.Sprintf("%T/%s/%s", obj, m.GetNamespace(), m.GetName())))
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "StatefulSet" {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
		}
	}
	return obj
}
