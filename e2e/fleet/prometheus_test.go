package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
)

// Prometheus is Debian's package (2.42, e2e/prometheus.sh installs it), run as child processes
// on 127.0.0.1 with files of their own; the packaged service is not used.
const promBin = "/usr/bin/prometheus"

// shortFor is every alert's for: in the suite's copies of the shipped rule files, so that an
// alert fires within seconds; the for: they ship with is unit-tested by promtool
// (deploy/monitoring/tests).
const shortFor = "10s"

var forLine = regexp.MustCompile(`(?m)^(\s+for: )\S+$`)

// rulesWithShortFor copies a shipped plain rule file with every for: set to shortFor.
func rulesWithShortFor(t *testing.T, shipped, dir string) string {
	t.Helper()
	data, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	short := forLine.ReplaceAll(data, []byte("${1}"+shortFor))
	if n := len(forLine.FindAll(data, -1)); n < 8 {
		t.Fatalf("%s: only %d for: lines", shipped, n)
	}
	path := filepath.Join(dir, filepath.Base(shipped))
	if err := os.WriteFile(path, short, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// freeAddr is a free 127.0.0.1 port (free when chosen).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// process is a child process of the test, stopped by its PID.
type process struct {
	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan struct{}
	once sync.Once
}

func startProcess(t *testing.T, name string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(name, args...), log: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s log:\n%s", filepath.Base(name), tailLines(p.log.String(), 40))
		}
	})
	return p
}

// stop sends SIGTERM, then SIGKILL after 10 s.
func (p *process) stop() {
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

// lockedBuffer is a bytes.Buffer safe for the process's writes and the test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitHTTP waits until url answers 200 (60 s at most).
func waitHTTP(t *testing.T, what, url string, p *process) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready:\n%s", what, tailLines(p.log.String(), 40))
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 60s:\n%s", what, tailLines(p.log.String(), 40))
		}
	}
}

// startWatch runs `stsdiag watch -A` in a member with /metrics plain HTTP (--metrics-insecure:
// the suite's Prometheus servers scrape without a token) and returns its metrics address.
func startWatch(t *testing.T, c *cluster.Cluster) (addr string, w *process) {
	t.Helper()
	addr, health := freeAddr(t), freeAddr(t)
	w = startProcess(t, stsdiag, "watch", "-A", "--kubeconfig", c.GetKubeconfig(), "--metrics-insecure",
		"--metrics-addr", addr, "--health-addr", health)
	waitHTTP(t, "watch", "http://"+health+"/readyz", w)
	return addr, w
}

// startPrometheus runs a Prometheus with config (its rule files in dir) and extra flags, and
// returns its URL.
func startPrometheus(t *testing.T, name, dir, config string, flags ...string) string {
	t.Helper()
	if _, err := os.Stat(promBin); err != nil {
		t.Fatalf("%s: %v (make e2e-fleet installs Debian's prometheus package: e2e/prometheus.sh)", promBin, err)
	}
	path := filepath.Join(dir, name+".yml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := startProcess(t, promBin, append([]string{"--config.file=" + path, "--storage.tsdb.path=" + filepath.Join(dir, name+"-data"),
		"--storage.tsdb.retention.time=1h", "--web.listen-address=" + addr, "--log.level=warn"}, flags...)...)
	waitHTTP(t, "prometheus "+name, "http://"+addr+"/-/ready", p)
	return "http://" + addr
}

// sample is one series of an instant query's answer.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query is an instant query of Prometheus' HTTP API.
func query(t *testing.T, prom, q string) []sample {
	t.Helper()
	resp, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, out.Error)
	}
	return out.Data.Result
}

// labelsOf are the series' labels without __name__, as "k=v,…", sorted.
func labelsOf(samples []sample, keep ...string) []string {
	var out []string
	for _, s := range samples {
		var kv []string
		for _, k := range keep {
			kv = append(kv, k+"="+s.Metric[k])
		}
		out = append(out, strings.Join(kv, ","))
	}
	sort.Strings(out)
	return out
}

// eventually polls until cond holds (3 minutes at most) and returns its last description.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
	}
	t.Fatalf("%s: not within 3m; last: %s", what, last)
}

// TestAlertsAcrossClusters: each member's watch is scraped by its own Prometheus with
// external_labels {cluster: a|b} and deploy/monitoring's rules; a global Prometheus federates
// both and evaluates deploy/monitoring/multicluster's. Member a's stuck web fires
// StsdiagStaleRevisionStuck with cluster, namespace and statefulset — on the global server and on
// a's own; nothing fires for member b, whose web has the same namespace and name, nor for a's
// canary held at its partition or its OnDelete set (the mixin's KubeStatefulSetUpdateNotRolledOut
// fires on both: deploy/monitoring/tests/stsdiag-vs-mixin.test.yaml, on the statuses
// provePremise shows). Then b's watch stops: StsdiagWatchDown fires for cluster b alone.
func TestAlertsAcrossClusters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	single := rulesWithShortFor(t, "../../deploy/monitoring/rules/stsdiag.rules.yaml", dir)
	multi := rulesWithShortFor(t, "../../deploy/monitoring/rules/stsdiag-multicluster.rules.yaml", dir)
	watchA, _ := startWatch(t, memberA)
	watchB, watchProcB := startWatch(t, memberB)
	member := func(name, watch string) string {
		return startPrometheus(t, name, dir, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
  external_labels: {cluster: %s}
rule_files: [%q]
scrape_configs:
- job_name: stsdiag
  static_configs: [{targets: [%q]}]
`, name, single, watch))
	}
	promA, promB := member("a", watchA), member("b", watchB)
	global := startPrometheus(t, "global", dir, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
- job_name: federate
  honor_labels: true
  metrics_path: /federate
  params: {'match[]': ['{__name__=~"stsdiag_.*"}']}
  static_configs: [{targets: [%q, %q]}]
`, multi, strings.TrimPrefix(promA, "http://"), strings.TrimPrefix(promB, "http://")),
		// Federated samples carry their timestamps, and a series with explicit timestamps gets no
		// staleness marker when it is gone: it lives on for the query lookback (5m by default), and
		// a cluster whose watch stopped is down only then (docs/fleet.md). 15s here.
		"--query.lookback-delta=15s")
	provePremise(context.Background(), t)

	firing := `ALERTS{alertstate="firing", alertname!="StsdiagWatchDown"}`
	eventually(t, "StsdiagStaleRevisionStuck firing on the global server", func() (bool, string) {
		got := labelsOf(query(t, global, firing), "alertname", "cluster", "namespace", "statefulset", "severity")
		return strings.Join(got, ";") == "alertname=StsdiagStaleRevisionStuck,cluster=a,namespace=shop,statefulset=web,severity=critical", fmt.Sprint(got)
	})
	// Both members' series are in the store: b's watch runs, a's OnDelete set has its info
	// finding, the partitioned canary has none.
	if got := labelsOf(query(t, global, `stsdiag_diagnosis_duration_seconds_count`), "cluster"); strings.Join(got, " ") != "cluster=a cluster=b" {
		t.Errorf("watches in the store: %v, want a and b", got)
	}
	if got := labelsOf(query(t, global, `stsdiag_statefulset_findings`), "cluster", "statefulset", "code"); !contains(got, "cluster=a,statefulset=cache,code=OnDeleteStale") ||
		contains(got, "cluster=a,statefulset=canary,code=") || len(query(t, global, `stsdiag_statefulset_findings{cluster="b"}`)) != 0 {
		t.Errorf("findings in the store: %v: want a's web and cache, nothing of canary or of b", got)
	}
	// Past every for: since: still a's stuck web alone, on the global server and on a's own
	// (there without the cluster label: Prometheus adds external labels when it sends alerts).
	time.Sleep(2 * 10 * time.Second)
	if got := labelsOf(query(t, global, firing), "alertname", "cluster", "statefulset"); strings.Join(got, ";") != "alertname=StsdiagStaleRevisionStuck,cluster=a,statefulset=web" {
		t.Errorf("firing on the global server: %v", got)
	}
	if got := labelsOf(query(t, promA, firing), "alertname", "namespace", "statefulset", "cluster"); strings.Join(got, ";") != "alertname=StsdiagStaleRevisionStuck,namespace=shop,statefulset=web,cluster=" {
		t.Errorf("firing on a's Prometheus: %v", got)
	}
	if got := query(t, promB, `ALERTS{alertstate="firing"}`); len(got) != 0 {
		t.Errorf("firing on b's Prometheus: %v", labelsOf(got, "alertname", "statefulset"))
	}

	// b's watch goes away: WatchDown for b, not for a.
	watchProcB.stop()
	eventually(t, "StsdiagWatchDown firing for cluster b", func() (bool, string) {
		got := labelsOf(query(t, global, `ALERTS{alertname="StsdiagWatchDown", alertstate="firing"}`), "cluster")
		return strings.Join(got, ";") == "cluster=b", fmt.Sprint(got)
	})
}

func contains(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
