package gather_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestEachNamespaceReadPolicy: reading namespace by namespace treats each kind as Gather does
// for all namespaces: the same error for a required kind, the same warnings (once, not per
// namespace) for optional ones, the same kinds marked listed.
func TestEachNamespaceReadPolicy(t *testing.T) {
	governed := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "other"}, Spec: appsv1.StatefulSetSpec{ServiceName: "db"}}
	for _, forbidden := range []string{"", "pods", "statefulsets", "events", "services", "nodes", "storageclasses", "imagestreams", "namespaces", "imagestreams,services,events"} {
		t.Run(forbidden, func(t *testing.T) {
			objs := append(objects(2), governed)
			kube := fake.NewClientset(objs...)
			image := imagefake.NewClientset()
			for _, kind := range strings.Split(forbidden, ",") {
				if kind != "" {
					kube.PrependReactor("list", kind, forbid(kind))
					image.PrependReactor("list", kind, forbid(kind))
				}
			}
			c := gather.Clients{Clients: read.Clients{Kube: kube, Image: image}}
			scope := gather.Scope{OpenShift: openshift.ModeAlways}
			want, wantWarnings, wantErr := gather.Gather(context.Background(), c, scope)
			var got []*stuck.Objects
			read, err := gather.EachNamespace(context.Background(), c, scope, func(s *stuck.Objects) error {
				got = append(got, s)
				return nil
			})
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("error %v, Gather's %v", err, wantErr)
			}
			if err != nil {
				return
			}
			if fmt.Sprintf("%q", read.Warnings) != fmt.Sprintf("%q", wantWarnings) {
				t.Errorf("warnings %q, Gather's %q", read.Warnings, wantWarnings)
			}
			var order []string
			for _, s := range got {
				order = append(order, fmt.Sprintf("%s:%d sets/%d pods", s.StatefulSets[0].Namespace, len(s.StatefulSets), len(s.Pods)))
			}
			if wantOrder := "[other:1 sets/0 pods shop:2 sets/6 pods]"; forbidden != "pods" && fmt.Sprint(order) != wantOrder {
				t.Fatalf("namespaces %v, want %s", order, wantOrder)
			}
			for _, s := range got {
				listed := fmt.Sprint(s.StorageClassesListed, s.NodesListed, s.ServicesListed, len(s.Namespaces), s.OpenShift)
				if wantListed := fmt.Sprint(want.StorageClassesListed, want.NodesListed, want.ServicesListed, len(want.Namespaces), want.OpenShift); listed != wantListed {
					t.Errorf("listed %s, Gather's %s", listed, wantListed)
				}
			}
		})
	}
}

// TestEachNamespaceRefusesANamespace: a named namespace or StatefulSet is Gather's job.
func TestEachNamespaceRefusesANamespace(t *testing.T) {
	c := gather.Clients{Clients: read.Clients{Kube: fake.NewClientset()}}
	for _, scope := range []gather.Scope{{Namespace: "shop"}, {Names: []string{"web"}}} {
		if _, err := gather.EachNamespace(context.Background(), c, scope, func(*stuck.Objects) error { return nil }); err == nil {
			t.Errorf("%+v: no error", scope)
		}
	}
}
