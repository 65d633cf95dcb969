package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	"github.com/stsdiag/stsdiag/e2e/internal/harness"
)

// A Prometheus server of a test's own: Debian's prometheus package (2.42.0, installed by
// node-bins.sh) run as a child process on 127.0.0.1. Debian's build has no Kubernetes service
// discovery, so the server scrapes a file_sd file that a goroutine rewrites every second from the
// API: one target per running pod of the namespace (its pod IP on the node's CNI bridge, port
// 8080, where the suite's app serves /metrics), labelled namespace and pod. Prometheus picks a
// changed file up at once but applies new targets at most every 5 s (its discovery manager's
// throttle), then scrapes every second.

const promBin = "/usr/bin/prometheus"

// promConfig scrapes and evaluates every second (scrape_timeout may not exceed the interval).
const promConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
- job_name: app
  file_sd_configs:
  - files: [%q]
    refresh_interval: 1s
`

// fileSDGroup is one target group of Prometheus' file_sd format.
type fileSDGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// startPrometheus starts a Prometheus that scrapes the running pods of namespace, waits until it
// is ready, and returns its URL and a stop (idempotent; a test stops it to simulate an outage).
// Cleanup stops it and removes its files; its log (with the file_sd changes) is kept in
// e2e/_artifacts/prometheus/NAMESPACE.log when the test failed.
func startPrometheus(t *testing.T, namespace string) (promURL string, stop func()) {
	t.Helper()
	if _, err := os.Stat(promBin); err != nil {
		t.Fatalf("%s: %v (make node-bins installs Debian's prometheus package)", promBin, err)
	}
	cs, err := local.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "stsdiag-e2e-prom-"+namespace+"-")
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	targets := filepath.Join(dir, "targets.json")
	ctx, cancel := context.WithCancel(context.Background())
	sd := &fileSD{cs: cs, namespace: namespace, path: targets, log: logFile}
	if err := sd.refresh(ctx); err != nil {
		t.Fatalf("file_sd: %v", err)
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, promConfig, targets), 0o644); err != nil {
		t.Fatal(err)
	}

	var p *promProcess
	for attempt := 1; ; attempt++ {
		if p, err = launchPrometheus(dir, config, logFile); err == nil {
			break
		}
		if attempt == 3 {
			cancel()
			t.Fatalf("prometheus: %v; log:\n%s", err, tailFile(logPath, 20))
		}
	}
	var refresher sync.WaitGroup
	refresher.Add(1)
	go func() {
		defer refresher.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			if err := sd.refresh(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(logFile, "e2e: file_sd refresh: %v\n", err)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		refresher.Wait()
		p.stop()
		logFile.Close()
		if t.Failed() {
			keep, _ := filepath.Abs(filepath.Join("..", "_artifacts", "prometheus", namespace+".log"))
			if err := os.MkdirAll(filepath.Dir(keep), 0o755); err == nil {
				if data, err := os.ReadFile(logPath); err == nil && os.WriteFile(keep, data, 0o644) == nil {
					t.Logf("prometheus log kept in %s", keep)
				}
			}
		}
		_ = os.RemoveAll(dir)
	})
	t.Logf("prometheus %s for namespace %s (pid %d, files in %s)", p.url, namespace, p.cmd.Process.Pid, dir)
	return p.url, p.stop
}

// promProcess is a running Prometheus.
type promProcess struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// launchPrometheus starts Prometheus on a free port of 127.0.0.1 and waits (30 s at most) until
// /-/ready answers 200. The port is free when chosen but may be taken before Prometheus binds it:
// the caller retries.
func launchPrometheus(dir, config string, logFile *os.File) (*promProcess, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(promBin,
		"--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--storage.tsdb.retention.time=2h",
		"--web.listen-address="+addr,
		"--log.level=info")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &promProcess{url: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-p.done:
			return nil, fmt.Errorf("exited before it was ready (%s)", cmd.ProcessState)
		default:
		}
		if resp, err := client.Get(p.url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, errors.New("not ready within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends Prometheus: SIGTERM, then SIGKILL after 10 s. Only this process, by its PID.
func (p *promProcess) stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// fileSD writes the file_sd file of a namespace's running pods.
type fileSD struct {
	cs        kubernetes.Interface
	namespace string
	path      string
	log       io.Writer
	last      string
}

// refresh lists the namespace's pods and rewrites the file (atomically, by rename) when the
// targets changed: each Running pod with an IP, at IP:8080, labelled namespace and pod.
func (s *fileSD) refresh(ctx context.Context) error {
	pods, err := s.cs.CoreV1().Pods(s.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	groups := []fileSDGroup{}
	var desc []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			continue
		}
		target := net.JoinHostPort(p.Status.PodIP, "8080")
		groups = append(groups, fileSDGroup{Targets: []string{target}, Labels: map[string]string{"namespace": s.namespace, "pod": p.Name}})
		desc = append(desc, p.Name+"="+target)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Labels["pod"] < groups[j].Labels["pod"] })
	sort.Strings(desc)
	data, err := json.Marshal(groups)
	if err != nil {
		return err
	}
	if string(data) == s.last {
		return nil
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	s.last = string(data)
	fmt.Fprintf(s.log, "e2e: %s file_sd targets: %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(desc, " "))
	return nil
}

func tailFile(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// promQuery runs an instant query through Prometheus' HTTP API (/api/v1/query) and returns the
// values of its vector result, in its order (none: an empty vector).
func promQuery(ctx context.Context, promURL, query string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, promURL+"/api/v1/query", strings.NewReader(url.Values{"query": {query}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %q: HTTP %d: %w", query, resp.StatusCode, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", query, body.ErrorType, body.Error)
	}
	if body.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %s, want vector", query, body.Data.ResultType)
	}
	var out []float64
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %w", query, r.Value[1], err)
		}
		out = append(out, v)
	}
	return out, nil
}

// promValue waits (at most within) until query gives a one-element vector whose value ok
// accepts, and returns it; it fails the test with the last answer otherwise.
func promValue(ctx context.Context, t *testing.T, promURL, query string, within time.Duration, ok func(float64) bool) float64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		vals, err := promQuery(ctx, promURL, query)
		if err == nil && len(vals) == 1 && ok(vals[0]) {
			return vals[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus: %s\n  → %v (%v): not the value wanted within %s", query, vals, err, within)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// errorRatioQuery is the error ratio of a namespace's pods matching a regex over 20 s: the query
// of the suite's own AnalysisTemplate, its arguments filled in.
func errorRatioQuery(ns, pods string) string {
	return fmt.Sprintf(`sum(rate(app_requests_total{namespace=%q,pod=~%q,code="500"}[20s])) / sum(rate(app_requests_total{namespace=%q,pod=~%q}[20s]))`, ns, pods, ns, pods)
}

// argoQuery is the query of Argo Rollouts' documented success-rate AnalysisTemplate
// (argoSuccessRateTemplate) with {{args.service-name}} replaced, as Argo does.
func argoQuery(t *testing.T, service string) string {
	t.Helper()
	var tmpl struct {
		Spec struct {
			Metrics []struct {
				Provider struct {
					Prometheus struct {
						Query string `json:"query"`
					} `json:"prometheus"`
				} `json:"provider"`
			} `json:"metrics"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(argoSuccessRateTemplate), &tmpl); err != nil || len(tmpl.Spec.Metrics) != 1 {
		t.Fatalf("Argo's example template: %v", err)
	}
	return strings.ReplaceAll(tmpl.Spec.Metrics[0].Provider.Prometheus.Query, "{{args.service-name}}", service)
}

func between(lo, hi float64) func(float64) bool {
	return func(v float64) bool { return v >= lo && v <= hi }
}

func equals(want float64) func(float64) bool { return func(v float64) bool { return v == want } }

// TestPrometheusSeesErrorRatio proves the premise of the canary analysis scenarios on the real
// node: the app's own traffic and errors reach Prometheus through the file_sd targets, the error
// ratio query gives ≈0.5 for `serve -errors 0.5` and 0 for `serve -errors 0`, and Argo Rollouts'
// documented success-rate query runs unchanged (≈0.5 and 1). It measures how long after a pod is
// Ready its error ratio can be queried.
func TestPrometheusSeesErrorRatio(t *testing.T) {
	const ns = "node-prom"
	badService, goodService := "bad."+ns+".svc.cluster.local", "good."+ns+".svc.cluster.local"
	var promURL string
	f := features.New("Prometheus scrapes the app on the real node: error ratios and Argo's example query").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, ns, 3)
			promURL, _ = startPrometheus(t, ns)
			return ctx
		}).
		Assess("from Ready to a usable error ratio; ratios ≈0.5 and 0; Argo's success rate ≈0.5 and 1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			pods := []string{"bad-0", "bad-1", "good-0"}
			// Polled from before the pods exist: when each is first seen Ready, and when its error
			// ratio first has a value.
			ready, usable := map[string]time.Time{}, map[string]time.Time{}
			pctx, stop := context.WithCancel(ctx)
			defer stop()
			var mu sync.Mutex
			var poller sync.WaitGroup
			poller.Add(1)
			go func() {
				defer poller.Done()
				for pctx.Err() == nil {
					for _, name := range pods {
						if p, err := cs.CoreV1().Pods(ns).Get(pctx, name, metav1.GetOptions{}); err == nil && harness.PodReady(p) {
							mu.Lock()
							if ready[name].IsZero() {
								ready[name] = time.Now()
							}
							mu.Unlock()
						}
						if vals, err := promQuery(pctx, promURL, errorRatioQuery(ns, name)); err == nil && len(vals) == 1 {
							mu.Lock()
							if usable[name].IsZero() {
								usable[name] = time.Now()
							}
							mu.Unlock()
						}
					}
					time.Sleep(200 * time.Millisecond)
				}
			}()
			create(ctx, t, cs, appSet(ns, "bad", 2, "serve", "-errors", "0.5", "-service", badService))
			create(ctx, t, cs, appSet(ns, "good", 1, "serve", "-errors", "0", "-service", goodService))
			deadline := time.Now().Add(3 * time.Minute)
			for {
				mu.Lock()
				n := 0
				for _, name := range pods {
					if !ready[name].IsZero() && !usable[name].IsZero() {
						n++
					}
				}
				mu.Unlock()
				if n == len(pods) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("within 3m: Ready %v, usable %v", ready, usable)
				}
				time.Sleep(200 * time.Millisecond)
			}
			stop()
			poller.Wait()
			for _, name := range pods {
				lag := usable[name].Sub(ready[name])
				t.Logf("%s: Ready → error ratio usable in %s", name, lag.Round(100*time.Millisecond))
				if lag > 30*time.Second {
					t.Errorf("%s: error ratio usable %s after Ready, want within 30s", name, lag)
				}
			}

			// Every pod is a target and up, labelled with its namespace and name.
			promValue(ctx, t, promURL, fmt.Sprintf(`count(up{job="app",namespace=%q,pod=~"bad-0|bad-1|good-0"} == 1)`, ns), 30*time.Second, equals(3))
			// The ratios, five times 2 s apart: stable, not a lucky sample.
			for i := range 5 {
				bad := promValue(ctx, t, promURL, errorRatioQuery(ns, "bad-0|bad-1"), 30*time.Second, between(0.4, 0.6))
				good := promValue(ctx, t, promURL, errorRatioQuery(ns, "good-0"), 30*time.Second, equals(0))
				argoBad := promValue(ctx, t, promURL, argoQuery(t, badService), 30*time.Second, between(0.4, 0.6))
				argoGood := promValue(ctx, t, promURL, argoQuery(t, goodService), 30*time.Second, equals(1))
				t.Logf("sample %d: error ratio bad %.3f good %g; Argo success rate bad %.3f good %g", i+1, bad, good, argoBad, argoGood)
				time.Sleep(2 * time.Second)
			}
			// The request rate the app generates: 20/s per pod at most (a 50 ms ticker drops ticks
			// when a request or the scheduler is slow; rate() extrapolates less at a series' start).
			rate := promValue(ctx, t, promURL, fmt.Sprintf(`sum(rate(app_requests_total{namespace=%q,pod="good-0"}[20s]))`, ns), 30*time.Second, between(12, 21))
			t.Logf("good-0 serves %.1f requests/s", rate)
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
	testenv.Test(t, f)
}
