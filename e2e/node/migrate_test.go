package node

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestMigrateKeepsContainers: through a migration (OrderedReady → Parallel) the real kubelet
// keeps the same containers running — the same container IDs, startedAt and restart counts —
// and the data file each pod wrote on its hostPath volume is still there, as written. No pod is
// deleted while the test runs.
func TestMigrateKeepsContainers(t *testing.T) {
	testenv.Test(t, migrateFeature())
}

// running is what must not change about a pod's container through a migration.
type running struct {
	uid         string
	containerID string
	startedAt   time.Time
	restarts    int32
	ready       bool
}

func runningOf(ctx context.Context, t *testing.T, cfg *envconf.Config, ns string) map[string]running {
	t.Helper()
	pods, err := clientset(t, cfg).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]running{}
	for _, p := range pods.Items {
		s := containerStatus(&p, "web")
		if s == nil || s.State.Running == nil {
			t.Fatalf("pod %s: container web not running: %s", p.Name, statusJSON(&p))
		}
		out[p.Name] = running{uid: string(p.UID), containerID: s.ContainerID, startedAt: s.State.Running.StartedAt.Time, restarts: s.RestartCount, ready: s.Ready}
	}
	return out
}

// dataFiles reads, on the host, the data file of each claim's hostPath volume.
func dataFiles(ctx context.Context, t *testing.T, cfg *envconf.Config, ns string) map[string]string {
	t.Helper()
	cs := clientset(t, cfg)
	claims, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range claims.Items {
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil || pv.Spec.HostPath == nil {
			t.Fatalf("claim %s: volume %s: %v", c.Name, c.Spec.VolumeName, err)
		}
		data, err := os.ReadFile(filepath.Join(pv.Spec.HostPath.Path, "marker"))
		if err != nil {
			t.Fatalf("claim %s: %v", c.Name, err)
		}
		out[c.Name] = string(data)
	}
	return out
}

func migrateFeature() features.Feature {
	const ns = "node-migrate"
	var (
		d      *harness.Deletions
		before map[string]running
		files  map[string]string
	)
	return features.New("migrate keeps the containers and the volumes' data").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, ns, 2)
			var err error
			if d, err = harness.WatchDeletions(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			create(ctx, t, cs, appSet(ns, "web", 2, "serve", "-write", "/data/marker"))
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: the containers run Ready on the real kubelet, each wrote its data file on its volume", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			before = runningOf(ctx, t, cfg, ns)
			files = dataFiles(ctx, t, cfg, ns)
			if len(before) != 2 || len(files) != 2 {
				t.Fatalf("pods %v files %v", before, files)
			}
			for name, r := range before {
				if !r.ready || r.containerID == "" {
					t.Fatalf("pod %s: %+v", name, r)
				}
			}
			for claim, data := range files {
				if len(data) < len("written by web-0 at ") {
					t.Fatalf("claim %s: data file %q", claim, data)
				}
			}
			t.Logf("before: containers %+v; data files %q", before, files)
			return ctx
		}).
		Assess("migrate to Parallel: the same containers keep running, the data files are there", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := run(t, cfg, "migrate", "web", "-n", ns, "--pod-management-policy", "Parallel", "--yes", "-o", "json")
			var res apiv1.MigrationResult
			if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || r.Code != 0 || res.Result != apiv1.Migrated {
				t.Fatalf("exit %d %v: %+v", r.Code, err, res)
			}
			set, err := clientset(t, cfg).AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil || set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || string(set.UID) != res.Proof.NewUID {
				t.Fatalf("statefulset: %v", err)
			}
			// Give the kubelet a few syncs to restart anything it would.
			time.Sleep(5 * time.Second)
			after := runningOf(ctx, t, cfg, ns)
			t.Logf("after: containers %+v", after)
			for name, b := range before {
				if a := after[name]; a.uid != b.uid || a.containerID != b.containerID || !a.startedAt.Equal(b.startedAt) || a.restarts != b.restarts || !a.ready {
					t.Errorf("pod %s: %+v → %+v", name, b, a)
				}
			}
			pods, err := clientset(t, cfg).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range pods.Items {
				if !metav1.IsControlledBy(&pods.Items[i], set) {
					t.Errorf("pod %s not controlled by the new StatefulSet", pods.Items[i].Name)
				}
			}
			if now := dataFiles(ctx, t, cfg, ns); len(now) != len(files) {
				t.Errorf("data files %v, were %v", now, files)
			} else {
				for claim, data := range files {
					if now[claim] != data {
						t.Errorf("claim %s: data file %q, was %q", claim, now[claim], data)
					}
				}
			}
			if seen := d.List(); len(seen) > 0 {
				t.Errorf("pods deleted: %+v", seen)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d.Stop()
			return deleteNamespace(ns)(ctx, t, cfg)
		}).Feature()
}
