package check_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/check"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestRunFleet: two clusters and one that refuses: one report, findings and StatefulSets
// carry their context, the refusing one is a warning naming it and comes back as failed.
func TestRunFleet(t *testing.T) {
	snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", "stuck", "stale-revision-stuck-3-replicas", "objects.yaml"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	stuckCluster := fake.NewClientset(objects(t, snap, "stale-revision-stuck-3-replicas")...)
	healthy := fake.NewClientset()
	refusing := fake.NewClientset()
	refusing.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "statefulsets"}, "", errors.New("no"))
	})
	scope := gather.Scope{OpenShift: openshift.ModeNever}
	rep, members := check.RunFleet(context.Background(), []check.Target{
		{Context: "prod-eu", Clients: gather.Clients{Clients: read.Clients{Kube: stuckCluster}}, Scope: scope},
		{Context: "prod-us", Clients: gather.Clients{Clients: read.Clients{Kube: healthy}}, Scope: scope},
		{Context: "lab", Clients: gather.Clients{Clients: read.Clients{Kube: refusing}}, Scope: scope},
	}, check.FleetOptions{Options: check.Options{Diagnosis: stuck.DefaultOptions()}})
	if failed := check.Failed(members); len(failed) != 1 || failed[0] != "lab" {
		t.Errorf("failed %v, want [lab]", failed)
	}
	if len(members) != 3 || members[0].Name != "lab" || !strings.Contains(members[0].Error, "forbidden") || members[1] != (apiv1.FleetMember{Name: "prod-eu"}) {
		t.Errorf("members %+v", members)
	}
	if len(rep.Findings) == 0 || rep.Findings[0].Context != "prod-eu" || rep.Findings[0].Code != apiv1.StaleRevisionStuck {
		t.Fatalf("findings %+v", rep.Findings)
	}
	for _, s := range rep.StatefulSets {
		if s.Context != "prod-eu" {
			t.Errorf("statefulSet %+v", s)
		}
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0][:len("context lab: ")] != "context lab: " {
		t.Errorf("warnings %v", rep.Warnings)
	}
	if rep.Server == nil || rep.Server.Rules == "" {
		t.Errorf("server %+v: two clusters of the same release keep the server block", rep.Server)
	}
}

// TestRunFleetServer: the server block is kept when every context applied the same release's
// rules, and omitted when they differ; each cluster's controller manager (its own Lease holder)
// is not part of it.
func TestRunFleetServer(t *testing.T) {
	clusters := 0
	cluster := func(gitVersion string) gather.Clients {
		clusters++
		kube := fake.NewClientset(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cp-" + strconv.Itoa(clusters)), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &metav1.MicroTime{Time: time.Now()}}})
		kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{Major: "1", Minor: "35", GitVersion: gitVersion}
		return gather.Clients{Clients: read.Clients{Kube: kube}}
	}
	scope := gather.Scope{OpenShift: openshift.ModeNever}
	run := func(east, west string) *model.Report {
		rep, members := check.RunFleet(context.Background(), []check.Target{
			{Context: "east", Clients: cluster(east), Scope: scope},
			{Context: "west", Clients: cluster(west), Scope: scope},
		}, check.FleetOptions{Options: check.Options{Diagnosis: stuck.DefaultOptions()}})
		if failed := check.Failed(members); len(failed) != 0 {
			t.Fatalf("failed %v", failed)
		}
		return rep
	}
	t.Run("same release", func(t *testing.T) {
		if s := run("v1.35.3", "v1.35.3").Server; s == nil || s.Version != "v1.35.3" || s.Rules != "v1.35.3" || s.ControllerManager != nil {
			t.Errorf("server %+v, want version and rules v1.35.3, no controller manager", s)
		}
	})
	t.Run("different releases", func(t *testing.T) {
		if s := run("v1.35.3", "v1.35.4").Server; s != nil {
			t.Errorf("server %+v, want none: the contexts follow different rules", s)
		}
	})
}

// TestRunFleetConnects: members reached through Connect (ClusterProfiles) are checked within the
// limit, one at a time here; one whose Connect fails (its exec plugin, its server) is a warning
// and a member error named as a ClusterProfile, and the others are checked all the same.
func TestRunFleetConnects(t *testing.T) {
	snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", "stuck", "stale-revision-stuck-3-replicas", "objects.yaml"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	stuckObjects := objects(t, snap, "stale-revision-stuck-3-replicas")
	scope := gather.Scope{Namespace: "s0", OpenShift: openshift.ModeNever}
	var running, most atomic.Int32
	connect := func(c gather.Clients, err error) func(context.Context) (gather.Clients, gather.Scope, error) {
		return func(context.Context) (gather.Clients, gather.Scope, error) {
			most.Store(max(most.Load(), running.Add(1)))
			time.Sleep(10 * time.Millisecond)
			running.Add(-1)
			return c, scope, err
		}
	}
	rep, members := check.RunFleet(context.Background(), []check.Target{
		{Context: "fleet/a", Connect: connect(gather.Clients{Clients: read.Clients{Kube: fake.NewClientset(stuckObjects...)}}, nil)},
		{Context: "fleet/b", Connect: connect(gather.Clients{Clients: read.Clients{Kube: fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "s0"}})}}, nil)},
		{Context: "fleet/gone", Connect: connect(gather.Clients{}, errors.New("exec plugin /bin/login: no answer within 30s"))},
	}, check.FleetOptions{Options: check.Options{Diagnosis: stuck.DefaultOptions()}, Concurrency: 1, Noun: "clusterprofile"})
	if most.Load() != 1 {
		t.Errorf("%d members connected at once, want 1", most.Load())
	}
	if len(rep.Findings) == 0 || rep.Findings[0].Context != "fleet/a" || rep.Findings[0].Code != apiv1.StaleRevisionStuck {
		t.Fatalf("findings %+v", rep.Findings)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0] != "clusterprofile fleet/gone: exec plugin /bin/login: no answer within 30s" {
		t.Errorf("warnings %q", rep.Warnings)
	}
	want := []apiv1.FleetMember{{Name: "fleet/a"}, {Name: "fleet/b"}, {Name: "fleet/gone", Error: "exec plugin /bin/login: no answer within 30s"}}
	if !reflect.DeepEqual(members, want) {
		t.Errorf("members %+v, want %+v", members, want)
	}
}
