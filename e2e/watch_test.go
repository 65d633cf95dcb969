package e2e

// The monitor needs the ImageStream API; it installs the CRD if an earlier test did not.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// applyDeployRBAC creates what deploy/watch and deploy/watch-fix grant and returns a kubeconfig
// for their ServiceAccount.
func applyDeployRBAC(ctx context.Context, t *testing.T, cfg *envconf.Config) string {
	t.Helper()
	cs := clientset(t, cfg)
	if err := scenario.ApplyManifests(ctx, cs, "..", scenario.WatchManifests...); err != nil {
		t.Fatal(err)
	}
	token, err := scenario.ServiceAccountToken(ctx, cs, "stsdiag", "stsdiag")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "stsdiag-sa.kubeconfig")
	if err := local.WriteKubeconfig(path, "stsdiag", token); err != nil {
		t.Fatal(err)
	}
	return path
}

type watchProcess struct {
	cmd     *exec.Cmd
	metrics string // https://host:port of /metrics
	health  string // http://host:port of /healthz and /readyz
	log     *syncBuffer
	done    chan error
}

// syncBuffer is the watch process's output, written by os/exec's copier and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startWatch runs `stsdiag watch` as the kubeconfig's user: /metrics over TLS (self-signed,
// delegated authentication and authorization), the probes on a second, plain port.
func startWatch(t *testing.T, kubeconfig string, args ...string) *watchProcess {
	t.Helper()
	metricsAddr, healthAddr := freeAddr(t), freeAddr(t)
	args = append([]string{"watch", "--kubeconfig", kubeconfig, "--metrics-addr", metricsAddr, "--health-addr", healthAddr}, args...)
	cmd := exec.Command(stsdiag, args...)
	w := &watchProcess{cmd: cmd, metrics: "https://" + metricsAddr, health: "http://" + healthAddr, log: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = w.log, w.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		t.Logf("watch log:\n%s", w.log.String())
	})
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		resp, err := http.Get(w.health + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("watch never became ready:\n%s", w.log.String())
	}
	if slices.Contains(args, "--leader-elect") {
		return w // a standby is ready before it leads, and logs its start-up only then
	}
	// Ready is set just before the line that ends the start-up; the pipe's copier may deliver
	// the lines a moment after /readyz answers.
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(w.log.String(), " watching StatefulSets in "), nil
	})
	if err != nil {
		t.Fatalf("watch became ready without logging its start-up:\n%s", w.log.String())
	}
	return w
}

// scrapeClient trusts any certificate: watch's is self-signed (no --metrics-cert-dir).
var scrapeClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

// scrape GETs /metrics with a bearer token ("" for none).
func (w *watchProcess) scrape(t *testing.T, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, w.metrics+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var (
	scraperOnce sync.Once
	scraperTok  string
	scraperErr  error
)

// scraperToken is the token of ServiceAccount stsdiag/stsdiag-scraper, bound to deploy/watch's
// ClusterRole stsdiag-metrics-reader as deploy/monitoring binds Prometheus.
func scraperToken(t *testing.T) string {
	t.Helper()
	scraperOnce.Do(func() {
		ctx := context.Background()
		cs, err := local.Clientset()
		if err != nil {
			scraperErr = err
			return
		}
		if scraperErr = scenario.ApplyManifests(ctx, cs, "..", "deploy/watch/namespace.yaml", "deploy/watch/rbac-metrics.yaml"); scraperErr != nil {
			return
		}
		if scraperErr = scenario.ServiceAccountWithClusterRole(ctx, cs, "stsdiag", "stsdiag-scraper", "stsdiag-metrics-reader"); scraperErr != nil {
			return
		}
		scraperTok, scraperErr = scenario.ServiceAccountToken(ctx, cs, "stsdiag", "stsdiag-scraper")
	})
	if scraperErr != nil {
		t.Fatal(scraperErr)
	}
	return scraperTok
}

// metric returns the value of one sample of /metrics (0 if absent), scraped as a reader.
func (w *watchProcess) metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	code, body := w.scrape(t, scraperToken(t))
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		match := true
		for k, v := range labels {
			if !strings.Contains(line, fmt.Sprintf("%s=%q", k, v)) {
				match = false
			}
		}
		if match {
			f, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
			return f
		}
	}
	return 0
}

func stsdiagEvents(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, set string) []corev1.Event {
	t.Helper()
	list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=StatefulSet,involvedObject.name=" + set})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Source.Component == "stsdiag" {
			out = append(out, e)
		}
	}
	return out
}

// TestWatch: the monitor, as the ServiceAccount of deploy/, repairs on its own.
func TestWatch(t *testing.T) {
	var w *watchProcess
	f := features.New("stsdiag watch --fix").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			imageStreams(ctx, t, cfg)
			kubeconfig := applyDeployRBAC(ctx, t, cfg)
			w = startWatch(t, kubeconfig, "-A", "--fix", "--min-stuck", "5s", "--leader-elect", "--leader-elect-namespace", "stsdiag")
			return ctx
		}).
		Assess("kubernetes#67250 recovers by itself; a healthy rollout is never touched", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			for _, ns := range []string{"watch-stuck", "watch-healthy"} {
				if err := scenario.Namespace(ctx, cs, ns); err != nil {
					t.Fatal(err)
				}
			}
			healthy := scenario.StatefulSet("watch-healthy", "web", scenario.GoodImage, 3, false)
			if _, err := cs.AppsV1().StatefulSets("watch-healthy").Create(ctx, healthy, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.StuckRollout(ctx, cs, "watch-stuck", "web", 3); err != nil {
				t.Fatal(err)
			}
			stuckSince := time.Now()
			if err := scenario.SetImage(ctx, cs, "watch-healthy", "web", "registry.k8s.io/nginx-slim:0.28"); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitRolloutComplete(ctx, cs, "watch-stuck", "web", 90*time.Second); err != nil {
				t.Fatal(err)
			}
			t.Logf("kubernetes#67250: from the fixed template (web-0 in ImagePullBackOff) to 3/3 Ready: %s", time.Since(stuckSince).Round(100*time.Millisecond))
			if err := scenario.WaitRolloutComplete(ctx, cs, "watch-healthy", "web", 60*time.Second); err != nil {
				t.Fatal(err)
			}
			if n := w.metric(t, "stsdiag_repairs_total", map[string]string{"namespace": "watch-stuck", "action": "DeletePod", "result": "done"}); n != 1 {
				t.Errorf("repairs in watch-stuck: %v, want exactly 1", n)
			}
			if n := w.metric(t, "stsdiag_findings_total", map[string]string{"namespace": "watch-stuck", "code": "StaleRevisionStuck"}); n < 1 {
				t.Errorf("stsdiag_findings_total for StaleRevisionStuck: %v", n)
			}
			if n := w.metric(t, "stsdiag_repairs_total", map[string]string{"namespace": "watch-healthy"}); n != 0 {
				t.Errorf("the healthy rollout was touched: %v repairs", n)
			}
			if events := stsdiagEvents(ctx, t, cs, "watch-healthy", "web"); len(events) != 0 {
				t.Errorf("events on the healthy set: %+v", events)
			}
			reasons := map[string]bool{}
			for _, e := range stsdiagEvents(ctx, t, cs, "watch-stuck", "web") {
				reasons[e.Reason+"/"+e.Type] = true
			}
			if !reasons["StaleRevisionStuck/Warning"] || !reasons["StaleRevisionStuck/Normal"] {
				t.Errorf("want a finding event and a repair event with reason StaleRevisionStuck: %v", reasons)
			}
			return ctx
		}).
		Assess("the OpenShift seed case recovers by itself", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			const ns = "watch-seed"
			seedScenario(ctx, t, cfg, ns)
			cs := clientset(t, cfg)
			since := time.Now()
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 90*time.Second); err != nil {
				t.Fatal(err)
			}
			t.Logf("OpenShift seed case: from web-0 in ImagePullBackOff to 3/3 Ready: %s", time.Since(since).Round(100*time.Millisecond))
			set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil || set.Spec.Template.Spec.Containers[0].Image != scenario.SeedResolved(ns) {
				t.Fatalf("image not patched to the digest (%v)", err)
			}
			if n := w.metric(t, "stsdiag_repairs_total", map[string]string{"namespace": ns, "action": "PatchImage", "result": "done"}); n != 1 {
				t.Errorf("patches: %v, want 1", n)
			}
			return ctx
		}).
		Assess("a kube-apiserver restart loses no finding and causes no double repair", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			const ns = "watch-restart"
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if err := scenario.StuckRollout(ctx, cs, ns, "web", 2); err != nil {
				t.Fatal(err)
			}
			// A wait that spans the restart too: an unschedulable pod (watch cannot repair it).
			if err := scenario.Namespace(ctx, cs, "wait-restart"); err != nil {
				t.Fatal(err)
			}
			unschedulable := scenario.StatefulSet("wait-restart", "web", scenario.GoodImage, 1, false)
			unschedulable.Spec.Template.Spec.NodeSelector = map[string]string{"disktype": "nvme"}
			if _, err := cs.AppsV1().StatefulSets("wait-restart").Create(ctx, unschedulable, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waited := make(chan result, 1)
			go func() {
				waited <- stsdiagRun(t, cfg, "wait", "web", "-n", "wait-restart", "--stuck-grace", "20s", "--timeout", "2m", "-o", "json")
			}()
			time.Sleep(2 * time.Second)
			if err := local.RestartAPIServer(ctx); err != nil {
				t.Fatal(err)
			}
			if r := <-waited; r.code != 1 || decodeWait(t, r).Result != apiv1.WaitStuck {
				t.Errorf("wait across the restart: exit %d, want 1 (Stuck)", r.code)
			}
			cs = clientset(t, cfg)
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 120*time.Second); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second)
			if n := w.metric(t, "stsdiag_repairs_total", map[string]string{"namespace": ns, "action": "DeletePod", "result": "done"}); n != 1 {
				t.Errorf("repairs across the restart: %v, want exactly 1", n)
			}
			if n := w.metric(t, "stsdiag_findings_total", map[string]string{"namespace": ns, "code": "StaleRevisionStuck"}); n < 1 {
				t.Errorf("finding lost across the restart")
			}
			return ctx
		}).
		Assess("SIGTERM: a clean exit", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-w.done:
				if err != nil {
					t.Errorf("exit: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("watch did not stop within 15s of SIGTERM")
			}
			if !regexp.MustCompile(`leads \(Lease stsdiag/stsdiag-watch\)`).MatchString(w.log.String()) {
				t.Errorf("no leader election in the log")
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
