package gather_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/check"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// serviceCalls records the Service requests of a fake API server that selects Services by
// spec.clusterIP as kube-apiserver does (or answers 400 to the field selector, as a server that
// cannot select by it would).
type serviceCalls struct {
	mu                   sync.Mutex
	headless, all, gets  int
	rejectFieldSelector  bool
	noPermissionToGetAny bool
}

func (s *serviceCalls) install(kube *fake.Clientset) {
	kube.PrependReactor("list", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		fs := a.(k8stesting.ListAction).GetListRestrictions().Fields
		if fs == nil || fs.Empty() {
			s.all++
			return false, nil, nil
		}
		if fs.String() != "spec.clusterIP=None" {
			return true, nil, fmt.Errorf("unexpected field selector %q", fs)
		}
		if s.rejectFieldSelector {
			return true, nil, apierrors.NewBadRequest(`Unable to find "/v1, Resource=services" that match label selector "", field selector "spec.clusterIP=None": field label not supported: spec.clusterIP`)
		}
		s.headless++
		objs, err := kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("services"), corev1.SchemeGroupVersion.WithKind("Service"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		l := objs.(*corev1.ServiceList)
		var out corev1.ServiceList
		for _, svc := range l.Items {
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				out.Items = append(out.Items, svc)
			}
		}
		return true, &out, nil
	})
	kube.PrependReactor("get", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.gets++
		if s.noPermissionToGetAny {
			return true, nil, apierrors.NewForbidden(corev1.Resource("services"), a.(k8stesting.GetAction).GetName(), fmt.Errorf("no"))
		}
		return false, nil, nil
	})
}

func governed(ns, name, service string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + ns + "-" + name), Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), ServiceName: service, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/app:1"}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, CurrentRevision: name + "-a", UpdateRevision: name + "-a"}}
}

func service(ns, name, clusterIP string, selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Selector: selector}}
}

// TestTriageReadsGoverningServices: Triage LISTs only the headless Services and GETs each other
// Service a StatefulSet names (not headless, missing), and its report is the full read's — a
// ServiceMissing finding for each of those; past 20 such Services, or when the server cannot
// select Services by spec.clusterIP, or a GET fails, it LISTs every Service instead.
func TestTriageReadsGoverningServices(t *testing.T) {
	settled := func(ns string, n int) []runtime.Object {
		var objs []runtime.Object
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("missing-%02d", i)
			objs = append(objs, governed(ns, name, name))
		}
		return objs
	}
	base := []runtime.Object{
		governed("a", "ok", "ok"), service("a", "ok", "None", map[string]string{"app": "ok"}),
		governed("a", "mismatch", "mismatch"), service("a", "mismatch", "None", map[string]string{"app": "other"}),
		governed("a", "clusterip", "clusterip"), service("a", "clusterip", "10.96.0.10", map[string]string{"app": "clusterip"}),
		governed("b", "missing", "nowhere"),
		governed("b", "unnamed", ""),
		service("b", "frontend", "10.96.0.11", map[string]string{"app": "frontend"}), // no StatefulSet names it
		service("c", "api", "10.96.0.12", map[string]string{"app": "api"}),
	}
	cases := []struct {
		name                string
		objs                []runtime.Object
		reject, forbid      bool
		headless, all, gets int
	}{
		{name: "headless LIST, GETs of the others", objs: base, headless: 1, gets: 2},
		{name: "too many to GET", objs: append(append([]runtime.Object(nil), base...), settled("d", 20)...), headless: 1, all: 1},
		{name: "no field selector", objs: base, reject: true, all: 1},
		{name: "a GET refused", objs: base, forbid: true, headless: 1, gets: 1, all: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(tc.objs...)
			calls := &serviceCalls{rejectFieldSelector: tc.reject, noPermissionToGetAny: tc.forbid}
			c := gather.Clients{Clients: read.Clients{Kube: kube}}
			scope := gather.Scope{OpenShift: openshift.ModeNever}
			full, _, err := check.AllNamespaces(context.Background(), gather.Paged{Clients: c, Scope: scope}, stuck.DefaultOptions(), false)
			if err != nil {
				t.Fatal(err)
			}
			calls.install(kube)
			triaged, err := check.Triaged(context.Background(), c, scope, stuck.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.MarshalIndent(triaged.Public(), "", " ")
			b, _ := json.MarshalIndent(full.Public(), "", " ")
			if string(a) != string(b) {
				t.Errorf("triaged:\n%s\nfull:\n%s", a, b)
			}
			if calls.headless != tc.headless || calls.all != tc.all || calls.gets != tc.gets {
				t.Errorf("Service requests: %d headless LISTs, %d LISTs of all, %d GETs; want %d, %d, %d",
					calls.headless, calls.all, calls.gets, tc.headless, tc.all, tc.gets)
			}
			// The findings the governing Services give, whichever way they were read.
			for _, want := range []string{`"statefulSet": "mismatch"`, `"statefulSet": "clusterip"`, `"statefulSet": "missing"`} {
				if !strings.Contains(string(a), want) {
					t.Errorf("no finding for %s:\n%s", want, a)
				}
			}
			if strings.Contains(string(a), `"statefulSet": "ok"`) || strings.Contains(string(a), `"statefulSet": "unnamed"`) {
				t.Errorf("a finding for a StatefulSet whose Service is fine or unnamed:\n%s", a)
			}
		})
	}
}
