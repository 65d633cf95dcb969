package migration_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/migration"
)

func pod(name string, uid types.UID, owner types.UID, revision string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: uid,
		Labels: map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: revision}}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: owner, Controller: ptr.To(true)}}
	}
	return p
}

// saved is a saved copy of running() with its one pod web-0 recorded.
func saved() *migration.Saved {
	run, want := running(), running()
	want.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	p := migration.Make(migration.Input{Running: run, Desired: want})
	return &migration.Saved{Original: migration.Clean(run), Final: p.Final, UID: "cm", ResourceVersion: "1",
		Record: migration.Record{OldUID: "old", OldGeneration: 3, CurrentRevision: "web-a", UpdateRevision: "web-a",
			Pods: []migration.PodRecord{{Name: "web-0", UID: "p0", Revision: "web-a"}}}}
}

// created is the StatefulSet migrate created, synced by the controller.
func created(update, current string) *appsv1.StatefulSet {
	s := saved()
	set := migration.CreateObject(s.Final, s.Original, "old")
	set.UID, set.Generation = "new", 1
	set.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, UpdateRevision: update, CurrentRevision: current}
	return set
}

// TestNext: the next step, read from the cluster in each state a migration may be found in.
func TestNext(t *testing.T) {
	deleting := running()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.Finalizers = []string{"example.com/hold"}
	changed := running()
	changed.Generation = 4
	proven := saved()
	proven.Record.Proven = "new"
	foreign := created("web-a", "web-a")
	delete(foreign.Annotations, apiv1.MigratedFromAnnotation)
	cases := []struct {
		name  string
		obs   migration.Observed
		kind  migration.ActionKind
		phase apiv1.MigrationPhase
		why   migration.WhyKind
	}{
		{name: "saved, the pods as recorded: delete", obs: migration.Observed{Saved: saved(), Set: running(), Pods: []corev1.Pod{pod("web-0", "p0", "old", "web-a")}},
			kind: migration.DeleteOrphan, phase: apiv1.PhaseSaved},
		{name: "saved, a pod replaced since: record again", obs: migration.Observed{Saved: saved(), Set: running(), Pods: []corev1.Pod{pod("web-0", "p0-new", "old", "web-a")}},
			kind: migration.RefreshRecord, phase: apiv1.PhaseSaved},
		{name: "saved, the spec changed since", obs: migration.Observed{Saved: saved(), Set: changed},
			kind: migration.Fail, phase: apiv1.PhaseSaved, why: migration.ChangedSinceSaved},
		{name: "held by a finalizer", obs: migration.Observed{Saved: saved(), Set: deleting},
			kind: migration.Wait, phase: apiv1.PhaseDeleting, why: migration.WaitDeleting},
		{name: "gone, a pod still owned by it", obs: migration.Observed{Saved: saved(), Pods: []corev1.Pod{pod("web-0", "p0", "old", "web-a")}},
			kind: migration.Wait, phase: apiv1.PhaseDeleted, why: migration.WaitOrphaning},
		{name: "gone, pods orphaned: create", obs: migration.Observed{Saved: saved(), Pods: []corev1.Pod{pod("web-0", "p0", "", "web-a")}},
			kind: migration.Create, phase: apiv1.PhaseDeleted},
		{name: "created, not synced", obs: migration.Observed{Saved: saved(), Set: created("", ""), Pods: []corev1.Pod{pod("web-0", "p0", "", "web-a")}},
			kind: migration.Wait, phase: apiv1.PhaseCreated, why: migration.WaitNotSynced},
		{name: "created, not adopted", obs: migration.Observed{Saved: saved(), Set: created("web-a", "web-a"), Pods: []corev1.Pod{pod("web-0", "p0", "", "web-a")}},
			kind: migration.Wait, phase: apiv1.PhaseCreated, why: migration.WaitNotAdopted},
		{name: "created, adopted: proven", obs: migration.Observed{Saved: saved(), Set: created("web-a", "web-a"), Pods: []corev1.Pod{pod("web-0", "p0", "new", "web-a")}},
			kind: migration.MarkProven, phase: apiv1.PhaseCreated},
		{name: "created, another revision computed", obs: migration.Observed{Saved: saved(), Set: created("web-b", "web-b"), Pods: []corev1.Pod{pod("web-0", "p0", "new", "web-a")}},
			kind: migration.Fail, phase: apiv1.PhaseCreated, why: migration.RevisionChanged},
		{name: "created, a pod owned by someone else", obs: migration.Observed{Saved: saved(), Set: created("web-a", "web-a"), Pods: []corev1.Pod{pod("web-0", "p0", "other", "web-a")}},
			kind: migration.Fail, phase: apiv1.PhaseCreated, why: migration.PodOwnedByOther},
		{name: "created, a pod missing: the controller recreates it", obs: migration.Observed{Saved: saved(), Set: created("web-a", "web-a")},
			kind: migration.Wait, phase: apiv1.PhaseCreated, why: migration.WaitPodMissing},
		{name: "proven: apply the final spec", obs: migration.Observed{Saved: proven, Set: created("web-a", "web-a")},
			kind: migration.ApplySpec, phase: apiv1.PhaseProven},
		{name: "a StatefulSet migrate did not create", obs: migration.Observed{Saved: saved(), Set: foreign},
			kind: migration.Fail, phase: apiv1.PhaseCreated, why: migration.ForeignStatefulSet},
		{name: "no copy, no StatefulSet", obs: migration.Observed{}, kind: migration.Fail, phase: apiv1.PhaseNotStarted, why: migration.NotFound},
		{name: "copy removed by this run", obs: migration.Observed{CopyRemoved: true}, kind: migration.Done, phase: apiv1.PhaseDone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := migration.Next(nil, c.obs)
			if a.Kind != c.kind || a.Phase != c.phase || a.Why.Kind != c.why {
				t.Errorf("next %s in %s (%s), want %s in %s (%s)", a.Kind, a.Phase, a.Why.Kind, c.kind, c.phase, c.why)
			}
		})
	}
}

// TestApplied: once proven, the final spec replaces the created one and the mark goes; then
// the copy is removed.
func TestApplied(t *testing.T) {
	s := saved()
	s.Record.Proven = "new"
	set := created("web-a", "web-a")
	a := migration.Next(nil, migration.Observed{Saved: s, Set: set})
	if a.Kind != migration.ApplySpec || a.Object.UID != "new" || a.Object.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		t.Fatalf("%s %+v", a.Kind, a.Object)
	}
	if _, marked := a.Object.Annotations[apiv1.MigratedFromAnnotation]; marked {
		t.Errorf("still marked")
	}
	if b := migration.Next(nil, migration.Observed{Saved: s, Set: a.Object}); b.Kind != migration.RemoveCopy {
		t.Errorf("after the final spec: %s", b.Kind)
	}
}

// TestSavedRoundTrip: the saved copy reads back as written.
func TestSavedRoundTrip(t *testing.T) {
	s := saved()
	cm, err := s.ConfigMap()
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name != "stsdiag-migrate-web" || cm.Namespace != "shop" || cm.Labels[apiv1.MigrationLabel] != "web" || len(cm.OwnerReferences) != 0 {
		t.Errorf("configmap %+v", cm.ObjectMeta)
	}
	back, err := migration.ParseSaved(cm)
	if err != nil {
		t.Fatal(err)
	}
	if back.Record.OldUID != "old" || back.Original.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement ||
		back.Final.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || len(back.Record.Pods) != 1 {
		t.Errorf("read back %+v", back.Record)
	}
	delete(cm.Data, migration.KeyRecord)
	if _, err := migration.ParseSaved(cm); err == nil {
		t.Errorf("a configmap without the record parsed")
	}
}
