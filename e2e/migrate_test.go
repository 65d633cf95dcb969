package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestMigrate: migrate on the real control plane, each scenario in its own namespace, all in
// parallel on the suite's one control plane. Every scenario watches its pods' deletions from
// its first object to its end: none, but where the controller's own rollout replaces a pod once
// the new StatefulSet adopted it (kubernetes#67250 cured by Parallel).
func TestMigrate(t *testing.T) {
	t.Parallel() // isolated namespaces; runs after the serial tests (TestWatch restarts kube-apiserver)
	testenv.TestInParallel(t, migratePolicyFeature(), migrateClaimsFeature(), migrateStuckFeature(), migrateKilledFeature(), migrateGitOpsFeature())
}

// deletions records the pod deletions of a namespace from its creation on.
type deletions struct{ *harness.Deletions }

// watchDeletions creates the namespace and watches its pods' deletions until stop.
func watchDeletions(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) *deletions {
	t.Helper()
	if err := scenario.Namespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	d, err := harness.WatchDeletions(ctx, cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	return &deletions{d}
}

func (d *deletions) stop() { d.Stop() }

// none fails if any pod of the namespace was deleted.
func (d *deletions) none(t *testing.T) {
	t.Helper()
	if seen := d.List(); len(seen) > 0 {
		t.Errorf("pods deleted: %+v", seen)
	}
}

// adoptedPod is a pod's identity for a migration: UID, revision label, controller.
type adoptedPod struct {
	uid      types.UID
	revision string
	owner    types.UID
}

func adoptedPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) map[string]adoptedPod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]adoptedPod{}
	for _, p := range pods.Items {
		s := adoptedPod{uid: p.UID, revision: p.Labels[appsv1.ControllerRevisionHashLabelKey]}
		if ref := metav1.GetControllerOf(&p); ref != nil {
			s.owner = ref.UID
		}
		out[p.Name] = s
	}
	return out
}

func decodeMigration(t *testing.T, r result) apiv1.MigrationResult {
	t.Helper()
	var res apiv1.MigrationResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Kind != "MigrationResult" || res.APIVersion != "stsdiag/v1" {
		t.Fatalf("stdout is not a MigrationResult (%v):\n%s", err, r.stdout)
	}
	return res
}

// healthySet creates web with replicas pods (claims of class) and waits for its rollout.
func healthySet(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, replicas int32, class string, mutate func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	t.Helper()
	set := scenario.StatefulSet(ns, "web", scenario.GoodImage, replicas, class != "")
	if class != "" {
		set.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To(class)
	}
	if mutate != nil {
		mutate(set)
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// refusesInPlace proves the premise: the API server refuses changing the field in place.
func refusesInPlace(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, change func(*appsv1.StatefulSet)) {
	t.Helper()
	set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	change(set)
	_, err = cs.AppsV1().StatefulSets(ns).Update(ctx, set, metav1.UpdateOptions{})
	// v1.37.2's declarative validation words it "field is immutable"
	// (pkg/apis/apps/validation/validation.go:261-264).
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "field is immutable") {
		t.Fatalf("the premise does not hold: the API server did not refuse the change in place: %v", err)
	}
}

// unchanged fails unless the StatefulSet is the same object with the same spec, no saved copy
// exists and the pods are as before.
func unchanged(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, before *appsv1.StatefulSet, pods map[string]adoptedPod) {
	t.Helper()
	set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || set.UID != before.UID || set.Generation != before.Generation {
		t.Fatalf("the StatefulSet changed: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, apiv1.SavedCopyName("web"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a saved copy exists: %v", err)
	}
	if now := adoptedPods(ctx, t, cs, ns); !maps.Equal(now, pods) {
		t.Errorf("pods changed: %+v → %+v", pods, now)
	}
}

// migrated fails unless the migration's end holds on the cluster: a new StatefulSet with the
// final spec, controlling the same pods (UIDs, revision labels) — unless rolling, when the
// controller's rollout may already have replaced them: then the document's proof alone says so —
// the saved copy gone.
func migrated(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, res apiv1.MigrationResult, before *appsv1.StatefulSet, pods map[string]adoptedPod, rolling bool) *appsv1.StatefulSet {
	t.Helper()
	if res.Result != apiv1.Migrated || res.Phase != apiv1.PhaseDone || res.Proof == nil {
		t.Fatalf("result %s phase %s: %s", res.Result, res.Phase, res.Message)
	}
	set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if set.UID == before.UID || res.Proof.OldUID != string(before.UID) || res.Proof.NewUID != string(set.UID) {
		t.Errorf("uids: before %s, now %s, proof %s → %s", before.UID, set.UID, res.Proof.OldUID, res.Proof.NewUID)
	}
	if _, marked := set.Annotations[apiv1.MigratedFromAnnotation]; marked || set.Spec.UpdateStrategy.Type != before.Spec.UpdateStrategy.Type {
		t.Errorf("final spec not applied: annotations %v, strategy %s", set.Annotations, set.Spec.UpdateStrategy.Type)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, apiv1.SavedCopyName("web"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the saved copy is still there: %v", err)
	}
	now := adoptedPods(ctx, t, cs, ns)
	for name, p := range pods {
		if n := now[name]; !rolling && (n.uid != p.uid || n.revision != p.revision || n.owner != set.UID) {
			t.Errorf("pod %s: %+v → %+v (new StatefulSet %s)", name, p, n, set.UID)
		}
	}
	if len(res.Proof.Pods) != len(pods) {
		t.Errorf("proof pods %+v, want %d", res.Proof.Pods, len(pods))
	}
	for _, p := range res.Proof.Pods {
		if p.UID != string(pods[p.Name].uid) || p.Owner != string(set.UID) || p.ReplacedBy != "" {
			t.Errorf("proof pod %+v", p)
		}
	}
	if res.Proof.UpdateRevision.From != before.Status.UpdateRevision || res.Proof.UpdateRevision.To != before.Status.UpdateRevision {
		t.Errorf("update revision %+v, was %s", res.Proof.UpdateRevision, before.Status.UpdateRevision)
	}
	return set
}

// desiredFile writes web as it would be in git: no defaults, no status, Parallel.
func desiredFile(t *testing.T, ns string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(path, []byte(`apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
  namespace: `+ns+`
  labels: {app: web}
spec:
  replicas: 2
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: web
        image: `+scenario.GoodImage+`
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: `+scenario.StorageClass+`
      resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Service
metadata: {name: web-unrelated, namespace: `+ns+`}
spec: {clusterIP: None, selector: {app: web}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// migratePolicyFeature: OrderedReady → Parallel on a healthy set with claims, from a file as git
// holds it; --dry-run, nothing to migrate and a class without allowVolumeExpansion change
// nothing.
func migratePolicyFeature() features.Feature {
	const ns = "migrate-policy"
	var (
		d      *deletions
		before *appsv1.StatefulSet
		pods   map[string]adoptedPod
		claims map[string]types.UID
	)
	return features.New("migrate: OrderedReady → Parallel, from a file").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			d = watchDeletions(ctx, t, cs, ns)
			if err := scenario.Volumes(ctx, cs, ns, 2); err != nil {
				t.Fatal(err)
			}
			before = healthySet(ctx, t, cs, ns, 2, scenario.StorageClass, nil)
			pods, claims = adoptedPods(ctx, t, cs, ns), harness.MarkClaims(ctx, t, cs, ns)
			return ctx
		}).
		Assess("premise: the API server refuses podManagementPolicy in place", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			refusesInPlace(ctx, t, clientset(t, cfg), ns, func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement })
			return ctx
		}).
		Assess("--dry-run: the plan, only the policy differs once the API server defaulted the file, nothing changed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "migrate", "-f", desiredFile(t, ns), "--dry-run", "-o", "json")
			res := decodeMigration(t, r)
			if r.code != 0 || res.Result != apiv1.MigrationPlanned || len(res.Changes) != 1 || res.Changes[0].Field != "spec.podManagementPolicy" || !res.Changes[0].Immutable {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			unchanged(ctx, t, clientset(t, cfg), ns, before, pods)
			return ctx
		}).
		Assess("nothing to migrate: exit 0, nothing changed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "migrate", "web", "-n", ns, "--pod-management-policy", "OrderedReady", "--yes", "-o", "json")
			if res := decodeMigration(t, r); r.code != 0 || res.Result != apiv1.NothingToMigrate {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			unchanged(ctx, t, clientset(t, cfg), ns, before, pods)
			return ctx
		}).
		Assess("a claim of a class without allowVolumeExpansion: the API server refuses to grow it, migrate refuses first", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			patch := `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`
			_, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "data-web-0", types.MergePatchType, []byte(patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "must support resize") {
				t.Fatalf("the premise does not hold: the API server did not refuse growing the claim: %v", err)
			}
			r := stsdiagRun(t, cfg, "migrate", "web", "-n", ns, "--claim-size", "data=2Gi", "--yes", "-o", "json")
			res := decodeMigration(t, r)
			if r.code != 1 || res.Result != apiv1.MigrationRefused || len(res.Refusals) != 2 || res.Refusals[0].Reason != "ClaimNotExpandable" {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			unchanged(ctx, t, cs, ns, before, pods)
			return ctx
		}).
		Assess("migrate -f --yes (kubectl stsdiag): every pod adopted, the same UIDs and revision, claims kept, no pod deleted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := pluginRun(t, cfg, "migrate", "-f", desiredFile(t, ns), "--yes", "-o", "json")
			res := decodeMigration(t, r)
			if r.code != 0 {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			cs := clientset(t, cfg)
			set := migrated(ctx, t, cs, ns, res, before, pods, false)
			if set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
				t.Errorf("policy %s", set.Spec.PodManagementPolicy)
			}
			if err := scenario.WaitObserved(ctx, cs, ns, "web"); err != nil {
				t.Fatal(err)
			}
			set, _ = cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if set.Status.CurrentRevision != before.Status.CurrentRevision || set.Status.UpdateRevision != before.Status.UpdateRevision {
				t.Errorf("revisions %s/%s, were %s/%s", set.Status.CurrentRevision, set.Status.UpdateRevision, before.Status.CurrentRevision, before.Status.UpdateRevision)
			}
			harness.ClaimsKept(ctx, t, cs, ns, claims)
			if c := stsdiagRun(t, cfg, "check", "-n", ns); c.code != 0 {
				t.Errorf("check after the migration: exit %d", c.code)
			}
			d.none(t)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context { d.stop(); return ctx }).Feature()
}

// migrateClaimsFeature: claims 1Gi → 2Gi on a class that allows expansion; a shrink refused.
func migrateClaimsFeature() features.Feature {
	const ns = "migrate-claims"
	var (
		d      *deletions
		before *appsv1.StatefulSet
		pods   map[string]adoptedPod
		claims map[string]types.UID
	)
	return features.New("migrate: claims 1Gi → 2Gi").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			d = watchDeletions(ctx, t, cs, ns)
			if err := scenario.ExpandableVolumes(ctx, cs, ns, 2, "/tmp"); err != nil {
				t.Fatal(err)
			}
			before = healthySet(ctx, t, cs, ns, 2, scenario.ExpandableClass, nil)
			pods, claims = adoptedPods(ctx, t, cs, ns), harness.MarkClaims(ctx, t, cs, ns)
			return ctx
		}).
		Assess("premise: the API server refuses a claim template's size in place", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			refusesInPlace(ctx, t, clientset(t, cfg), ns, func(s *appsv1.StatefulSet) {
				s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
			})
			return ctx
		}).
		Assess("a shrink: the API server refuses a smaller claim, migrate refuses first, nothing changed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			patch := `{"spec":{"resources":{"requests":{"storage":"512Mi"}}}}`
			_, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "data-web-0", types.MergePatchType, []byte(patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "can not be less than") {
				t.Fatalf("the premise does not hold: the API server did not refuse shrinking the claim: %v", err)
			}
			r := stsdiagRun(t, cfg, "migrate", "web", "-n", ns, "--claim-size", "data=512Mi", "--yes", "-o", "json")
			res := decodeMigration(t, r)
			if r.code != 1 || res.Result != apiv1.MigrationRefused || len(res.Refusals) != 1 || res.Refusals[0].Reason != "ClaimShrink" {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			unchanged(ctx, t, cs, ns, before, pods)
			return ctx
		}).
		Assess("migrate --claim-size data=2Gi --yes as the shipped migrate role: claims grown first, the same pods adopted, no pod deleted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "migrator", loadRole(t, "../deploy/migrate-clusterrole.yaml").Rules)
			r := stsdiagRun(t, cfg, "migrate", "web", "-n", ns, "--claim-size", "data=2Gi", "--yes", "-o", "json", "--kubeconfig", kubeconfig)
			res := decodeMigration(t, r)
			if r.code != 0 {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			cs := clientset(t, cfg)
			set := migrated(ctx, t, cs, ns, res, before, pods, false)
			if q := set.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Gi" {
				t.Errorf("template %s", q.String())
			}
			if len(res.Claims) != 2 {
				t.Fatalf("claims %+v", res.Claims)
			}
			for _, c := range res.Claims {
				// No resizer serves the class: nothing reported, nothing waited for.
				if c.Result != apiv1.ResultDone || c.From != "1Gi" || c.To != "2Gi" || c.Capacity != "1Gi" || len(c.ResizeStatus) != 0 || !strings.Contains(c.Message, "no resize reported") {
					t.Errorf("claim %+v", c)
				}
				claim, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, c.Name, metav1.GetOptions{})
				if q := claim.Spec.Resources.Requests[corev1.ResourceStorage]; err != nil || q.String() != "2Gi" {
					t.Errorf("claim %s request %s: %v", c.Name, q.String(), err)
				}
			}
			harness.ClaimsKept(ctx, t, cs, ns, claims)
			d.none(t)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context { d.stop(); return ctx }).Feature()
}

// migrateStuckFeature: kubernetes#67250 migrated to Parallel, then finished by the real
// controller itself.
func migrateStuckFeature() features.Feature {
	const ns = "migrate-stuck"
	var (
		d      *deletions
		before *appsv1.StatefulSet
		pods   map[string]adoptedPod
		claims map[string]types.UID
	)
	return features.New("migrate: kubernetes#67250 to Parallel").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			d = watchDeletions(ctx, t, cs, ns)
			if err := scenario.StuckRollout(ctx, cs, ns, "web", 3); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: the rollout does not move for 30 s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.ProvenStuck(ctx, t, cs, ns, "web", 30*time.Second)
			var err error
			if before, err = cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			pods, claims = adoptedPods(ctx, t, cs, ns), harness.MarkClaims(ctx, t, cs, ns)
			return ctx
		}).
		Assess("migrate to Parallel: named the cure, web-0 adopted; then the controller finishes the rollout itself", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "migrate", "web", "-n", ns, "--pod-management-policy", "Parallel", "--yes", "-o", "json")
			res := decodeMigration(t, r)
			if r.code != 0 {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			if !slices.ContainsFunc(res.Findings, func(f apiv1.Finding) bool { return f.Code == apiv1.StaleRevisionStuck && f.Pod == "web-0" }) ||
				!slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "kubernetes#67250") }) {
				t.Errorf("the stuck rollout and its cure are not named: findings %+v notes %q", res.Findings, res.Notes)
			}
			cs := clientset(t, cfg)
			set := migrated(ctx, t, cs, ns, res, before, pods, true)
			// The new StatefulSet's history starts at the update revision (its status names no
			// current one): stateful_set_control.go:326-329@v1.37.2.
			if res.Proof.CurrentRevision.From != before.Status.CurrentRevision || res.Proof.CurrentRevision.To != before.Status.UpdateRevision {
				t.Errorf("current revision %+v, before %s → %s", res.Proof.CurrentRevision, before.Status.CurrentRevision, before.Status.UpdateRevision)
			}
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, "web")
			harness.ClaimsKept(ctx, t, cs, ns, claims)
			// Only the controller's own rollout deleted a pod: web-0, once the new StatefulSet
			// controlled it.
			for _, del := range d.List() {
				if del.Owner != set.UID || del.Name != "web-0" || del.UID != pods["web-0"].uid {
					t.Errorf("pod deleted by another than the new StatefulSet's rollout: %+v (new %s)", del, set.UID)
				}
			}
			if c := stsdiagRun(t, cfg, "check", "-n", ns); c.code != 0 {
				t.Errorf("check after the rollout: exit %d", c.code)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context { d.stop(); return ctx }).Feature()
}

// migrateKilledFeature: killed (SIGKILL) while a finalizer holds the delete; check and --status
// say a migration is half-done; run again: completed.
func migrateKilledFeature() features.Feature {
	const ns = "migrate-killed"
	var (
		d      *deletions
		before *appsv1.StatefulSet
		pods   map[string]adoptedPod
		claims map[string]types.UID
		cmd    *exec.Cmd
		exited chan struct{}
	)
	return features.New("migrate: killed while a finalizer holds the delete, run again").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			d = watchDeletions(ctx, t, cs, ns)
			if err := scenario.Volumes(ctx, cs, ns, 2); err != nil {
				t.Fatal(err)
			}
			before = healthySet(ctx, t, cs, ns, 2, scenario.StorageClass, func(s *appsv1.StatefulSet) { s.Finalizers = []string{"example.com/hold"} })
			pods, claims = adoptedPods(ctx, t, cs, ns), harness.MarkClaims(ctx, t, cs, ns)
			return ctx
		}).
		Assess("premise: migrate deletes the set, the finalizer holds it, its pods are orphaned, migrate waits", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			cmd = exec.Command(stsdiag, "migrate", "web", "-n", ns, "--pod-management-policy", "Parallel", "--yes")
			cmd.Env = append(os.Environ(), "KUBECONFIG="+cfg.KubeconfigFile())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited = make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil || set.DeletionTimestamp == nil {
					return false, nil
				}
				now := adoptedPods(ctx, t, cs, ns)
				return now["web-0"].owner == "" && now["web-1"].owner == "", nil
			})
			if err != nil {
				t.Fatalf("the set was never held with its pods orphaned: %v", err)
			}
			harness.HoldsFor(ctx, t, 6*time.Second, func(ctx context.Context) error {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				switch {
				case err != nil:
					return err
				case set.UID != before.UID || set.DeletionTimestamp == nil || !slices.Contains(set.Finalizers, "example.com/hold"):
					return fmt.Errorf("the StatefulSet is not held: uid %s, finalizers %v", set.UID, set.Finalizers)
				}
				select {
				case <-exited:
					return fmt.Errorf("migrate ended: %v", cmd.ProcessState)
				default:
				}
				return nil
			})
			return ctx
		}).
		Assess("check and --status say a migration is half-done, the saved copy named", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
			f := harness.FindingOf(decodeReport(t, r), apiv1.PodsWithoutStatefulSet, "")
			if r.code != 1 || f == nil || f.Reason != "StatefulSetDeleting" || f.Details.SavedCopy != ns+"/stsdiag-migrate-web" ||
				!slices.Equal(f.Details.Pods, []string{"web-0", "web-1"}) || !slices.Contains(f.Details.Finalizers, "example.com/hold") {
				t.Errorf("check: exit %d finding %+v", r.code, f)
			}
			s := stsdiagRun(t, cfg, "migrate", "web", "-n", ns, "--status", "-o", "json")
			if res := decodeMigration(t, s); s.code != 1 || res.Result != apiv1.MigrationInProgress || res.Phase != apiv1.PhaseDeleting ||
				!strings.Contains(res.Message, "example.com/hold") {
				t.Errorf("--status: exit %d %+v", s.code, res)
			}
			return ctx
		}).
		Assess("SIGKILL; the finalizer goes; check names the pods without their StatefulSet; run again: completed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited
			cs := clientset(t, cfg)
			patch := `[{"op":"test","path":"/metadata/finalizers","value":["example.com/hold"]},{"op":"remove","path":"/metadata/finalizers"}]`
			if _, err := cs.AppsV1().StatefulSets(ns).Patch(ctx, "web", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
			if err != nil {
				t.Fatalf("the StatefulSet did not go: %v", err)
			}
			r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
			if f := harness.FindingOf(decodeReport(t, r), apiv1.PodsWithoutStatefulSet, ""); r.code != 1 || f == nil || f.Reason != "StatefulSetGone" {
				t.Errorf("check: exit %d finding %+v", r.code, f)
			}
			again := stsdiagRun(t, cfg, "migrate", "web", "-n", ns, "--yes", "-o", "json")
			res := decodeMigration(t, again)
			if again.code != 0 {
				t.Fatalf("exit %d %+v", again.code, res)
			}
			set := migrated(ctx, t, cs, ns, res, before, pods, false)
			if set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || !slices.Equal(set.Finalizers, []string{"example.com/hold"}) {
				t.Errorf("policy %s, finalizers %v (the original's kept)", set.Spec.PodManagementPolicy, set.Finalizers)
			}
			harness.ClaimsKept(ctx, t, cs, ns, claims)
			d.none(t)
			// The finalizer the original had is the new one's: let the namespace go.
			_, _ = cs.AppsV1().StatefulSets(ns).Patch(ctx, "web", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if exited != nil {
				_ = cmd.Process.Kill()
				<-exited
			}
			d.stop()
			return ctx
		}).Feature()
}

// migrateGitOpsFeature: a set Argo CD tracks is refused, nothing changed; said paused, planned.
func migrateGitOpsFeature() features.Feature {
	const ns = "migrate-gitops"
	var (
		d      *deletions
		before *appsv1.StatefulSet
		pods   map[string]adoptedPod
	)
	return features.New("migrate: Argo CD-managed refused").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			d = watchDeletions(ctx, t, cs, ns)
			before = healthySet(ctx, t, cs, ns, 1, "", func(s *appsv1.StatefulSet) {
				s.Annotations = map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/StatefulSet:" + ns + "/web"}
			})
			pods = adoptedPods(ctx, t, cs, ns)
			return ctx
		}).
		Assess("refused with the tracking annotation named, nothing changed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "migrate", "web", "-n", ns, "--pod-management-policy", "Parallel", "--yes", "-o", "json")
			res := decodeMigration(t, r)
			if r.code != 1 || res.Result != apiv1.MigrationRefused || len(res.Refusals) != 1 || res.Refusals[0].Reason != "GitOpsManaged" ||
				!strings.Contains(res.Refusals[0].Message, "argocd.argoproj.io/tracking-id") {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			unchanged(ctx, t, clientset(t, cfg), ns, before, pods)
			return ctx
		}).
		Assess("--gitops-paused --dry-run: planned, nothing changed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "migrate", "web", "-n", ns, "--pod-management-policy", "Parallel", "--gitops-paused", "--dry-run")
			if r.code != 0 || !strings.Contains(r.stdout, "Plan (6 steps") || !strings.Contains(r.stdout, "Planned: dry run") {
				t.Fatalf("exit %d\n%s", r.code, r.stdout)
			}
			unchanged(ctx, t, clientset(t, cfg), ns, before, pods)
			d.none(t)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context { d.stop(); return ctx }).Feature()
}
