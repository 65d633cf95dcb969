package e2e

// Helm 4's own SDK (helm.sh/helm/v4: action.Install and action.Upgrade with the kstatus watcher,
// WaitStrategy "watcher") on the real control plane, with and without stsdiag's status reader
// (stuck/kstatus, passed with kube.WithKStatusReaders), and with `stsdiag watch` running instead.

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
	stsdiagkstatus "github.com/stsdiag/stsdiag/stuck/kstatus"
)

// helmChart writes a chart of one StatefulSet web (values image, replicas) and its headless
// Service, as a user's chart would hold it.
func helmChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "web")
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"values.yaml": "image: " + scenario.GoodImage + "\nreplicas: 1\n",
		"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80, name: http}]
`,
		"templates/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: {{ .Values.image | quote }}
`,
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// helm4 is Helm 4's SDK on one namespace of the test cluster.
type helm4 struct {
	cfg    *action.Configuration
	flags  *genericclioptions.ConfigFlags
	ns     string
	chart  string
	reader bool
}

func newHelm4(t *testing.T, cfg *envconf.Config, ns string, withReader bool) *helm4 {
	t.Helper()
	kubeconfig := cfg.KubeconfigFile()
	flags := &genericclioptions.ConfigFlags{KubeConfig: &kubeconfig, Namespace: &ns}
	c := action.NewConfiguration(action.ConfigurationSetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)).Handler()))
	if err := c.Init(flags, ns, "secret"); err != nil {
		t.Fatal(err)
	}
	return &helm4{cfg: c, flags: flags, ns: ns, chart: helmChart(t), reader: withReader}
}

// waitOptions pass stsdiag's status reader when the test asks for it.
func (h *helm4) waitOptions(t *testing.T) []kube.WaitOption {
	if !h.reader {
		return nil
	}
	mapper, err := h.flags.ToRESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	return []kube.WaitOption{kube.WithKStatusReaders(stsdiagkstatus.NewStatusReader(mapper))}
}

// install installs release web, waiting with the kstatus watcher.
func (h *helm4) install(ctx context.Context, t *testing.T, values map[string]any, timeout time.Duration) error {
	t.Helper()
	ch, err := loader.LoadDir(h.chart)
	if err != nil {
		t.Fatal(err)
	}
	i := action.NewInstall(h.cfg)
	i.ReleaseName, i.Namespace, i.Timeout = "web", h.ns, timeout
	i.WaitStrategy, i.WaitOptions = kube.StatusWatcherStrategy, h.waitOptions(t)
	_, err = i.RunWithContext(ctx, ch, values)
	return err
}

// upgrade upgrades release web; wait false applies without waiting (HookOnly).
func (h *helm4) upgrade(ctx context.Context, t *testing.T, values map[string]any, wait bool, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	ch, err := loader.LoadDir(h.chart)
	if err != nil {
		t.Fatal(err)
	}
	u := action.NewUpgrade(h.cfg)
	u.Namespace, u.Timeout, u.WaitStrategy = h.ns, timeout, kube.HookOnlyStrategy
	if wait {
		u.WaitStrategy, u.WaitOptions = kube.StatusWatcherStrategy, h.waitOptions(t)
	}
	start := time.Now()
	_, err = u.RunWithContext(ctx, "web", ch, values)
	return time.Since(start), err
}

// stuck67250 installs web healthy, upgrades it to an image that does not exist without waiting,
// then reverts it with wait: the kubernetes#67250 revert, waited on with timeout. It returns how
// long the revert's wait took and its error.
func stuck67250(ctx context.Context, t *testing.T, cfg *envconf.Config, h *helm4, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	cs := clientset(t, cfg)
	if err := h.install(ctx, t, nil, time.Minute); err != nil {
		t.Fatalf("install: %v", err)
	}
	if _, err := h.upgrade(ctx, t, map[string]any{"image": scenario.BadImage}, false, 0); err != nil {
		t.Fatalf("upgrade to the missing image: %v", err)
	}
	if err := scenario.WaitPodReason(ctx, cs, h.ns, "web-0", "ImagePullBackOff", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return h.upgrade(ctx, t, map[string]any{"image": scenario.GoodImage}, true, timeout)
}

func TestHelm4Waiter(t *testing.T) {
	t.Parallel()
	const helmTimeout = 60 * time.Second
	healthy := features.New("Helm 4: healthy").
		Assess("an install and a healthy upgrade succeed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := "helm4-ok"
			if err := scenario.Namespace(ctx, clientset(t, cfg), ns); err != nil {
				t.Fatal(err)
			}
			h := newHelm4(t, cfg, ns, true)
			if err := h.install(ctx, t, map[string]any{"replicas": 2}, helmTimeout); err != nil {
				t.Fatalf("install: %v", err)
			}
			took, err := h.upgrade(ctx, t, map[string]any{"replicas": 2, "image": scenario.GoodImage + "-b"}, true, helmTimeout)
			if err != nil {
				t.Fatalf("healthy upgrade: %v", err)
			}
			t.Logf("healthy upgrade of 2 pods waited %s", took.Round(100*time.Millisecond))
			return ctx
		}).Feature()
	revert := features.New("Helm 4: kubernetes#67250").
		Assess("kubernetes#67250 revert: Helm alone waits out its timeout, with the reader it fails naming the pod", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			type outcome struct {
				took time.Duration
				err  error
			}
			var wg sync.WaitGroup
			out := map[string]outcome{}
			var mu sync.Mutex
			for _, c := range []struct {
				ns     string
				reader bool
			}{{"helm4-alone", false}, {"helm4-reader", true}} {
				if err := scenario.Namespace(ctx, clientset(t, cfg), c.ns); err != nil {
					t.Fatal(err)
				}
				h := newHelm4(t, cfg, c.ns, c.reader)
				wg.Add(1)
				go func() {
					defer wg.Done()
					took, err := stuck67250(ctx, t, cfg, h, helmTimeout)
					mu.Lock()
					out[c.ns] = outcome{took, err}
					mu.Unlock()
				}()
			}
			wg.Wait()
			// Premise, on the real controller: the reverted rollout does not move by itself.
			harness.ProvenStuck(ctx, t, clientset(t, cfg), "helm4-reader", "web", 30*time.Second)
			alone, reader := out["helm4-alone"], out["helm4-reader"]
			t.Logf("Helm alone: %s: %v", alone.took.Round(100*time.Millisecond), alone.err)
			t.Logf("Helm with stsdiag's reader: %s: %v", reader.took.Round(100*time.Millisecond), reader.err)
			if alone.err == nil || alone.took < helmTimeout-time.Second {
				t.Errorf("Helm alone returned after %s (%v): want its %s timeout waited out", alone.took, alone.err, helmTimeout)
			}
			if reader.err == nil || reader.took > 25*time.Second ||
				!strings.Contains(reader.err.Error(), "status: Failed") || !strings.Contains(reader.err.Error(), "StaleRevisionStuck: web-0") {
				t.Errorf("with the reader: %s, %v; want a failure in < 25 s naming StaleRevisionStuck: web-0", reader.took, reader.err)
			}
			return ctx
		}).Feature()
	missing := features.New("Helm 4: missing image").
		Assess("an upgrade to a missing image fails naming the pod", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := "helm4-missing"
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			h := newHelm4(t, cfg, ns, true)
			if err := h.install(ctx, t, map[string]any{"replicas": 2}, helmTimeout); err != nil {
				t.Fatalf("install: %v", err)
			}
			took, err := h.upgrade(ctx, t, map[string]any{"replicas": 2, "image": scenario.BadImage}, true, helmTimeout)
			// Premise: the new pod really fails to pull, and the rollout does not go on.
			if perr := scenario.WaitPodReason(ctx, cs, ns, "web-1", "ImagePullBackOff", 60*time.Second); perr != nil {
				t.Fatal(perr)
			}
			// The controller counts web-1 in its status at its next sync: wait for it (under load
			// that sync came after the kubelet's first pull failure).
			var status appsv1.StatefulSetStatus
			gerr := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				status = set.Status
				return status.UpdatedReplicas == 1 && status.ReadyReplicas == 1, nil
			})
			if gerr != nil {
				t.Fatalf("premise: web's status never counted web-1 updated and web-0 alone Ready: %+v %v", status, gerr)
			}
			t.Logf("upgrade to %s: %s: %v", scenario.BadImage, took.Round(100*time.Millisecond), err)
			// The StatefulSet does not change when web-1's pull fails; the reader reads web-1 again
			// until the kubelet reports it (stuck/kstatus: reportWindow).
			if err == nil || took > 25*time.Second || !strings.Contains(err.Error(), "status: Failed") || !strings.Contains(err.Error(), "CurrentRevisionFailing: web-1") {
				t.Errorf("%s, %v: want a failure in < 25 s naming CurrentRevisionFailing: web-1", took, err)
			}
			return ctx
		}).Feature()
	watched := features.New("Helm 4: stsdiag watch").
		Assess("with stsdiag watch running, Helm alone fails fast on watch's Stalled condition", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := "helm4-watch"
			if err := scenario.Namespace(ctx, clientset(t, cfg), ns); err != nil {
				t.Fatal(err)
			}
			startWatch(t, applyDeployRBAC(ctx, t, cfg), "-n", ns, "--hold", "10s")
			h := newHelm4(t, cfg, ns, false)
			took, err := stuck67250(ctx, t, cfg, h, helmTimeout)
			harness.ProvenStuck(ctx, t, clientset(t, cfg), ns, "web", 30*time.Second)
			t.Logf("Helm alone with watch running: %s of %s: %v", took.Round(100*time.Millisecond), helmTimeout, err)
			if err == nil || took > 30*time.Second || !strings.Contains(err.Error(), "status: Failed") || !strings.Contains(err.Error(), "web-0") {
				t.Errorf("%s, %v: want a failure within 30 s of the %s timeout naming web-0", took, err, helmTimeout)
			}
			return ctx
		}).Feature()
	testenv.TestInParallel(t, healthy, revert, missing, watched)
}
