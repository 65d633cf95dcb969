package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/htmltest"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestStuckRollout reproduces kubernetes#67250 with the real StatefulSet controller, proves the
// controller leaves web-0 stuck, then checks stsdiag reports exactly that.
func TestStuckRollout(t *testing.T) {
	cases := map[string]int32{"stuck-one": 1, "stuck-three": 3}
	f := features.New("kubernetes#67250").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			for ns, replicas := range cases {
				if err := scenario.Namespace(ctx, cs, ns); err != nil {
					t.Fatal(err)
				}
				if err := scenario.StuckRollout(ctx, cs, ns, "web", replicas); err != nil {
					t.Fatal(err)
				}
			}
			return ctx
		}).
		Assess("the real controller leaves web-0 stuck for 30s after the fix", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				for ns := range cases {
					set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					pod, err := cs.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if pod.Labels[appsv1.ControllerRevisionHashLabelKey] == set.Status.UpdateRevision {
						t.Fatalf("%s: the controller replaced web-0 by itself: the premise does not hold", ns)
					}
					if set.Status.ReadyReplicas != 0 {
						t.Fatalf("%s: %d ready replicas", ns, set.Status.ReadyReplicas)
					}
				}
				time.Sleep(2 * time.Second)
			}
			return ctx
		}).
		Assess("check reports one StaleRevisionStuck for web-0 and exits 1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for ns, replicas := range cases {
				r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
				if r.code != 1 {
					t.Fatalf("%s: exit %d, want 1", ns, r.code)
				}
				rep := decodeReport(t, r)
				if len(rep.Findings) != 1 {
					t.Fatalf("%s: findings %v, want exactly one", ns, harness.Codes(rep))
				}
				got := rep.Findings[0]
				if got.Code != apiv1.StaleRevisionStuck || got.Pod != "web-0" || got.Severity != apiv1.SeverityError || (got.Reason != "ImagePullBackOff" && got.Reason != "ErrImagePull") {
					t.Fatalf("%s: finding %+v", ns, got)
				}
				if got.Image != scenario.BadImage || !strings.Contains(got.Remedy, "delete pod web-0 -n "+ns) {
					t.Errorf("%s: image %q remedy %q", ns, got.Image, got.Remedy)
				}
				if !strings.Contains(got.Message, "not found") {
					t.Errorf("%s: message lacks the runtime's message: %q", ns, got.Message)
				}
				blocks, _ := harness.Details(got)["blocks"].([]any)
				if len(blocks) != int(replicas)-1 {
					t.Errorf("%s: blocks %v, want %d later ordinals", ns, blocks, replicas-1)
				}
				if len(rep.StatefulSets) != 1 || rep.StatefulSets[0].Status != apiv1.StatusStuck || rep.OpenShift {
					t.Errorf("%s: statefulSets %+v openshift %v", ns, rep.StatefulSets, rep.OpenShift)
				}
			}
			return ctx
		}).
		Assess("the table and kubectl plugin discovery agree", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := pluginRun(t, cfg, "check", "web", "-n", "stuck-one")
			if r.code != 1 || !strings.Contains(r.stdout, "StaleRevisionStuck") || !strings.HasPrefix(r.stdout, "SEVERITY") {
				t.Fatalf("kubectl stsdiag check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "1 finding (1 error") {
				t.Errorf("summary line missing:\n%s", r.stdout)
			}
			all := stsdiagRun(t, cfg, "check", "-A", "-o", "json")
			rep := decodeReport(t, all)
			stuck := 0
			for _, f := range rep.Findings {
				if f.Code == apiv1.StaleRevisionStuck {
					stuck++
				}
			}
			if all.code != 1 || stuck != len(cases) {
				t.Errorf("check -A: exit %d, %d StaleRevisionStuck, want 1 and %d", all.code, stuck, len(cases))
			}
			return ctx
		}).
		Assess("check -A in pages of one object from the real API server gives the same report", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// Pages of one: every kind's namespaces across many pages, merged in the server's key
			// order ("stuck-one/" before "stuck-three/"); the default reads each kind in one page.
			// --full: the read of every object, which the pages serve (without it check -A reads
			// pods only where a StatefulSet's status is not settled: TestTriagedCheck).
			paged := harness.Run(t, cfg.KubeconfigFile(), binDir, []string{"STSDIAG_PAGE_SIZE=1", "STSDIAG_REQUEST_STATS=1"}, stsdiag, "check", "-A", "--full", "-o", "json")
			whole := harness.Run(t, cfg.KubeconfigFile(), binDir, []string{"STSDIAG_REQUEST_STATS=1"}, stsdiag, "check", "-A", "--full", "-o", "json")
			if paged.Code != 1 || whole.Code != 1 {
				t.Fatalf("exit %d in pages, %d whole; want 1 and 1", paged.Code, whole.Code)
			}
			requests := func(stderr string) int {
				n := -1
				if _, err := fmt.Sscanf(stderr[strings.LastIndex(stderr, "stsdiag: "):], "stsdiag: %d HTTP requests", &n); err != nil {
					t.Fatalf("no request count: %q", stderr)
				}
				return n
			}
			// At least 2 StatefulSets, 2 pods and 4 ControllerRevisions here: 5 more pages of one.
			if p, w := requests(paged.Stderr), requests(whole.Stderr); p < w+5 {
				t.Errorf("%d requests in pages of one, %d whole: the LISTs were not paged", p, w)
			}
			for ns := range cases {
				var got []string
				for _, r := range []harness.Result{paged, whole} {
					rep := harness.DecodeReport(t, r.Stdout)
					var mine []string
					for _, f := range rep.Findings {
						if f.Namespace == ns {
							mine = append(mine, fmt.Sprintf("%s %s %s", f.Code, f.Pod, f.Severity))
						}
					}
					for _, set := range rep.StatefulSets {
						if set.Namespace == ns {
							mine = append(mine, fmt.Sprintf("%s %s", set.Name, set.Status))
						}
					}
					got = append(got, strings.Join(mine, ", "))
				}
				if want := "StaleRevisionStuck web-0 error, web Stuck"; got[0] != want || got[1] != want {
					t.Errorf("%s: in pages %q, whole %q; want %q", ns, got[0], got[1], want)
				}
			}
			return ctx
		}).
		Assess("watch -A diagnoses each stuck rollout from its caches' first LISTs, before they are filled", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The premise (web-0 left on the old revision by the real controller) was proven above.
			w := startWatch(t, cfg.KubeconfigFile(), "-A", "--no-conditions", "--metrics-insecure")
			log := w.log.String()
			synced := strings.Index(log, "caches synced")
			if synced < 0 {
				t.Fatalf("no \"caches synced\" in the log of a ready watch:\n%s", log)
			}
			for ns := range cases {
				line := ns + "/web: new finding error StaleRevisionStuck web-0"
				if i := strings.Index(log, line); i < 0 || i > synced {
					t.Errorf("%q at %d, caches synced at %d: want it before, from the first pass over the LISTs:\n%s", line, i, synced, log)
				}
			}
			return ctx
		}).
		Assess("check -o html and explain -o html draw web-0 holding web-1 and web-2 (headless Chromium)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			check := stsdiagRun(t, cfg, "check", "-n", "stuck-three", "-o", "html")
			explain := stsdiagRun(t, cfg, "explain", "web", "-n", "stuck-three", "-o", "html")
			if check.code != 1 || explain.code != 1 {
				t.Fatalf("check -o html: exit %d, explain -o html: exit %d, want 1 and 1\n%s%s", check.code, explain.code, check.stderr, explain.stderr)
			}
			dir := filepath.Join("_artifacts", "html")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			checkFile, explainFile := filepath.Join(dir, "stuck-rollout-check.html"), filepath.Join(dir, "stuck-rollout-explain.html")
			for file, page := range map[string]string{checkFile: check.stdout, explainFile: explain.stdout} {
				if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			browser := htmltest.Browser(t, 30*time.Second)
			// web-0 is on the failing current revision, web-1 and web-2 were never created; the one
			// finding's remedy and the explain command are the commands.
			want := htmltest.DOM{Sets: 1, Status: "Stuck", Ordinals: 3, Holds: 1, HoldsOrdinal: "0", Current: 1, Missing: 2,
				Errors: 1, Commands: 2, Buttons: 2, CopyButtons: "2", Border: "rgb(207, 34, 46)"}
			if got := htmltest.Open(t, browser, checkFile); got != want {
				t.Errorf("check -o html DOM:\n got %+v\nwant %+v", got, want)
			}
			htmltest.Screenshot(t, browser, filepath.Join(dir, "stuck-rollout-check.png"))
			want.Commands, want.Buttons, want.CopyButtons = 1, 1, "1"
			if got := htmltest.Open(t, browser, explainFile); got != want {
				t.Errorf("explain -o html DOM:\n got %+v\nwant %+v", got, want)
			}
			return ctx
		}).Feature()
	testenv.TestInParallel(t, f, pendingAndUnschedulable())
}

// TestNoFalsePositives: healthy, OnDelete, partitioned and Parallel StatefulSets rolled by the real
// controller give no error or warning, and exit 0.
func TestNoFalsePositives(t *testing.T) {
	const ns = "healthy"
	sets := map[string]func(*appsv1.StatefulSet){
		"plain": func(*appsv1.StatefulSet) {},
		"ondelete": func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		},
		"canary": func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}
		},
		"parallel": func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement },
	}
	const newImage = "registry.k8s.io/nginx-slim:0.28"
	f := features.New("no false positives").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			for name, mutate := range sets {
				set := scenario.StatefulSet(ns, name, scenario.GoodImage, 3, false)
				mutate(set)
				if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for name := range sets {
				if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 90*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			return ctx
		}).
		Assess("healthy sets: no finding, exit 0", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json", "--fail-on", "info")
			rep := decodeReport(t, r)
			if r.code != 0 || len(rep.Findings) != 0 || len(rep.StatefulSets) != len(sets) {
				t.Fatalf("exit %d findings %v sets %d", r.code, harness.Codes(rep), len(rep.StatefulSets))
			}
			for _, s := range rep.StatefulSets {
				if s.Status != apiv1.StatusComplete {
					t.Errorf("%s: status %s", s.Name, s.Status)
				}
			}
			return ctx
		}).
		Assess("after a good update: rollouts finish, OnDelete is only informed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			for name := range sets {
				if err := scenario.SetImage(ctx, cs, ns, name, newImage); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range []string{"plain", "parallel"} {
				if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 90*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if err := waitUpdated(ctx, cs, ns, "canary", 1); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitObserved(ctx, cs, ns, "ondelete"); err != nil {
				t.Fatal(err)
			}
			r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
			rep := decodeReport(t, r)
			if r.code != 0 {
				t.Fatalf("exit %d, findings %v", r.code, harness.Codes(rep))
			}
			for _, f := range rep.Findings {
				if f.Code != apiv1.OnDeleteStale || f.StatefulSet != "ondelete" {
					t.Errorf("unexpected finding %+v", f)
				}
			}
			if len(rep.Findings) != 1 {
				t.Errorf("findings %v, want one OnDeleteStale", harness.Codes(rep))
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func waitUpdated(ctx context.Context, cs kubernetes.Interface, ns, name string, want int32) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && set.Status.ObservedGeneration >= set.Generation && set.Status.UpdatedReplicas == want &&
			set.Status.ReadyReplicas == *set.Spec.Replicas, nil
	})
	if err != nil {
		return fmt.Errorf("%s/%s: not %d updated and all ready in time", ns, name, want)
	}
	return nil
}

// TestPlainKubernetes: without the image.openshift.io API the report says so.
func TestPlainKubernetes(t *testing.T) {
	f := features.New("plain Kubernetes").
		Assess(`no ImageStream API → "openshift": false`, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "-n", "default", "-o", "json")
			rep := decodeReport(t, r)
			if r.code != 0 || rep.OpenShift || !strings.Contains(r.stdout, `"openshift": false`) {
				t.Fatalf("exit %d openshift %v", r.code, rep.OpenShift)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestBadInput: what a new user gets wrong yields one clear line and exit 2.
func TestBadInput(t *testing.T) {
	f := features.New("bad input").
		Assess("one-line errors, exit 2", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			bad := t.TempDir() + "/bad-kubeconfig"
			if err := writeFile(bad, "apiVersion: v1\nclusters: [this is: not: valid\n"); err != nil {
				t.Fatal(err)
			}
			cases := map[string][]string{
				"unknown context":      {"check", "--context", "nope"},
				"missing namespace":    {"check", "-n", "does-not-exist"},
				"unknown statefulset":  {"check", "nope", "-n", "default"},
				"malformed kubeconfig": {"check", "--kubeconfig", bad},
				"bad output":           {"check", "-o", "nonsense"},
				"bad fail-on":          {"check", "--fail-on", "sometimes"},
				"unknown flag":         {"check", "--frobnicate"},
				"unreachable API":      {"check", "--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify"},
			}
			for name, args := range cases {
				r := stsdiagRun(t, cfg, args...)
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if r.code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || r.stdout != "" {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and one error line", name, r.code, r.stdout, r.stderr)
				}
				if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "panic") {
					t.Errorf("%s: stack trace: %s", name, r.stderr)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// pendingAndUnschedulable: a claim of a class nobody serves, and a pod no node accepts, on the
// real scheduler and volume binder. It runs beside the kubernetes#67250 feature.
func pendingAndUnschedulable() features.Feature {
	const ns = "pending"
	return features.New("VolumeClaimPending and PodUnschedulable").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			claims := scenario.StatefulSet(ns, "claims", scenario.GoodImage, 1, true)
			claims.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To("nobody-serves")
			picky := scenario.StatefulSet(ns, "picky", scenario.GoodImage, 1, false)
			picky.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "nvme"}
			for _, set := range []*appsv1.StatefulSet{claims, picky} {
				if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			return ctx
		}).
		Assess("both reported with their cause, exit 1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			deadline := time.Now().Add(45 * time.Second)
			for {
				r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
				rep := decodeReport(t, r)
				got := map[string]apiv1.Finding{}
				for _, f := range rep.Findings {
					got[f.StatefulSet] = f
				}
				claim, pod := got["claims"], got["picky"]
				if claim.Code == apiv1.VolumeClaimPending && pod.Code == apiv1.PodUnschedulable {
					if r.code != 1 || !strings.Contains(claim.Message, `StorageClass "nobody-serves" does not exist`) || !strings.Contains(pod.Message, "node affinity/selector") {
						t.Fatalf("exit %d\n%s\n%s", r.code, claim.Message, pod.Message)
					}
					return ctx
				}
				if time.Now().After(deadline) {
					t.Fatalf("findings %v", harness.Codes(rep))
				}
				time.Sleep(2 * time.Second)
			}
		}).Feature()
}

// TestOrphansAndTerminating: a StatefulSet deleted and recreated while its old pod is held by a
// finalizer, and a StatefulSet held in deletion.
func TestOrphansAndTerminating(t *testing.T) {
	const ns, hold = "orphans", "stsdiag.e2e/hold"
	setFinalizers := func(ctx context.Context, t *testing.T, cs kubernetes.Interface, kind, name string, finalizers []string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"finalizers":%s}}`, toJSON(finalizers))
		var err error
		if kind == "pod" {
			_, err = cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		} else {
			_, err = cs.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f := features.New("OrphanedRevision and StatefulSetTerminating").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"web", "db"} {
				if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, name, scenario.GoodImage, 1, false), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			return ctx
		}).
		Assess("recreated over a pod that still terminates: OrphanedRevision", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setFinalizers(ctx, t, cs, "pod", "web-0", []string{hold})
			if err := cs.AppsV1().StatefulSets(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
				t.Fatal(err)
			}
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				pod, perr := cs.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
				return apierrors.IsNotFound(err) && perr == nil && pod.DeletionTimestamp != nil, nil
			})
			if err != nil {
				t.Fatal("the old StatefulSet did not go while its pod terminates")
			}
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, "web", scenario.GoodImage, 1, false), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			r := stsdiagRun(t, cfg, "check", "web", "-n", ns, "-o", "json", "--fail-on", "warning")
			rep := decodeReport(t, r)
			if r.code != 1 || len(rep.Findings) != 1 || rep.Findings[0].Code != apiv1.OrphanedRevision || rep.Findings[0].Pod != "web-0" {
				t.Fatalf("exit %d findings %v", r.code, harness.Codes(rep))
			}
			setFinalizers(ctx, t, cs, "pod", "web-0", nil)
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", time.Minute); err != nil {
				t.Fatal(err)
			}
			if r := stsdiagRun(t, cfg, "check", "web", "-n", ns, "--fail-on", "warning"); r.code != 0 {
				t.Errorf("after the old pod went: exit %d", r.code)
			}
			return ctx
		}).
		Assess("held in deletion: StatefulSetTerminating past the threshold", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setFinalizers(ctx, t, cs, "statefulset", "db", []string{hold})
			if err := cs.AppsV1().StatefulSets(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second)
			r := stsdiagRun(t, cfg, "check", "db", "-n", ns, "-o", "json", "--terminating-threshold", "1s")
			rep := decodeReport(t, r)
			found := false
			for _, f := range rep.Findings {
				if f.Code == apiv1.StatefulSetTerminating && strings.Contains(f.Message, hold) {
					found = true
				}
			}
			if !found || r.code != 0 || rep.StatefulSets[0].Status != apiv1.StatusTerminating {
				t.Errorf("exit %d findings %v", r.code, harness.Codes(rep))
			}
			if r := stsdiagRun(t, cfg, "check", "db", "-n", ns, "-o", "json"); len(decodeReport(t, r).Findings) != 0 {
				t.Errorf("within the default 5m threshold: %v", harness.Codes(decodeReport(t, r)))
			}
			setFinalizers(ctx, t, cs, "statefulset", "db", nil)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func toJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
