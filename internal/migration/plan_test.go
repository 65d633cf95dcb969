package migration_test

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/migration"
)

func running() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "old", Generation: 3, Labels: map[string]string{"app": "web"}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			ServiceName: "web", PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("fast"),
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, CurrentRevision: "web-a", UpdateRevision: "web-a"},
	}
}

func claim(name, class string, phase corev1.PersistentVolumeClaimPhase) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
}

func classes() map[string]*storagev1.StorageClass {
	return map[string]*storagev1.StorageClass{
		"fast": {ObjectMeta: metav1.ObjectMeta{Name: "fast"}, AllowVolumeExpansion: ptr.To(true)},
		"slow": {ObjectMeta: metav1.ObjectMeta{Name: "slow"}},
	}
}

func reasons(p *migration.Plan) []migration.Reason {
	var out []migration.Reason
	for _, r := range p.Refusals {
		out = append(out, r.Reason)
	}
	return out
}

func fields(p *migration.Plan) []string {
	var out []string
	for _, c := range p.Changes {
		s := c.Field + "=" + c.From + "→" + c.To
		if c.Immutable {
			s += " (immutable)"
		}
		out = append(out, s)
	}
	return out
}

// TestMake: what the plan finds differing, and what it refuses, for each change asked.
func TestMake(t *testing.T) {
	cases := []struct {
		name    string
		change  func(run, want *appsv1.StatefulSet)
		claims  []corev1.PersistentVolumeClaim
		pods    []corev1.Pod
		paused  bool
		refused []migration.Reason
		changes []string
		growths []string
	}{
		{name: "nothing differs", change: func(_, _ *appsv1.StatefulSet) {}},
		{name: "to Parallel", change: func(_, w *appsv1.StatefulSet) { w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement },
			changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "empty policy is OrderedReady", change: func(r, w *appsv1.StatefulSet) {
			r.Spec.PodManagementPolicy = ""
			w.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
		}},
		{name: "serviceName", change: func(_, w *appsv1.StatefulSet) { w.Spec.ServiceName = "web-headless" },
			changes: []string{"spec.serviceName=web→web-headless (immutable)"}},
		{name: "claims grow, bound, expandable class", change: grow("2Gi"),
			claims:  []corev1.PersistentVolumeClaim{claim("data-web-0", "fast", corev1.ClaimBound), claim("data-web-1", "fast", corev1.ClaimBound), claim("data-other-0", "slow", corev1.ClaimBound)},
			changes: []string{"spec.volumeClaimTemplates[data].spec.resources.requests.storage=1Gi→2Gi (immutable)"},
			growths: []string{"data-web-0 1Gi→2Gi", "data-web-1 1Gi→2Gi"}},
		{name: "claims shrink", change: grow("512Mi"), refused: []migration.Reason{migration.ClaimShrink}},
		{name: "class without allowVolumeExpansion", change: grow("2Gi"),
			claims:  []corev1.PersistentVolumeClaim{claim("data-web-0", "slow", corev1.ClaimBound)},
			refused: []migration.Reason{migration.ClaimNotExpandable},
			changes: []string{"spec.volumeClaimTemplates[data].spec.resources.requests.storage=1Gi→2Gi (immutable)"}, growths: []string{"data-web-0 1Gi→2Gi"}},
		{name: "class gone", change: grow("2Gi"),
			claims:  []corev1.PersistentVolumeClaim{claim("data-web-0", "gone", corev1.ClaimBound)},
			refused: []migration.Reason{migration.ClaimNotExpandable},
			changes: []string{"spec.volumeClaimTemplates[data].spec.resources.requests.storage=1Gi→2Gi (immutable)"}, growths: []string{"data-web-0 1Gi→2Gi"}},
		{name: "claim pending", change: grow("2Gi"),
			claims:  []corev1.PersistentVolumeClaim{claim("data-web-0", "fast", corev1.ClaimPending)},
			refused: []migration.Reason{migration.ClaimNotBound},
			changes: []string{"spec.volumeClaimTemplates[data].spec.resources.requests.storage=1Gi→2Gi (immutable)"}, growths: []string{"data-web-0 1Gi→2Gi"}},
		{name: "claim template gets another class", change: func(_, w *appsv1.StatefulSet) {
			w.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To("slow")
		}, refused: []migration.Reason{migration.ClaimTemplateChanged}},
		{name: "claim template added", change: func(_, w *appsv1.StatefulSet) {
			w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "logs"}})
		}, refused: []migration.Reason{migration.ClaimTemplateChanged}},
		{name: "claim template removed", change: func(_, w *appsv1.StatefulSet) { w.Spec.VolumeClaimTemplates = nil },
			refused: []migration.Reason{migration.ClaimTemplateChanged}},
		{name: "selector", change: func(_, w *appsv1.StatefulSet) {
			w.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web2"}}
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}, refused: []migration.Reason{migration.SelectorChanged}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "template too: applied after", change: func(_, w *appsv1.StatefulSet) {
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			w.Spec.Template.Spec.Containers[0].Image = "web:2"
			w.Spec.Replicas = ptr.To[int32](3)
		}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)",
			`spec.template=spec.containers[web].image="web:1"→spec.containers[web].image="web:2"`, "spec.replicas=2→3"}},
		{name: "Argo CD tracking annotation", change: func(r, w *appsv1.StatefulSet) {
			r.Annotations = map[string]string{"argocd.argoproj.io/tracking-id": "app:apps/StatefulSet:shop/web"}
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}, refused: []migration.Reason{migration.GitOpsManaged}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "Argo CD, paused", paused: true, change: func(r, w *appsv1.StatefulSet) {
			r.Annotations = map[string]string{"argocd.argoproj.io/tracking-id": "app:apps/StatefulSet:shop/web"}
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "Flux label in the file", change: func(_, w *appsv1.StatefulSet) {
			w.Labels = map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps"}
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}, refused: []migration.Reason{migration.GitOpsManaged}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "Helm release", change: func(r, w *appsv1.StatefulSet) {
			r.Annotations = map[string]string{"meta.helm.sh/release-name": "web"}
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}, refused: []migration.Reason{migration.GitOpsManaged}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "controlled by an operator", change: func(r, w *appsv1.StatefulSet) {
			r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Database", Name: "db", UID: "db", Controller: ptr.To(true)}}
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}, refused: []migration.Reason{migration.ControlledByOwner}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "partitioned rollout under way", change: func(r, w *appsv1.StatefulSet) {
			r.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](1)
			w.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](1)
			r.Status.UpdateRevision = "web-b"
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}, refused: []migration.Reason{migration.PartitionedRollout}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "rollout under way, no partition: named, not refused", change: func(r, w *appsv1.StatefulSet) {
			r.Status.UpdateRevision = "web-b"
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "not observed", change: func(r, w *appsv1.StatefulSet) {
			r.Status.ObservedGeneration = 2
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}, refused: []migration.Reason{migration.NotObserved}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "a pod terminating", change: func(_, w *appsv1.StatefulSet) { w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement },
			pods:    []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web-1", DeletionTimestamp: &metav1.Time{Time: time.Now()}}}},
			refused: []migration.Reason{migration.PodTerminating}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
		{name: "the StatefulSet terminating", change: func(r, w *appsv1.StatefulSet) {
			r.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			w.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}, refused: []migration.Reason{migration.StatefulSetTerminating}, changes: []string{"spec.podManagementPolicy=OrderedReady→Parallel (immutable)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, want := running(), running()
			c.change(run, want)
			p := migration.Make(migration.Input{Running: run, Desired: want, Claims: c.claims, Pods: c.pods, Classes: classes(), GitOpsPaused: c.paused})
			if got := reasons(p); !slices.Equal(got, c.refused) {
				t.Errorf("refused %v, want %v", got, c.refused)
			}
			if got := fields(p); !slices.Equal(got, c.changes) {
				t.Errorf("changes %q, want %q", got, c.changes)
			}
			var growths []string
			for _, g := range p.Growths {
				growths = append(growths, g.Claim+" "+g.From.String()+"→"+g.To.String())
			}
			if !slices.Equal(growths, c.growths) {
				t.Errorf("growths %v, want %v", growths, c.growths)
			}
			if p.Migrates() != slices.ContainsFunc(c.changes, func(s string) bool { return len(s) > 12 && s[len(s)-11:] == "(immutable)" }) {
				t.Errorf("Migrates() %v with changes %v", p.Migrates(), c.changes)
			}
		})
	}
}

func grow(size string) func(_, w *appsv1.StatefulSet) {
	return func(_, w *appsv1.StatefulSet) {
		w.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
	}
}

// TestTemplateRewritten: a dry-run create that stores another template (admission rewrote an
// image) is refused: the controller would compute a new revision and replace every pod.
func TestTemplateRewritten(t *testing.T) {
	run, want := running(), running()
	want.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	created := run.DeepCopy()
	created.Spec.Template.Spec.Containers[0].Image = "registry/web@sha256:abc"
	p := migration.Make(migration.Input{Running: run, Desired: want, Created: created})
	if got := reasons(p); !slices.Equal(got, []migration.Reason{migration.TemplateRewritten}) {
		t.Fatalf("refused %v", got)
	}
	if r := p.Refusals[0]; r.From != `spec.containers[web].image="web:1"` || r.To != `spec.containers[web].image="registry/web@sha256:abc"` {
		t.Errorf("from %q to %q", r.From, r.To)
	}
}

// TestCreateObject: the object created keeps the running template and mutable fields, takes the
// immutable ones asked for, runs under OnDelete and names the original; the final spec is the
// one asked for.
func TestCreateObject(t *testing.T) {
	run, want := running(), running()
	want.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	want.Spec.Template.Spec.Containers[0].Image = "web:2"
	want.Spec.Replicas = ptr.To[int32](5)
	want.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("3Gi")
	run.Finalizers = []string{"example.com/keep", metav1.FinalizerOrphanDependents}
	run.ResourceVersion, run.ManagedFields = "99", []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	p := migration.Make(migration.Input{Running: run, Desired: want})
	c := p.Create
	if c.UID != "" || c.ResourceVersion != "" || c.ManagedFields != nil || c.Generation != 0 {
		t.Errorf("server fields kept: %+v", c.ObjectMeta)
	}
	if !slices.Equal(c.Finalizers, []string{"example.com/keep"}) {
		t.Errorf("finalizers %v", c.Finalizers)
	}
	if c.Annotations[apiv1.MigratedFromAnnotation] != "old" {
		t.Errorf("annotations %v", c.Annotations)
	}
	if c.Spec.Template.Spec.Containers[0].Image != "web:1" || *c.Spec.Replicas != 2 {
		t.Errorf("template image %s replicas %d: want the running ones", c.Spec.Template.Spec.Containers[0].Image, *c.Spec.Replicas)
	}
	q := c.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
	if c.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || q.String() != "3Gi" {
		t.Errorf("immutable fields: %s %s", c.Spec.PodManagementPolicy, q.String())
	}
	if c.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || c.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Errorf("update strategy %+v", c.Spec.UpdateStrategy)
	}
	f := p.Final
	if f.Spec.Template.Spec.Containers[0].Image != "web:2" || *f.Spec.Replicas != 5 || f.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		t.Errorf("final spec %+v", f.Spec)
	}
	if _, marked := f.Annotations[apiv1.MigratedFromAnnotation]; marked {
		t.Errorf("final object marked")
	}
}

func TestClaimOf(t *testing.T) {
	for claim, want := range map[string]bool{"data-web-0": true, "data-web-12": true, "data-web-": false, "data-web-x": false,
		"data-web-api-0": false, "data-webx-0": false, "logs-web-0": false} {
		if got := migration.ClaimOf("data", "web", claim); got != want {
			t.Errorf("ClaimOf(data, web, %s) = %v", claim, got)
		}
	}
}
