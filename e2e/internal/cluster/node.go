package cluster

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// The real node (Cluster.RealNode): the distribution's containerd, runc and CNI plugins
// (e2e/node-bins.sh installs them) and the kubelet of the control plane's release, pulling images
// the suite builds from a registry served in this process. Settings and teardown follow what was
// verified on this kind of machine (shared/REAL-WORLD.md §1).

// RealNodeName is the real node's name (the kubelet's --hostname-override).
const RealNodeName = "stsdiag-node"

// The node's network: a bridge of its own; the kubelet rejects a loopback node IP, so the node's
// address is the bridge's.
const (
	nodeBridge  = "stsdiag0"
	nodeIP      = "10.88.0.1"
	nodeSubnet  = "10.88.0.0/24"
	cniNetwork  = "stsdiag-e2e"
	kubeletCert = "kube-apiserver-kubelet-client"
)

// kubeletSysctls are the tunables the kubelet sets at start (setupKernelTunables,
// pkg/kubelet/cm/container_manager_linux.go:478@v1.37.2), and ip_forward which a CNI gateway
// would set: saved before the node starts, restored after.
var kubeletSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward"}

// hostPaths are written by containerd, the CNI plugins and the kubelet whatever their own
// directories say; each one that did not exist before the node started is removed after.
var hostPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/run/containerd", "/var/lib/cni", "/run/netns"}

type realNode struct {
	dir          string // everything of the node: containerd root and state, kubelet root, logs, volumes
	registry     *localRegistry
	containerd   *process
	kubelet      *process
	kubeletBin   string
	kubeletArgs  []string
	sysctls      map[string]string
	newPaths     []string // hostPaths that did not exist before
	netnsBefore  map[string]bool
	cgroupsNew   []string // kubepods cgroup directories that did not exist before
	bridgeMade   bool
	clientCAFile string // CA of the kube-apiserver's client certificate to the kubelet
	clientCert   string
	clientKey    string
}

func (n *realNode) sock() string { return filepath.Join(n.dir, "containerd", "containerd.sock") }

// prepareNode makes the node's directory and the kube-apiserver's client certificate to the
// kubelet (the kubelet authenticates callers by certificate or token, anonymous is off).
func (c *Cluster) prepareNode() error {
	if !c.RealNode {
		return nil
	}
	n := &realNode{dir: filepath.Join(c.workDir, "node")}
	c.node = n
	pki := filepath.Join(n.dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stsdiag-kubelet-client-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: kubeletCert},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	n.clientCAFile, n.clientCert, n.clientKey = filepath.Join(pki, "client-ca.crt"), filepath.Join(pki, "apiserver-kubelet-client.crt"), filepath.Join(pki, "apiserver-kubelet-client.key")
	files := map[string][]byte{
		n.clientCAFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		n.clientCert:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		n.clientKey:    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// nodeAPIServerArgs are kube-apiserver's flags for a real node: reach the kubelet at its
// InternalIP (the node has no resolvable hostname) with a client certificate.
func (c *Cluster) nodeAPIServerArgs() []string {
	if c.node == nil {
		return nil
	}
	return []string{"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-client-certificate=" + c.node.clientCert, "--kubelet-client-key=" + c.node.clientKey}
}

// nodeControllerArgs are kube-controller-manager's flags for a real node: the root CA publisher
// writes kube-root-ca.crt, which every pod's service-account token volume projects. A second
// --controllers adds to the first (a string-slice flag).
func (c *Cluster) nodeControllerArgs() []string {
	if c.node == nil {
		return nil
	}
	return []string{"--controllers=root-ca-cert-publisher", "--root-ca-file=" + filepath.Join(c.workDir, "certs", "apiserver.crt")}
}

// nodeName is the node pods run on.
func (c *Cluster) nodeName() string {
	if c.RealNode {
		return RealNodeName
	}
	return NodeName
}

// Registry is the host:port of the real node's registry ("" without a real node).
func (c *Cluster) Registry() string {
	if c.node == nil || c.node.registry == nil {
		return ""
	}
	return c.node.registry.host
}

// Image is the reference of an image in the real node's registry, e.g. Image(AppImage).
func (c *Cluster) Image(nameTag string) string { return c.Registry() + "/" + nameTag }

// NodeDir is the real node's directory, removed by Destroy (hostPath volumes go under it).
func (c *Cluster) NodeDir() string {
	if c.node == nil {
		return ""
	}
	return c.node.dir
}

// startNode starts the registry, containerd and the kubelet, and registers the node.
func (c *Cluster) startNode(ctx context.Context) error {
	n := c.node
	var err error
	if n.kubeletBin, err = c.bin("kubelet"); err != nil {
		return err
	}
	for _, tool := range []string{"containerd", "ctr", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: run `make node-bins` (e2e/node-bins.sh) to install the node's packages", tool)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return fmt.Errorf("CNI plugins not found in /usr/lib/cni: run `make node-bins` (e2e/node-bins.sh)")
	}
	for _, p := range hostPaths {
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			n.newPaths = append(n.newPaths, p)
		}
	}
	n.netnsBefore = map[string]bool{}
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			n.netnsBefore[e.Name()] = true
		}
	}
	for _, dir := range cgroupHierarchies() {
		if _, err := os.Stat(filepath.Join(dir, "kubepods")); os.IsNotExist(err) {
			n.cgroupsNew = append(n.cgroupsNew, filepath.Join(dir, "kubepods"))
		}
	}
	n.sysctls = map[string]string{}
	for _, s := range kubeletSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", s)); err == nil {
			n.sysctls[s] = strings.TrimSpace(string(v))
		}
	}

	if n.registry, err = startRegistry(filepath.Join(c.logDir, "registry.log")); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if err := n.registry.pushImages(ctx, n.dir); err != nil {
		return err
	}
	if err := n.writeConfig(c); err != nil {
		return err
	}
	if err := n.makeBridge(); err != nil {
		return err
	}
	cd, _ := exec.LookPath("containerd")
	if n.containerd, err = launch(c.logDir, "containerd", cd, "--config", filepath.Join(n.dir, "containerd", "config.toml")); err != nil {
		return err
	}
	if err := n.waitContainerd(ctx); err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	// kube-apiserver's client certificate may use the kubelet API (logs, exec).
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "stsdiag-e2e:kubelet-api"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: kubeletCert}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := c.StartKubelet(ctx); err != nil {
		return err
	}
	return nil
}

func (n *realNode) writeConfig(c *Cluster) error {
	d := n.dir
	for _, sub := range []string{"containerd/certs.d/" + n.registry.host, "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "volume-plugins", "volumes", "runc"} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o755); err != nil {
			return err
		}
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	// containerd 1.6 (config version 2). restrict_oom_score_adj: this VM's root lacks
	// CAP_SYS_RESOURCE, so the sandbox's oom_score_adj -998 cannot be written and runc fails.
	containerdConfig := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[7]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[8]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[9]q
`, filepath.Join(d, "containerd/root"), filepath.Join(d, "containerd/state"), n.sock(), n.sock()+".ttrpc",
		filepath.Join(d, "containerd/opt"), c.Image(PauseImage), filepath.Join(d, "runc"),
		filepath.Join(d, "cni/net.d"), filepath.Join(d, "containerd/certs.d"))
	hostsToml := fmt.Sprintf(`server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
  skip_verify = true
`, n.registry.host)
	// The bridge exists already with the node's address (makeBridge): no gateway, so the plugin
	// neither readdresses it nor turns on IP forwarding.
	cniConfig := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isGateway": false,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q, "rangeStart": "10.88.0.10", "gateway": %q}]]}
  }]
}
`, cniNetwork, nodeBridge, filepath.Join(d, "cni/ipam"), nodeSubnet, nodeIP)
	// failCgroupV1: false, else the kubelet refuses this cgroup v1 host; makeIPTablesUtilChains:
	// false, else it adds a KUBE-FIREWALL chain with a DROP rule to the host. Webhook
	// authentication and authorization: pods on the bridge can reach the kubelet's port.
	kubeletConfig := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
makeIPTablesUtilChains: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://%[1]s
imageServiceEndpoint: unix://%[1]s
address: %[2]s
port: %[3]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[4]d
clusterDNS: ["10.96.0.10"]
clusterDomain: cluster.local
volumePluginDir: %[5]q
podLogsDir: %[6]q
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true, cacheTTL: 10s}
  x509: {clientCAFile: %[7]q}
authorization:
  mode: Webhook
  webhook: {cacheAuthorizedTTL: 10s, cacheUnauthorizedTTL: 5s}
evictionHard: {"memory.available": "1Mi", "nodefs.available": "1%%", "nodefs.inodesFree": "1%%", "imagefs.available": "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
`, n.sock(), nodeIP, ports[0], ports[1], filepath.Join(d, "volume-plugins"), filepath.Join(d, "pod-logs"), n.clientCAFile)
	files := map[string]string{
		"containerd/config.toml":                                containerdConfig,
		"containerd/certs.d/" + n.registry.host + "/hosts.toml": hostsToml,
		"cni/net.d/10-" + cniNetwork + ".conflist":              cniConfig,
		"kubelet-config.yaml":                                   kubeletConfig,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(d, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	kubeconfig := filepath.Join(d, "kubelet.kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig, "admin", c.token); err != nil {
		return err
	}
	n.kubeletArgs = []string{"--config", filepath.Join(d, "kubelet-config.yaml"), "--kubeconfig", kubeconfig,
		"--root-dir", filepath.Join(d, "kubelet"), "--hostname-override", RealNodeName, "--node-ip", nodeIP, "--v=2"}
	return nil
}

func (n *realNode) makeBridge() error {
	if err := exec.Command("ip", "link", "show", nodeBridge).Run(); err == nil {
		return fmt.Errorf("a link named %s exists already (left by another run?): delete it with `ip link del %s`", nodeBridge, nodeBridge)
	}
	for _, args := range [][]string{
		{"link", "add", nodeBridge, "type", "bridge"},
		{"addr", "add", nodeIP + "/24", "dev", nodeBridge},
		{"link", "set", nodeBridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		n.bridgeMade = true
	}
	return nil
}

func (n *realNode) waitContainerd(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-n.containerd.done:
			return false, fmt.Errorf("containerd exited (%v); log %s:\n%s", n.containerd.err, n.containerd.log, tail(n.containerd.log, 20))
		default:
		}
		// Probing before the socket exists costs ctr a 10 s dial timeout.
		if fi, err := os.Stat(n.sock()); err != nil || fi.Mode()&os.ModeSocket == 0 {
			return false, nil
		}
		return n.ctr(ctx, "version") == nil, nil
	})
}

func (n *realNode) ctr(ctx context.Context, args ...string) error {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "ctr", append([]string{"--address", n.sock(), "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (n *realNode) ctrList(ctx context.Context, what string) []string {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "ctr", "--address", n.sock(), "--namespace", "k8s.io", what, "ls", "-q").Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// StartKubelet starts the real node's kubelet (again, after StopKubelet) and waits until the
// node is Ready without the not-ready taint.
func (c *Cluster) StartKubelet(ctx context.Context) error {
	n := c.node
	if n == nil {
		return errors.New("no real node")
	}
	if n.kubelet != nil && n.kubelet.running() {
		return errors.New("the kubelet is running")
	}
	var err error
	if n.kubelet, err = launch(c.logDir, "kubelet", n.kubeletBin, n.kubeletArgs...); err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-n.kubelet.done:
			return false, fmt.Errorf("kubelet exited (%v); log %s:\n%s", n.kubelet.err, n.kubelet.log, tail(n.kubelet.log, 30))
		default:
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, RealNodeName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ok, why := nodeReady(node)
		last = why
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready (%s): %w; kubelet log %s", RealNodeName, last, err, n.kubelet.log)
	}
	return nil
}

func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// StopKubelet stops the real node's kubelet as a lost node would: its containers keep running,
// nothing reports them any more.
func (c *Cluster) StopKubelet() error {
	if c.node == nil || c.node.kubelet == nil {
		return errors.New("no kubelet")
	}
	return c.node.kubelet.stop(10 * time.Second)
}

func nodeReady(node *corev1.Node) (bool, string) {
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false, "taint " + t.Key
		}
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue, "Ready " + string(cond.Status) + ": " + cond.Message
		}
	}
	return false, "no Ready condition"
}

// destroyNode takes the node down in the order that leaves nothing behind: the node's pods
// (while the kubelet runs, so it stops them and releases their network), the kubelet, the CRI's
// tasks and containers, containerd and its shims, mounts, cgroups, the bridge; then it restores
// the sysctls the kubelet changed and removes the host paths that did not exist before.
func (c *Cluster) destroyNode() error {
	n := c.node
	if n == nil {
		return nil
	}
	c.node = nil
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var errs []error
	if n.kubelet != nil && n.kubelet.running() {
		if err := c.drainNode(ctx); err != nil {
			errs = append(errs, fmt.Errorf("deleting the node's pods: %w", err))
		}
		if err := n.kubelet.stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if n.containerd != nil {
		for _, id := range n.ctrList(ctx, "tasks") {
			_ = n.ctr(ctx, "tasks", "kill", "--signal", "SIGKILL", id)
		}
		for _, id := range n.ctrList(ctx, "tasks") {
			_ = n.ctr(ctx, "tasks", "delete", "--force", id)
		}
		for _, id := range n.ctrList(ctx, "containers") {
			_ = n.ctr(ctx, "containers", "delete", id)
		}
		if err := n.containerd.stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	// Shims outlive containerd by design; ours are the ones given our containerd's address.
	for _, pid := range processesWithArg("containerd-shim", n.sock()) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	errs = append(errs, n.unmount()...)
	errs = append(errs, n.removeCgroups()...)
	if n.bridgeMade {
		if out, err := exec.Command("ip", "link", "del", nodeBridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link del %s: %v: %s", nodeBridge, err, out))
		}
	}
	for s, v := range n.sysctls {
		path := filepath.Join("/proc/sys", s)
		if now, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(now)) != v {
			if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s=%s: %w", s, v, err))
			}
		}
	}
	if n.registry != nil {
		if err := n.registry.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range n.newPaths {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(n.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// drainNode cordons the node (a controller's replacement stays Pending) and deletes its pods,
// waiting until the kubelet has stopped them.
func (c *Cluster) drainNode(ctx context.Context) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	cordon := []byte(`{"spec":{"unschedulable":true}}`)
	if _, err := cs.CoreV1().Nodes().Patch(ctx, RealNodeName, types.MergePatchType, cordon, metav1.PatchOptions{}); err != nil {
		return err
	}
	onNode := metav1.ListOptions{FieldSelector: "spec.nodeName=" + RealNodeName}
	pods, err := cs.CoreV1().Pods("").List(ctx, onNode)
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		if len(p.Finalizers) > 0 {
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			_, _ = cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		_ = cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
	var left int
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("").List(ctx, onNode)
		if err != nil {
			return false, nil
		}
		left = len(pods.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d pods still on the node: %w", left, err)
	}
	return nil
}

// unmount detaches what is mounted under the node's directory and the network namespaces the
// CNI made (/run/netns/cni-*), deepest first.
func (n *realNode) unmount() []error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return []error{err}
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		ours := strings.HasPrefix(p, n.dir+"/") || (strings.HasPrefix(p, "/run/netns/cni-") && !n.netnsBefore[filepath.Base(p)])
		for _, dir := range n.newPaths {
			ours = ours || strings.HasPrefix(p, dir+"/")
		}
		if ours {
			points = append(points, p)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errs
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupHierarchies are the mounted cgroup hierarchies (each v1 controller, the named systemd
// one and the unified one).
func cgroupHierarchies() []string {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"} // cgroup v2 only
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return out
}

// removeCgroups removes the kubepods cgroups the kubelet made, ending any process still in one
// (a container of this node's containerd whose shim is gone).
func (n *realNode) removeCgroups() []error {
	var errs []error
	for _, root := range n.cgroupsNew {
		if _, err := os.Stat(root); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			for attempt := 0; attempt < 20; attempt++ {
				err := syscall.Rmdir(dirs[i])
				if err == nil || errors.Is(err, syscall.ENOENT) {
					break
				}
				if !errors.Is(err, syscall.EBUSY) || attempt == 19 {
					errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
					break
				}
				if procs, err := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs")); err == nil {
					for _, f := range strings.Fields(string(procs)) {
						if pid, err := strconv.Atoi(f); err == nil {
							_ = syscall.Kill(pid, syscall.SIGKILL)
						}
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	return errs
}

// processesWithArg lists the processes whose command name contains comm and whose arguments
// include arg.
func processesWithArg(comm, arg string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), comm) {
			continue
		}
		for _, a := range args[1:] {
			if a == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// launch starts a node process in its own process group, logging to logDir/name.log.
func launch(logDir, name, bin string, args ...string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, bin: bin, args: args, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}
