// Command fleetbench measures `check -A --cluster-profiles` over many ClusterProfiles: a hub
// (a real kube-apiserver with the ClusterProfile API) whose profiles point, round-robin, at the
// member clusters given (real control planes, e.g. `go run ./cmd/bench -mix realistic -sets 40
// -replicas 5 -hold`, one per member). Every profile is a member of its own to the client: its
// own exec plugin run, credential, transport and TLS connection, its own triaged read; the member
// API servers are shared, so the servers' load is not a fleet's (docs/fleet.md extrapolates it).
// It prints one line per run: profiles, --cluster-concurrency, wall time, peak RSS, the members'
// requests, plugin runs, members reached, StatefulSets and findings.
//
//	cd e2e && go run ./cmd/fleetbench -members /tmp/a/kubeconfig,/tmp/b/kubeconfig -profiles 10,100,1000 -concurrency 10,50 -stsdiag ../bin/kubectl-stsdiag
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/installed"
)

var profilesGVR = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "clusterprofiles"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

func run() error {
	members := flag.String("members", "", "kubeconfigs of the member clusters, comma-separated (each made by the bench's -hold: its API server's certificate in certs/ beside it)")
	profileCounts := flag.String("profiles", "10,100,1000", "numbers of ClusterProfiles to measure")
	concurrencies := flag.String("concurrency", "10", "values of --cluster-concurrency to measure")
	stsdiag := flag.String("stsdiag", "../bin/kubectl-stsdiag", "the binary to measure (run from a copy, as installed)")
	flag.Parse()
	kubeconfigs := strings.Split(*members, ",")
	if *members == "" {
		return errors.New("-members: the member clusters' kubeconfigs")
	}
	bin, cleanup, err := installed.Copy(*stsdiag)
	if err != nil {
		return err
	}
	defer cleanup()
	peakrss, err := buildPeakRSS()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "stsdiag-fleetbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	type server struct {
		url   string
		ca    []byte
		token string
	}
	var servers []server
	for i, path := range kubeconfigs {
		raw, err := clientcmd.LoadFromFile(path)
		if err != nil {
			return err
		}
		ctx := raw.Contexts[raw.CurrentContext]
		ca, err := servingCA(filepath.Join(filepath.Dir(path), "certs", "apiserver.crt"))
		if err != nil {
			return fmt.Errorf("member %s: %w", path, err)
		}
		servers = append(servers, server{url: raw.Clusters[ctx.Cluster].Server, ca: ca, token: raw.AuthInfos[ctx.AuthInfo].Token})
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), []byte(servers[i].token), 0o600); err != nil {
			return err
		}
	}
	plugin := filepath.Join(dir, "plugin.sh")
	if err := os.WriteFile(plugin, []byte(`#!/bin/sh
server=$(printf '%s' "$KUBERNETES_EXEC_INFO" | sed -n 's/.*"server":"\([0-9]*\)".*/\1/p')
printf '%s\n' "$KUBERNETES_EXEC_INFO" | sed -n 's/.*"member":"\([a-z0-9-]*\)".*/\1/p' >> "$TOKENS_DIR/calls"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "$(cat "$TOKENS_DIR/$server")"
`), 0o755); err != nil {
		return err
	}
	providers := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(providers, fmt.Appendf(nil, `{"providers": [{"name": "bench", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1",
  "command": %q, "env": [{"name": "TOKENS_DIR", "value": %q}], "provideClusterInfo": true}}]}`, plugin, dir), 0o644); err != nil {
		return err
	}

	ctx := context.Background()
	hub := cluster.New(filepath.Join(dir, "hub-logs"))
	hub.APIServerOnly = true
	hubKubeconfig, err := hub.Create(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = hub.Destroy(context.Background()) }()
	objs, err := harness.Decode("fleet/testdata/clusterprofile-crd.yaml")
	if err != nil {
		return err
	}
	if err := harness.Apply(ctx, hub.KubernetesRestConfig(), objs); err != nil {
		return err
	}
	hubConfig := hub.KubernetesRestConfig()
	hubConfig.QPS, hubConfig.Burst = 500, 1000
	dyn, err := dynamic.NewForConfig(hubConfig)
	if err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(profilesGVR).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		return err
	}
	hubCS, err := hub.Clientset()
	if err != nil {
		return err
	}

	fmt.Printf("members: %d real API servers; hub %s; load average %s", len(servers), hub.APIServerURL(), loadAverage())
	fmt.Println("| profiles | --cluster-concurrency | wall s | peak RSS MiB | members' requests | per member | plugin runs | reached | StatefulSets | findings |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, n := range ints(*profileCounts) {
		ns := fmt.Sprintf("fleet-%d", n)
		if _, err := hubCS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		for i := range n {
			s := i % len(servers)
			if err := createProfile(ctx, dyn, ns, fmt.Sprintf("m-%04d", i), s, servers[s].url, servers[s].ca); err != nil {
				return err
			}
		}
		for _, c := range ints(*concurrencies) {
			_ = os.Remove(filepath.Join(dir, "calls"))
			cmd := exec.Command(peakrss, bin, "check", "-A", "--cluster-profiles", ns, "--clusterprofile-provider-file", providers,
				"--cluster-concurrency", strconv.Itoa(c), "-o", "json", "--fail-on", "never", "--request-timeout", "120s")
			cmd.Env = append(os.Environ(), "KUBECONFIG="+hubKubeconfig, "STSDIAG_REQUEST_STATS=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%d profiles, concurrency %d: %w\n%s", n, c, err, tail(stderr.String()))
			}
			var rep apiv1.Report
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				return fmt.Errorf("%d profiles: %w", n, err)
			}
			reached := 0
			for _, m := range rep.Clusters {
				if m.Error == "" {
					reached++
				}
			}
			peak := peakLine.FindStringSubmatch(stderr.String())
			reqs := requestsLine.FindStringSubmatch(stderr.String())
			if peak == nil || reqs == nil {
				return fmt.Errorf("no peakrss or request line in %q", tail(stderr.String()))
			}
			kib, _ := strconv.ParseInt(peak[2], 10, 64)
			requests, _ := strconv.Atoi(reqs[1])
			calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
			distinct := map[string]bool{}
			for _, m := range strings.Fields(string(calls)) {
				distinct[m] = true
			}
			fmt.Printf("| %d | %d | %s | %.0f | %d | %.1f | %d (%d members) | %d | %d | %d |\n", n, c, peak[1], float64(kib)/1024, requests,
				float64(requests)/float64(max(reached, 1)), bytes.Count(calls, []byte("\n")), len(distinct), reached, len(rep.StatefulSets), len(rep.Findings))
		}
	}
	return nil
}

func createProfile(ctx context.Context, dyn dynamic.Interface, ns, name string, server int, url string, ca []byte) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"clusterManager": map[string]any{"name": "fleetbench"}},
	}}
	created, err := dyn.Resource(profilesGVR).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Object["status"] = map[string]any{"accessProviders": []any{map[string]any{
		"name": "bench",
		"cluster": map[string]any{"server": url, "certificate-authority-data": base64.StdEncoding.EncodeToString(ca),
			// Each profile its own exec configuration: its own credential and transport in
			// client-go, as distinct clusters have.
			"extensions": []any{map[string]any{"name": "client.authentication.k8s.io/exec", "extension": map[string]any{"server": fmt.Sprint(server), "member": name}}}},
	}}}
	_, err = dyn.Resource(profilesGVR).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

var (
	peakLine     = regexp.MustCompile(`peakrss: wall=([0-9.]+) maxrss_kib=([0-9]+)`)
	requestsLine = regexp.MustCompile(`stsdiag: (\d+) HTTP requests`)
)

// servingCA is the last certificate of kube-apiserver's self-generated serving chain.
func servingCA(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var last *pem.Block
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		last = b
	}
	if last == nil {
		return nil, errors.New("no certificate in " + path)
	}
	return pem.EncodeToMemory(last), nil
}

func buildPeakRSS() (string, error) {
	dir, err := os.MkdirTemp("", "stsdiag-fleetbench-tools-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "peakrss")
	build := exec.Command("go", "build", "-o", out, "./cmd/peakrss")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	return out, build.Run()
}

func ints(list string) []int {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	return string(data)
}
