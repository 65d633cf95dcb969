// Package cluster runs a local control plane for tests and the demo: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok (a simulated node and registry), built from the
// Go module proxy by e2e/cluster-bins.sh. It implements e2e-framework's E2EClusterProvider.
package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/yaml"
)

// Versions of the components, matching e2e/cluster-bins.sh.
const (
	// DefaultKubernetesVersion is the release of the default suite.
	DefaultKubernetesVersion = "v1.37.2"
	EtcdVersion              = "v3.7.0"
	KwokVersion              = "v0.8.0"
	// NodeName is the simulated node.
	NodeName = "kwok-node-0"
)

// KubernetesVersion is the release of kube-apiserver, kube-controller-manager and
// kube-scheduler: $K8S_VERSION (as for e2e/cluster-bins.sh), else the default.
var KubernetesVersion = func() string {
	if v := os.Getenv("K8S_VERSION"); v != "" {
		return v
	}
	return DefaultKubernetesVersion
}()

//go:embed registry.yaml
var registryYAML []byte

//go:embed stages.yaml.tmpl
var stagesTemplate string

// Cluster is one local control plane.
type Cluster struct {
	// APIServerOnly starts etcd and kube-apiserver only: no controllers, scheduler or nodes
	// touch the objects (the benchmark writes them with their statuses itself).
	APIServerOnly bool
	// RealNode runs a real node (containerd, runc, CNI, the kubelet: node.go) instead of kwok.
	RealNode bool
	// APIServerArgs, if set, is called with the working directory and etcd's URL before
	// kube-apiserver starts and returns extra flags for it; PostStart, if set, runs once the
	// control plane is up (the OpenShift suite's aggregation layer and servers, openshiftapi.go).
	APIServerArgs func(workDir, etcdURL string) ([]string, error)
	PostStart     func(ctx context.Context) error
	// LeaderElect runs kube-controller-manager with leader election, as every real control plane
	// does: it holds and renews the Lease kube-system/kube-controller-manager (the defaults:
	// duration 15 s, renew deadline 10 s, retry every 2 s). Off, it runs alone and no Lease exists.
	LeaderElect bool

	name       string
	binDir     string
	workDir    string
	logDir     string
	kubeconfig string
	apiPort    int
	token      string
	procs      []*process
	node       *realNode
}

type process struct {
	name string
	bin  string
	args []string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

var _ support.E2EClusterProvider = (*Cluster)(nil)

// New returns a cluster provider. Logs go to logDir (kept after Destroy, for failing tests).
func New(logDir string) *Cluster {
	return &Cluster{name: "stsdiag", logDir: logDir}
}

// BinDir is where e2e/cluster-bins.sh caches the binaries.
func BinDir() string {
	if dir := os.Getenv("STSDIAG_CACHE"); dir != "" {
		return filepath.Join(dir, "bin")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	return filepath.Join(cache, "stsdiag", "bin")
}

func (c *Cluster) bin(name string) (string, error) {
	dirs := map[string]string{
		"etcd": "etcd-" + EtcdVersion, "kwok": "kwok-" + KwokVersion,
		"kube-apiserver": "kubernetes-" + KubernetesVersion, "kube-controller-manager": "kubernetes-" + KubernetesVersion,
		"kube-scheduler": "kubernetes-" + KubernetesVersion, "kubelet": "kubernetes-" + KubernetesVersion,
	}
	root := c.binDir
	if root == "" {
		root = BinDir()
	}
	path := filepath.Join(root, dirs[name], name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s not found at %s: run `make cluster-bins` (e2e/cluster-bins.sh) to build it", name, path)
	}
	return path, nil
}

func (c *Cluster) WithName(name string) support.E2EClusterProvider            { c.name = name; return c }
func (c *Cluster) WithVersion(string) support.E2EClusterProvider              { return c }
func (c *Cluster) WithPath(path string) support.E2EClusterProvider            { c.binDir = path; return c }
func (c *Cluster) WithOpts(...support.ClusterOpts) support.E2EClusterProvider { return c }
func (c *Cluster) SetDefaults() support.E2EClusterProvider                    { return c }
func (c *Cluster) GetKubeconfig() string                                      { return c.kubeconfig }
func (c *Cluster) GetKubectlContext() string                                  { return c.name }
func (c *Cluster) GenerateKubeconfig(...string) (string, error)               { return c.kubeconfig, nil }
func (c *Cluster) CreateWithConfig(ctx context.Context, _ string) (string, error) {
	return c.Create(ctx)
}

// LogDir is where each component's log is written.
func (c *Cluster) LogDir() string { return c.logDir }

// APIServerURL is the https address of kube-apiserver.
func (c *Cluster) APIServerURL() string { return fmt.Sprintf("https://127.0.0.1:%d", c.apiPort) }

// ServingCA is the certificate that signed kube-apiserver's self-generated serving certificate
// (the last of the chain it writes to its --cert-dir), PEM: what a kubeconfig or a ClusterProfile
// gives as certificate-authority-data to verify it.
func (c *Cluster) ServingCA() ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(c.workDir, "certs", "apiserver.crt"))
	if err != nil {
		return nil, err
	}
	var last *pem.Block
	for rest := data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		last = block
	}
	if last == nil {
		return nil, errors.New("no certificate in apiserver.crt")
	}
	return pem.EncodeToMemory(last), nil
}

// ExportLogs copies the component logs to dest.
func (c *Cluster) ExportLogs(_ context.Context, dest string) error {
	entries, err := os.ReadDir(c.logDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(c.logDir, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dest, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Create starts etcd → kube-apiserver → kube-controller-manager → kube-scheduler → kwok and
// registers the simulated node. It returns the admin kubeconfig path. On error everything
// started so far is stopped.
func (c *Cluster) Create(ctx context.Context, _ ...string) (kubeconfig string, err error) {
	defer func() {
		if err != nil {
			_ = c.Destroy(context.Background())
		}
	}()
	bins := map[string]string{}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if bins[name], err = c.bin(name); err != nil {
			return "", err
		}
	}
	if c.workDir, err = os.MkdirTemp("", "stsdiag-cluster-"); err != nil {
		return "", err
	}
	if c.logDir == "" {
		c.logDir = filepath.Join(c.workDir, "logs")
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return "", err
	}
	ports, err := freePorts(6)
	if err != nil {
		return "", err
	}
	etcdPort, peerPort := ports[0], ports[1]
	c.apiPort = ports[2]
	if err := c.writeFiles(); err != nil {
		return "", err
	}
	if err := c.prepareNode(); err != nil {
		return "", err
	}
	w := c.workDir

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	if err := c.start("etcd", bins["etcd"], "--data-dir", filepath.Join(w, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--unsafe-no-fsync", "--log-level", "warn"); err != nil {
		return "", err
	}
	if err := c.waitHTTP(ctx, "etcd", etcdURL+"/health", 30*time.Second); err != nil {
		return "", err
	}
	var extra []string
	if c.APIServerArgs != nil {
		if extra, err = c.APIServerArgs(w, etcdURL); err != nil {
			return "", err
		}
	}
	if err := c.start("kube-apiserver", bins["kube-apiserver"], append([]string{
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", fmt.Sprintf("--secure-port=%d", c.apiPort),
		"--cert-dir", filepath.Join(w, "certs"), "--token-auth-file", filepath.Join(w, "tokens.csv"),
		"--authorization-mode", "RBAC", "--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(w, "sa.pub"), "--service-account-signing-key-file", filepath.Join(w, "sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/16", "--allow-privileged=true",
		"--audit-policy-file", filepath.Join(w, "audit-policy.yaml"), "--audit-log-path", c.AuditLog()}, append(c.nodeAPIServerArgs(), extra...)...)...); err != nil {
		return "", err
	}
	if err := c.waitHTTP(ctx, "kube-apiserver", c.APIServerURL()+"/readyz", 90*time.Second); err != nil {
		return "", err
	}
	if c.APIServerOnly {
		return c.kubeconfig, nil
	}
	if err := c.start("kube-controller-manager", bins["kube-controller-manager"], append([]string{"--kubeconfig", c.kubeconfig,
		"--controllers", "statefulset,serviceaccount,garbagecollector,namespace,nodelifecycle,persistentvolume-binder,resourcequota,deployment,replicaset,disruption",
		fmt.Sprintf("--leader-elect=%v", c.LeaderElect), "--bind-address", "127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[3]),
		"--service-account-private-key-file", filepath.Join(w, "sa.key"), "--concurrent-statefulset-syncs=10",
		"--node-monitor-grace-period=20s"}, c.nodeControllerArgs()...)...); err != nil {
		return "", err
	}
	if err := c.start("kube-scheduler", bins["kube-scheduler"], "--kubeconfig", c.kubeconfig, "--leader-elect=false",
		"--bind-address", "127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[4])); err != nil {
		return "", err
	}
	if c.RealNode {
		return c.kubeconfig, c.startNode(ctx)
	}
	if err := c.start("kwok", bins["kwok"], "--kubeconfig", c.kubeconfig, "--config", filepath.Join(w, "stages.yaml"),
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.244.0.0/16", "--node-ip=10.0.0.1", fmt.Sprintf("--server-address=127.0.0.1:%d", ports[5])); err != nil {
		return "", err
	}
	if err := c.createNode(ctx); err != nil {
		return "", err
	}
	if c.PostStart != nil {
		if err := c.PostStart(ctx); err != nil {
			return "", err
		}
	}
	return c.kubeconfig, nil
}

// WaitForControlPlane waits until pods can run: the default ServiceAccount exists and the
// simulated node is Ready without the not-ready taint.
func (c *Cluster) WaitForControlPlane(ctx context.Context, _ klient.Client) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "default ServiceAccount and a Ready node", 90*time.Second, func() (bool, error) {
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, c.nodeName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, t := range node.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
				return false, nil
			}
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// KubernetesRestConfig returns the admin client config (nil before Create).
func (c *Cluster) KubernetesRestConfig() *rest.Config {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil
	}
	return cfg
}

// Clientset returns an admin client.
func (c *Cluster) Clientset() (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// Destroy stops every component it started, newest first (so kube-apiserver before etcd), and
// removes the working directory. Logs stay in LogDir.
func (c *Cluster) Destroy(_ context.Context) error {
	var errs []error
	if err := c.destroyNode(); err != nil {
		errs = append(errs, err)
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	c.procs = nil
	if c.workDir != "" {
		if err := os.RemoveAll(c.workDir); err != nil {
			errs = append(errs, err)
		}
		c.workDir = ""
	}
	return errors.Join(errs...)
}

// RestartAPIServer stops kube-apiserver and starts it again on the same port, as an upgrade or
// a crash would, and waits until it is ready.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	for i, p := range c.procs {
		if p.name != "kube-apiserver" {
			continue
		}
		if err := p.stop(10 * time.Second); err != nil {
			return err
		}
		c.procs = append(c.procs[:i], c.procs[i+1:]...)
		if err := c.start(p.name, p.bin, p.args...); err != nil {
			return err
		}
		return c.waitHTTP(ctx, "kube-apiserver", c.APIServerURL()+"/readyz", 90*time.Second)
	}
	return errors.New("kube-apiserver is not running")
}

func (c *Cluster) writeFiles() error {
	w := c.workDir
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	c.token = hex.EncodeToString(token)
	stages, err := renderStages()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"sa.key":            pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub":            pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"tokens.csv":        []byte(c.token + ",admin,admin-uid,system:masters\n" + c.token + "-preflight," + PreflightUser + "," + PreflightUser + "-uid,system:masters\n"),
		"stages.yaml":       stages,
		"audit-policy.yaml": []byte(auditPolicy),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(w, name), data, 0o600); err != nil {
			return err
		}
	}
	c.kubeconfig = filepath.Join(w, "kubeconfig")
	return c.WriteKubeconfig(c.kubeconfig, "admin", c.token)
}

// auditPolicy records the requests of deploy/watch's ServiceAccount (what e2e/deploy_test.go
// compares with its RBAC) and of PreflightUser (e2e/preflight_test.go: reads and dry runs only),
// no bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["system:serviceaccount:stsdiag:stsdiag", "` + PreflightUser + `"]
- level: None
`

// PreflightUser is a cluster admin whose every request the audit log records: preflight runs as
// it, so that a test can prove it only read and dry-ran.
const PreflightUser = "e2e-preflight"

// WritePreflightKubeconfig writes a kubeconfig for PreflightUser.
func (c *Cluster) WritePreflightKubeconfig(path string) error {
	return c.WriteKubeconfig(path, PreflightUser, c.token+"-preflight")
}

// AuditLog is the kube-apiserver's audit log (JSON lines, see auditPolicy).
func (c *Cluster) AuditLog() string { return filepath.Join(c.logDir, "audit.log") }

// WriteKubeconfig writes a kubeconfig for a token user of this cluster.
func (c *Cluster) WriteKubeconfig(path, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.name] = &clientcmdapi.Cluster{Server: c.APIServerURL(), InsecureSkipTLSVerify: true}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[c.name] = &clientcmdapi.Context{Cluster: c.name, AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = c.name
	return clientcmd.WriteToFile(*cfg, path)
}

// AddTokenUser is not possible after start (the token file is read once); tests use
// ServiceAccount tokens instead.

// UnreadyPattern matches images that run but never pass their readiness probe.
const UnreadyPattern = `-unready$`

// RegistryPattern is the regular expression of images the simulated registry holds.
func RegistryPattern() (string, error) {
	var reg struct {
		Exists []string `json:"exists"`
	}
	if err := yaml.Unmarshal(registryYAML, &reg); err != nil {
		return "", fmt.Errorf("registry.yaml: %w", err)
	}
	if len(reg.Exists) == 0 {
		return "", errors.New("registry.yaml: no exists patterns")
	}
	return "(" + strings.Join(reg.Exists, ")|(") + ")", nil
}

func renderStages() ([]byte, error) {
	re, err := RegistryPattern()
	if err != nil {
		return nil, err
	}
	jq, _ := json.Marshal(re)
	out := strings.ReplaceAll(stagesTemplate, "REGISTRY_JQ", strings.ReplaceAll(string(jq), "'", "''"))
	out = strings.ReplaceAll(out, "REGISTRY_RE", re)
	unready, _ := json.Marshal(UnreadyPattern)
	out = strings.ReplaceAll(out, "UNREADY_JQ", strings.ReplaceAll(string(unready), "'", "''"))
	return []byte(out), nil
}

func (c *Cluster) createNode(ctx context.Context) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        NodeName,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
		Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux"},
	}}
	_, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	return err
}

func (c *Cluster) start(name, bin string, args ...string) error {
	logPath := filepath.Join(c.logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, bin: bin, args: args, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	return nil
}

func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit", p.name, p.cmd.Process.Pid)
	}
}

func (c *Cluster) waitHTTP(ctx context.Context, name, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return c.waitFor(ctx, name+" "+url, timeout, func() (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// waitFor polls check until it is true, failing early if a component exits, and reports the
// log tail of the newest component on failure.
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, check func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := check()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		for _, p := range c.procs {
			select {
			case <-p.done:
				return fmt.Errorf("%s exited (%v) while waiting for %s; log %s:\n%s", p.name, p.err, what, p.log, tail(p.log, 20))
			default:
			}
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			fmt.Fprintf(&b, "timed out after %s waiting for %s; logs in %s", timeout, what, c.logDir)
			if n := len(c.procs); n > 0 {
				p := c.procs[n-1]
				fmt.Fprintf(&b, "\n%s log tail:\n%s", p.name, tail(p.log, 20))
			}
			return errors.New(b.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
