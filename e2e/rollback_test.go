package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// fix --rollback, wait --fix --rollback, a set broken since creation and a concurrent template
// change, each on the real controller (issue 17).
func TestRollback(t *testing.T) {
	t.Parallel() // isolated namespaces; runs after the serial tests (TestWatch restarts kube-apiserver)
	testenv.TestInParallel(t, fixRollbackFeature(), waitRollbackFeature(), brokenSinceCreationFeature(), concurrentChangeFeature())
}

// badRollout creates a 3-replica set Ready on GoodImage, then rolls it to BadImage: the
// controller updates the highest ordinal first, web-2 fails on the new revision, web-0 and web-1
// stay Ready on the old one. It returns the good revision's name.
func badRollout(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, withClaims bool) string {
	t.Helper()
	if err := scenario.Namespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	if withClaims {
		if err := scenario.Volumes(ctx, cs, ns, 3); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, "web", scenario.GoodImage, 3, withClaims), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := set.Status.CurrentRevision
	if err := scenario.SetImage(ctx, cs, ns, "web", scenario.BadImage); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitObserved(ctx, cs, ns, "web"); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitPodReason(ctx, cs, ns, "web-2", "ImagePullBackOff", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	return good
}

// stuckOnBadRevision is the premise: web-2 fails on the update revision, web-0 and web-1 are
// Ready on the good current revision, and the controller changes nothing.
func stuckOnBadRevision(cs kubernetes.Interface, ns, good string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if set.Status.CurrentRevision != good || set.Status.UpdateRevision == good || set.Status.ReadyReplicas != 2 {
			return fmt.Errorf("status moved: current %s update %s ready %d", set.Status.CurrentRevision, set.Status.UpdateRevision, set.Status.ReadyReplicas)
		}
		for i, want := range []string{good, good, set.Status.UpdateRevision} {
			pod, err := cs.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("web-%d", i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if rev := pod.Labels[appsv1.ControllerRevisionHashLabelKey]; rev != want || harness.PodReady(pod) != (i < 2) {
				return fmt.Errorf("pod %s: revision %s ready %v", pod.Name, rev, harness.PodReady(pod))
			}
		}
		return nil
	}
}

// readyOn checks every replica is Ready on the revision, the update revision is it, and the
// template's image is image.
func readyOn(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, revision, image string) {
	t.Helper()
	set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if set.Status.UpdateRevision != revision || set.Status.CurrentRevision != revision || set.Spec.Template.Spec.Containers[0].Image != image {
		t.Errorf("status current %s update %s, template image %s; want revision %s, image %s",
			set.Status.CurrentRevision, set.Status.UpdateRevision, set.Spec.Template.Spec.Containers[0].Image, revision, image)
	}
	harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, "web")
}

type fixDocument struct {
	Kind       string          `json:"kind"`
	Actions    []apiv1.Action  `json:"actions"`
	Unrepaired []apiv1.Finding `json:"unrepaired"`
	Rollout    string          `json:"rollout"`
}

func decodeFixDocument(t *testing.T, r result) fixDocument {
	t.Helper()
	var doc fixDocument
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Kind != "FixResult" {
		t.Fatalf("stdout is not a FixResult (%v):\n%s", err, r.stdout)
	}
	return doc
}

func fixRollbackFeature() features.Feature {
	const ns = "rollback-fix"
	var good string
	var before map[string]types.UID
	return features.New("fix --rollback: a failing new template returned to the Ready revision").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			good = badRollout(ctx, t, cs, ns, true)
			before = harness.MarkClaims(ctx, t, cs, ns)
			return ctx
		}).
		Assess("premise: web-2 fails on the new revision and nothing moves for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			harness.HoldsFor(ctx, t, 30*time.Second, stuckOnBadRevision(clientset(t, cfg), ns, good))
			return ctx
		}).
		Assess("without --rollback: left for you, exit 1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--yes", "-o", "json")
			doc := decodeFixDocument(t, r)
			if r.code != 1 || len(doc.Actions) != 0 || len(doc.Unrepaired) != 1 || doc.Unrepaired[0].Code != apiv1.CurrentRevisionFailing || doc.Unrepaired[0].Pod != "web-2" {
				t.Fatalf("exit %d %+v", r.code, doc)
			}
			return ctx
		}).
		Assess("--dry-run=client: the plan names the revision and the image, nothing changes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--rollback", "--dry-run=client")
			want := fmt.Sprintf("roll back statefulset/web -n %s from failing revision", ns)
			if r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "to revision "+good) ||
				!strings.Contains(r.stdout, `container "web" image nginx:1.27-typo → registry.k8s.io/nginx-slim:0.27`) {
				t.Fatalf("exit %d\n%s", r.code, r.stdout)
			}
			if err := stuckOnBadRevision(clientset(t, cfg), ns, good)(ctx); err != nil {
				t.Fatalf("a client dry run changed something: %v", err)
			}
			return ctx
		}).
		Assess("fix --rollback --yes --wait: every pod Ready on the old revision, PVCs the same objects", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "rollbacker", loadRole(t, "../deploy/fix-clusterrole.yaml").Rules)
			start := time.Now()
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--rollback", "--yes", "--wait=2m", "-o", "json", "--kubeconfig", kubeconfig)
			doc := decodeFixDocument(t, r)
			if r.code != 0 || len(doc.Actions) != 2 || doc.Rollout != "complete" || len(doc.Unrepaired) != 0 {
				t.Fatalf("exit %d %+v\n%s", r.code, doc, r.stderr)
			}
			rb, del := doc.Actions[0], doc.Actions[1]
			if rb.Action != apiv1.Rollback || rb.Result != apiv1.ResultDone || rb.Rollback == nil || rb.Rollback.Revision != good ||
				len(rb.Rollback.Images) != 1 || rb.Rollback.Images[0] != (apiv1.ImageChange{Container: "web", From: "nginx:1.27-typo", To: "registry.k8s.io/nginx-slim:0.27"}) {
				t.Errorf("rollback %+v", rb)
			}
			if del.Action != apiv1.DeletePod || del.Pod != "web-2" || del.Result != apiv1.ResultDone {
				t.Errorf("delete %+v", del)
			}
			t.Logf("fix --rollback --yes --wait took %s", time.Since(start).Round(100*time.Millisecond))
			cs := clientset(t, cfg)
			readyOn(ctx, t, cs, ns, good, "registry.k8s.io/nginx-slim:0.27")
			harness.ClaimsKept(ctx, t, cs, ns, before)
			if after := harness.Claims(ctx, t, cs, ns); len(after) != 3 {
				t.Errorf("claims %v, want the same 3", after)
			}
			if check := stsdiagRun(t, cfg, "check", "-n", ns); check.code != 0 {
				t.Errorf("check after the rollback: exit %d", check.code)
			}
			return ctx
		}).Feature()
}

func waitRollbackFeature() features.Feature {
	const ns = "rollback-wait"
	var good string
	return features.New("wait --fix --rollback: rolled back, still a failed deploy").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			good = badRollout(ctx, t, clientset(t, cfg), ns, false)
			return ctx
		}).
		Assess("premise: web-2 fails on the new revision and nothing moves for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			harness.HoldsFor(ctx, t, 30*time.Second, stuckOnBadRevision(clientset(t, cfg), ns, good))
			return ctx
		}).
		Assess("exit 1, result RolledBack naming the revision, JUnit failure, the set Ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			junit := filepath.Join(t.TempDir(), "junit.xml")
			r := stsdiagRun(t, cfg, "wait", "web", "-n", ns, "--fix", "--rollback", "--stuck-grace", "5s", "--timeout", "2m", "-o", "json", "--junit-file", junit)
			var res apiv1.WaitResult
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("not a WaitResult: %v\n%s", err, r.stdout)
			}
			if r.code != 1 || res.Result != apiv1.WaitRolledBack || len(res.RolledBack) != 1 || res.RolledBack[0].Revision != good ||
				res.RolledBack[0].StatefulSet != "web" || !strings.Contains(res.Message, "rolled back "+ns+"/web to revision "+good) {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			data, err := os.ReadFile(junit)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), `failures="1"`) || !strings.Contains(string(data), `type="RolledBack"`) ||
				!strings.Contains(string(data), "rolled back to revision "+good) {
				t.Errorf("junit:\n%s", data)
			}
			readyOn(ctx, t, clientset(t, cfg), ns, good, "registry.k8s.io/nginx-slim:0.27")
			return ctx
		}).Feature()
}

func brokenSinceCreationFeature() features.Feature {
	const ns = "rollback-never-ready"
	var uid types.UID
	return features.New("fix --rollback on a set broken since creation: nothing changed, the reason given").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, "web", scenario.BadImage, 2, false), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitPodReason(ctx, cs, ns, "web-0", "ImagePullBackOff", 90*time.Second); err != nil {
				t.Fatal(err)
			}
			pod, err := cs.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			uid = pod.UID
			return ctx
		}).
		Assess("premise: current = update revision, web-0 never Ready, web-1 never created, for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if set.Status.CurrentRevision == "" || set.Status.CurrentRevision != set.Status.UpdateRevision || set.Status.ReadyReplicas != 0 {
					return fmt.Errorf("status %+v", set.Status)
				}
				pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if err != nil || len(pods.Items) != 1 || pods.Items[0].UID != uid {
					return fmt.Errorf("pods changed (%v)", err)
				}
				return nil
			})
			return ctx
		}).
		Assess("exit 1, no action, CurrentRevisionFailing left with the reason", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--rollback", "--yes", "-o", "json")
			doc := decodeFixDocument(t, r)
			if r.code != 1 || len(doc.Actions) != 0 || len(doc.Unrepaired) != 1 {
				t.Fatalf("exit %d %+v", r.code, doc)
			}
			f := doc.Unrepaired[0]
			if reason, _ := harness.Details(f)["rollback"].(string); f.Code != apiv1.CurrentRevisionFailing || f.Pod != "web-0" ||
				!strings.Contains(reason, "no earlier revision was Ready") || !strings.HasPrefix(f.Remedy, "not rolled back: no earlier revision was Ready") {
				t.Errorf("finding %+v", f)
			}
			table := stsdiagRun(t, cfg, "fix", "-n", ns, "--rollback", "--yes")
			if table.code != 1 || !strings.Contains(table.stdout, "not rolled back: no earlier revision was Ready") {
				t.Errorf("the plan must say why: exit %d\n%s", table.code, table.stdout)
			}
			cs := clientset(t, cfg)
			assertPodUID(ctx, t, cfg, ns, "web-0", uid)
			set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil || set.Spec.Template.Spec.Containers[0].Image != "nginx:1.27-typo" || set.Generation != 1 {
				t.Errorf("the StatefulSet changed: %v", err)
			}
			return ctx
		}).Feature()
}

func concurrentChangeFeature() features.Feature {
	const ns = "rollback-concurrent"
	const theirs = "registry.k8s.io/nginx-slim:0.28"
	var good string
	return features.New("fix --rollback with a template change between plan and patch: refused by the test, never overwritten").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			good = badRollout(ctx, t, clientset(t, cfg), ns, false)
			return ctx
		}).
		Assess("premise: web-2 fails on the new revision and nothing moves for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			harness.HoldsFor(ctx, t, 30*time.Second, stuckOnBadRevision(clientset(t, cfg), ns, good))
			return ctx
		}).
		Assess("someone sets "+theirs+" while the plan waits for y: skipped, theirs kept", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			text, err := onTerminal(t, cfg, "y\n", func() {
				if err := scenario.SetImage(ctx, cs, ns, "web", theirs); err != nil {
					t.Fatal(err)
				}
				if err := scenario.WaitObserved(ctx, cs, ns, "web"); err != nil {
					t.Fatal(err)
				}
			}, "fix", "-n", ns, "--rollback")
			t.Logf("fix --rollback on a terminal:\n%s", text)
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
				t.Errorf("want exit 1, got %v", err)
			}
			if !strings.Contains(text, "skipped  roll back statefulset/web") || !strings.Contains(text, "nothing overwritten") {
				t.Errorf("the rollback must be refused and skipped")
			}
			set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil || set.Spec.Template.Spec.Containers[0].Image != theirs {
				t.Fatalf("the concurrent change was overwritten: %v", err)
			}
			return ctx
		}).Feature()
}
