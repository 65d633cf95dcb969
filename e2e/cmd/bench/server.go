package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// apiServer reads what one measured command cost the API server: the bytes it sent (its own
// apiserver_response_sizes histogram, whose _sum adds every GET and LIST answer's bytes as
// written to the connection, so after gzip when the client asked for it: the measured clients
// do not, unless -gzip) and its CPU time (utime + stime of its process, /proc/PID/stat).
type apiServer struct {
	pid  int
	kube kubernetes.Interface
}

// userHZ is the unit of /proc/PID/stat's utime and stime (USER_HZ, 100 on Linux).
const userHZ = 100

// findAPIServer finds the kube-apiserver process serving cfg's host (by its --secure-port), on
// this machine: the bench's own cluster or one it held (-hold, -kubeconfig).
func findAPIServer(cfg *rest.Config) (*apiServer, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	port := u.Port()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != "kube-apiserver" {
			continue
		}
		for i, a := range args {
			if a == "--secure-port="+port || (a == "--secure-port" && i+1 < len(args) && args[i+1] == port) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				return &apiServer{pid: pid, kube: kube}, nil
			}
		}
	}
	return nil, fmt.Errorf("no kube-apiserver process with --secure-port=%s on this machine", port)
}

// cpuSeconds is the process's user + system CPU time so far.
func (s *apiServer) cpuSeconds() (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces), from field 3 (state) on: utime and
	// stime are fields 14 and 15.
	rest := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(rest) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", s.pid, len(rest))
	}
	utime, err1 := strconv.ParseInt(rest[11], 10, 64)
	stime, err2 := strconv.ParseInt(rest[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", s.pid, rest[11], rest[12])
	}
	return float64(utime+stime) / userHZ, nil
}

// sentBytes is the sum of apiserver_response_sizes_sum over every series: the bytes of every
// GET and LIST answered so far (discovery and /metrics are not counted), and by verb, resource
// and scope.
func (s *apiServer) sentBytes(ctx context.Context) (int64, map[string]float64, error) {
	body, err := s.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("GET /metrics: %w", err)
	}
	var total float64
	by := map[string]float64{}
	found := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_response_sizes_sum{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, nil, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		total += v
		by[label(line, "verb")+" "+label(line, "resource")+label(line, "subresource")+" ("+label(line, "scope")+")"] += v
		found = true
	}
	if !found {
		return 0, nil, fmt.Errorf("/metrics has no apiserver_response_sizes_sum")
	}
	return int64(total), by, sc.Err()
}

// label is the value of a label of a Prometheus text line.
func label(line, name string) string {
	i := strings.Index(line, name+"=\"")
	if i < 0 {
		return ""
	}
	v := line[i+len(name)+2:]
	return v[:strings.IndexByte(v, '"')]
}

// breakdown is what one command made the server send, by verb, resource and scope, largest
// first.
func breakdown(before, after map[string]float64) string {
	type part struct {
		key string
		b   float64
	}
	var parts []part
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			parts = append(parts, part{k, d})
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].b > parts[j].b })
	var out []string
	for _, p := range parts {
		out = append(out, fmt.Sprintf("%s %.0f kB", p.key, p.b/1e3))
	}
	return strings.Join(out, ", ")
}

// measuredKubeconfig writes a copy of the kubeconfig whose clusters ask for no compression
// (disable-compression: client-go then sends no Accept-Encoding), so the server sends every
// answer as it is: the measured commands read this one unless -gzip.
func measuredKubeconfig(path string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "", err
	}
	for _, c := range cfg.Clusters {
		c.DisableCompression = true
	}
	out := strings.TrimSuffix(path, filepath.Ext(path)) + "-uncompressed"
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		return "", err
	}
	return out, nil
}
