// Command localcluster starts the local control plane for `make demo` and `make cluster`. It runs
// in e2e/, its module (cd e2e && go run ./cmd/localcluster ...); deploy/ is read from ../deploy.
//
//	localcluster demo [-keep] [-stsdiag PATH]   scenarios + stsdiag check and fix, then tear down
//	localcluster deploy-demo [-keep]             stsdiag watch --fix as the ServiceAccount of deploy/
//	localcluster up                              start and wait for Ctrl-C
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"

	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("localcluster", flag.ContinueOnError)
	keep := fs.Bool("keep", false, "leave the cluster running until Ctrl-C")
	stsdiag := fs.String("stsdiag", "../bin/kubectl-stsdiag", "path of the kubectl-stsdiag binary")
	logDir := fs.String("log-dir", "_artifacts/demo", "folder for component logs")
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: localcluster demo|deploy-demo|up [flags]")
	}
	mode := os.Args[1]
	if err := fs.Parse(os.Args[2:]); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	c := cluster.New(*logDir)
	kubeconfig, err := c.Create(ctx)
	if err != nil {
		return err
	}
	defer c.Destroy(context.Background())
	if err := c.WaitForControlPlane(ctx, nil); err != nil {
		return err
	}
	fmt.Printf("local control plane (kube %s, etcd %s, kwok %s) up in %s; logs in %s\n",
		cluster.KubernetesVersion, cluster.EtcdVersion, cluster.KwokVersion, time.Since(start).Round(100*time.Millisecond), *logDir)

	switch mode {
	case "up":
		*keep = true
	case "demo":
		if err := demo(ctx, c, kubeconfig, *stsdiag); err != nil {
			return err
		}
	case "deploy-demo":
		if err := deployDemo(ctx, c, kubeconfig, *stsdiag); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown mode %q: want demo, deploy-demo or up", mode)
	}
	if *keep {
		fmt.Printf("\nThe cluster stays up until you press Ctrl-C. In another shell:\n  export KUBECONFIG=%s\n  export PATH=%s:$PATH   # then: kubectl stsdiag check -A\n", kubeconfig, absDir(*stsdiag))
		<-ctx.Done()
		fmt.Println("\nstopping the cluster")
	}
	return nil
}

func demo(ctx context.Context, c *cluster.Cluster, kubeconfig, stsdiag string) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	fmt.Println("\n== kubernetes#67250: StatefulSet shop/web created with a missing image, then fixed ==")
	if err := scenario.Namespace(ctx, cs, "shop"); err != nil {
		return err
	}
	fmt.Printf("kubectl create statefulset web (3 replicas, PVC template) with image %s\n", scenario.BadImage)
	fmt.Printf("waiting for web-0 to reach ImagePullBackOff, then: kubectl set image statefulset/web web=%s\n", scenario.GoodImage)
	if err := scenario.StuckRollout(ctx, cs, "shop", "web", 3); err != nil {
		return err
	}
	fmt.Println("the template is fixed; the controller still waits for web-0. Waiting 10s to show it stays stuck...")
	select {
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	fmt.Println("\n$ kubectl get pods -n shop")
	runShow(kubeconfig, "kubectl", "get", "pods", "-n", "shop")
	fmt.Println("\n$ kubectl stsdiag check -n shop")
	code := runShow(kubeconfig, stsdiag, "check", "-n", "shop")
	fmt.Printf("(exit code %d: 1 means a rollout will not finish on its own)\n", code)
	fmt.Println("\n$ kubectl stsdiag fix -n shop --yes --wait=2m")
	code = runShow(kubeconfig, stsdiag, "fix", "-n", "shop", "--yes", "--wait=2m")
	fmt.Printf("(exit code %d)\n\n$ kubectl get pods,pvc -n shop   # same claims, all pods Ready\n", code)
	runShow(kubeconfig, "kubectl", "get", "pods,pvc", "-n", "shop")

	fmt.Println("\n== OpenShift: an ImageStream with local lookup, but the template kept the local name ==")
	if err := cluster.InstallImageStreamCRD(ctx, c.KubernetesRestConfig()); err != nil {
		return err
	}
	images, err := imageclient.NewForConfig(c.KubernetesRestConfig())
	if err != nil {
		return err
	}
	if err := scenario.Namespace(ctx, cs, "myproject"); err != nil {
		return err
	}
	fmt.Printf("ImageStream %s (lookupPolicy.local: true) holds tag %s = %s\n", scenario.SeedStream, scenario.SeedTag, scenario.SeedDigest)
	fmt.Printf("StatefulSet web (3 replicas, PVCs) with image %s, which admission did not rewrite\n", scenario.SeedImage)
	if err := scenario.UnresolvedImageStream(ctx, cs, images, "myproject"); err != nil {
		return err
	}
	fmt.Println("\n$ oc stsdiag check -n myproject -o wide")
	code = runShow(kubeconfig, stsdiag, "check", "-n", "myproject", "-o", "wide")
	fmt.Printf("(exit code %d)\n", code)
	fmt.Println("\n$ oc stsdiag fix -n myproject --yes --wait=2m")
	code = runShow(kubeconfig, stsdiag, "fix", "-n", "myproject", "--yes", "--wait=2m")
	fmt.Printf("(exit code %d)\n\n$ oc get statefulset web -n myproject -o jsonpath='{..image}'\n", code)
	runShow(kubeconfig, "kubectl", "get", "statefulset", "web", "-n", "myproject", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
	fmt.Println()
	runShow(kubeconfig, "kubectl", "get", "pods,pvc", "-n", "myproject")
	return nil
}

func runShow(kubeconfig, bin string, args ...string) int {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, err)
		return -1
	}
	return 0
}

func absDir(path string) string {
	abs, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return filepath.Dir(path)
	}
	return abs
}

// deployDemo runs `stsdiag watch --fix` with the permissions of deploy/watch-fix (as its
// ServiceAccount: a simulated node cannot run the Deployment's container) and lets it repair a
// kubernetes#67250 rollout by itself.
func deployDemo(ctx context.Context, c *cluster.Cluster, kubeconfig, stsdiag string) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	fmt.Println("\n== stsdiag watch --fix, as ServiceAccount stsdiag/stsdiag with the RBAC of deploy/watch-fix ==")
	if err := scenario.ApplyManifests(ctx, cs, "..", scenario.WatchManifests...); err != nil {
		return err
	}
	token, err := scenario.ServiceAccountToken(ctx, cs, "stsdiag", "stsdiag")
	if err != nil {
		return err
	}
	saConfig := filepath.Join(filepath.Dir(kubeconfig), "stsdiag-sa.kubeconfig")
	if err := c.WriteKubeconfig(saConfig, "stsdiag", token); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	watch := exec.Command(stsdiag, "watch", "-A", "--fix", "--hold", "10s", "--metrics-addr", addr, "--health-addr", addr, "--metrics-insecure",
		"--leader-elect", "--leader-elect-namespace", "stsdiag", "--kubeconfig", saConfig)
	watch.Stdout, watch.Stderr = prefixed("[watch] "), prefixed("[watch] ")
	if err := watch.Start(); err != nil {
		return err
	}
	defer func() {
		_ = watch.Process.Signal(syscall.SIGTERM)
		_ = watch.Wait()
	}()
	if err := scenario.Namespace(ctx, cs, "shop"); err != nil {
		return err
	}
	fmt.Printf("creating shop/web (3 replicas, PVCs) with %s, then fixing the template to %s\n", scenario.BadImage, scenario.GoodImage)
	if err := scenario.StuckRollout(ctx, cs, "shop", "web", 3); err != nil {
		return err
	}
	fixed := time.Now()
	fmt.Println("template fixed; web-0 is stuck on the old revision. Waiting for stsdiag watch (--hold 10s) to repair it...")
	if err := scenario.WaitRolloutComplete(ctx, cs, "shop", "web", 2*time.Minute); err != nil {
		return err
	}
	fmt.Printf("shop/web: 3/3 Ready on the update revision %s after the template fix, with nobody at the keyboard\n", time.Since(fixed).Round(100*time.Millisecond))
	fmt.Println("\n$ kubectl get events -n shop --field-selector involvedObject.kind=StatefulSet")
	runShow(kubeconfig, "kubectl", "get", "events", "-n", "shop", "--field-selector", "involvedObject.kind=StatefulSet,source=stsdiag")
	fmt.Printf("\n$ curl -s http://%s/metrics | grep ^stsdiag_\n", addr)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "stsdiag_") && !strings.Contains(line, "_bucket") {
			fmt.Println(line)
		}
	}
	return nil
}

type prefixWriter struct{ prefix string }

func prefixed(prefix string) io.Writer { return &prefixWriter{prefix: prefix} }

func (w *prefixWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		fmt.Println(w.prefix + line)
	}
	return len(p), nil
}
