package check_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stsdiag/stsdiag/internal/check"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// scenarioCluster puts every scenario of testdata/stuck and testdata/resolver in one cluster,
// each in a namespace of its own; the names are chosen so that the API server's key order
// (namespace then '/') differs from the names' order ("n-1" before "n", "n" before "n0").
func scenarioCluster(t *testing.T) (kube *fake.Clientset, image *imagefake.Clientset, namespaces int) {
	t.Helper()
	var dirs []string
	for _, root := range []string{"stuck", "resolver"} {
		found, err := filepath.Glob(filepath.Join("..", "..", "testdata", root, "*", "objects.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, found...)
	}
	sort.Strings(dirs)
	var placed []placement
	for i, path := range dirs {
		ns := "n" + strconv.Itoa(i/2)
		if i%2 == 1 {
			ns += "-a" // before ns in key order ('-' < '/'), after it by name
		}
		placed = append(placed, placement{path, ns})
	}
	kube, image = clusterOf(t, placed)
	return kube, image, len(dirs)
}

// placement puts a scenario's objects in a namespace.
type placement struct{ path, namespace string }

// clusterOf puts each scenario's objects in its namespace (UIDs and owner references prefixed
// with it, so that they stay unique), and extra objects as they are, in fake clientsets.
func clusterOf(t *testing.T, placed []placement, extra ...runtime.Object) (*fake.Clientset, *imagefake.Clientset) {
	t.Helper()
	kubeObjs := append([]runtime.Object(nil), extra...)
	var imageObjs []runtime.Object
	seen := map[string]bool{}
	for _, p := range placed {
		snap, err := stuck.LoadFile(p.path, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ns := p.namespace
		fields := reflect.ValueOf(snap).Elem()
		for f := 0; f < fields.NumField(); f++ {
			field := fields.Field(f)
			if field.Kind() != reflect.Slice {
				continue
			}
			for j := 0; j < field.Len(); j++ {
				obj, ok := field.Index(j).Addr().Interface().(runtime.Object)
				if !ok {
					continue
				}
				m := obj.(metav1.Object)
				switch o := obj.(type) {
				case *corev1.Namespace:
					o.Name = ns
				case *corev1.Event:
					o.InvolvedObject.Namespace = ns
					o.InvolvedObject.UID = types.UID(ns + string(o.InvolvedObject.UID))
				}
				if m.GetNamespace() != "" {
					m.SetNamespace(ns)
					m.SetUID(types.UID(ns + string(m.GetUID())))
					refs := m.GetOwnerReferences()
					for r := range refs {
						refs[r].UID = types.UID(ns + string(refs[r].UID))
					}
					m.SetOwnerReferences(refs)
				}
				key := fmt.Sprintf("%T/%s/%s", obj, m.GetNamespace(), m.GetName())
				if seen[key] {
					continue // a node or class of the same name in an earlier scenario
				}
				seen[key] = true
				if _, ok := obj.(*imagev1.ImageStream); ok {
					imageObjs = append(imageObjs, obj)
				} else {
					kubeObjs = append(kubeObjs, obj)
				}
			}
		}
	}
	return fake.NewClientset(kubeObjs...), imagefake.NewClientset(imageObjs...)
}

// pageLists makes the fakes answer LISTs with a limit as the API server does: in key order
// (namespace, '/', name), a page at a time, with a continue token. reorder, if set, may reorder
// the items of each kind first (an API server breaking key order), and expire the continue
// token of the kind it names. lists counts the LISTs by their limit, whole names the kinds not
// listed in pages of size.
type pager struct {
	size    int64
	reorder func(items []runtime.Object)
	expire  string
	mu      sync.Mutex
	lists   map[int64]int
	whole   map[string]bool
}

// reset forgets the LISTs counted.
func (p *pager) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lists, p.whole = map[int64]int{}, map[string]bool{}
}

func (p *pager) install(trackers ...interface {
	PrependReactor(verb, resource string, fn k8stesting.ReactionFunc)
	Tracker() k8stesting.ObjectTracker
}) {
	p.reset()
	for _, c := range trackers {
		react := k8stesting.ObjectReaction(c.Tracker())
		c.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			la := a.(k8stesting.ListActionImpl)
			o := la.ListOptions
			p.mu.Lock()
			p.lists[o.Limit]++
			if o.Limit != p.size {
				p.whole[la.Resource.Resource] = true
			}
			p.mu.Unlock()
			if o.Limit == 0 {
				return false, nil, nil
			}
			if o.Continue != "" && la.Resource.Resource == p.expire {
				return true, nil, apierrors.NewResourceExpired("the provided continue parameter is too old")
			}
			_, obj, err := react(a)
			if err != nil {
				return true, nil, err
			}
			items, err := meta.ExtractList(obj)
			if err != nil {
				return true, nil, err
			}
			sort.Slice(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
			if p.reorder != nil {
				p.reorder(items)
			}
			start, _ := strconv.Atoi(o.Continue)
			end := min(start+int(o.Limit), len(items))
			if err := meta.SetList(obj, items[start:end]); err != nil {
				return true, nil, err
			}
			if end < len(items) {
				lm, _ := meta.ListAccessor(obj)
				lm.SetContinue(strconv.Itoa(end))
			}
			return true, obj, nil
		})
	}
}

// key is an object's key in the API server's storage, below the resource's prefix.
func key(obj runtime.Object) string {
	m := obj.(metav1.Object)
	return m.GetNamespace() + "/" + m.GetName()
}

// TestAllNamespacesIsOneSnapshot: check -A diagnosed namespace by namespace from paged LISTs
// gives the report of one snapshot of everything (Gather's unpaged LISTs), finding for finding,
// set for set, warning for warning, on every scenario of testdata in one cluster.
func TestAllNamespacesIsOneSnapshot(t *testing.T) {
	opts := stuck.DefaultOptions()
	scope := gather.Scope{OpenShift: openshift.ModeAlways}
	for _, size := range []int64{1, 2, 7, 5000} {
		t.Run(fmt.Sprintf("pages of %d", size), func(t *testing.T) {
			kube, image, scenarios := scenarioCluster(t)
			p := &pager{size: size}
			p.install(kube, image)
			c := gather.Clients{Clients: read.Clients{Kube: kube, Image: image}}
			want, _, err := check.Run(context.Background(), c, scope, opts)
			if err != nil {
				t.Fatal(err)
			}
			p.reset()
			got, explained, err := check.AllNamespaces(context.Background(), gather.Paged{Clients: c, Scope: scope, PageSize: size}, opts, true)
			if err != nil {
				t.Fatal(err)
			}
			// Read whole: the cluster-scoped kinds and ImageStreams (an image may name another
			// namespace's); every other kind in pages.
			if whole := fmt.Sprint(slices.Sorted(maps.Keys(p.whole))); whole != "[imagestreams namespaces nodes storageclasses]" {
				t.Errorf("listed whole: %s", whole)
			}
			if len(want.Findings) < scenarios || len(want.StatefulSets) < scenarios {
				t.Fatalf("the cluster of %d scenarios gave %d findings, %d sets", scenarios, len(want.Findings), len(want.StatefulSets))
			}
			if a, b := reportJSON(t, got), reportJSON(t, want); a != b {
				t.Errorf("namespace by namespace:\n%s\none snapshot:\n%s", a, b)
			}
			if len(explained) != len(want.StatefulSets) {
				t.Errorf("%d explanations, %d sets", len(explained), len(want.StatefulSets))
			}
			if p.lists[size] == 0 {
				t.Errorf("no paged LIST: %v", p.lists)
			}
		})
	}
}

// TestAllNamespacesFallsBack: when a kind's pages do not come in key order, or a continue token
// expires, the namespaces handed out may have been incomplete: the report is then Gather's, read
// again whole, never one built from part of a namespace.
func TestAllNamespacesFallsBack(t *testing.T) {
	opts := stuck.DefaultOptions()
	scope := gather.Scope{OpenShift: openshift.ModeAlways}
	cases := map[string]*pager{
		"pods in reverse key order": {reorder: func(items []runtime.Object) {
			if _, ok := items[0].(*corev1.Pod); ok {
				for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
					items[i], items[j] = items[j], items[i]
				}
			}
		}},
		"controllerrevisions' continue token expired": {expire: "controllerrevisions"},
	}
	for name, p := range cases {
		p.size = 3
		t.Run(name, func(t *testing.T) {
			kube, image, _ := scenarioCluster(t)
			p.install(kube, image)
			c := gather.Clients{Clients: read.Clients{Kube: kube, Image: image}}
			got, _, err := check.AllNamespaces(context.Background(), gather.Paged{Clients: c, Scope: scope, PageSize: 3}, opts, false)
			if err != nil {
				t.Fatal(err)
			}
			if p.lists[0] == 0 {
				t.Errorf("no unpaged LIST after the failure: %v", p.lists)
			}
			want, _, err := check.Run(context.Background(), c, scope, opts)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := reportJSON(t, got), reportJSON(t, want); a != b {
				t.Errorf("after the fallback:\n%s\nGather:\n%s", a, b)
			}
		})
	}
}

// reportJSON is a report as check -o json prints it, its durations blanked: the two reads see
// the same objects up to a second apart, so an age may differ by one second.
func reportJSON(t *testing.T, rep *model.Report) string {
	t.Helper()
	b, err := json.MarshalIndent(rep.Public(), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return duration.ReplaceAllString(string(b), "<duration>")
}

var duration = regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?s\b`)
