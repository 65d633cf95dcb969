// Command localcluster starts the local control plane for `make demo` and `make cluster`.
//
//	localcluster demo [-keep] [-stsdiag PATH]   scenarios + stsdiag check, then tear down
//	localcluster up                              start and wait for Ctrl-C
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"

	"github.com/stsdiag/stsdiag/e2e/cluster"
	"github.com/stsdiag/stsdiag/e2e/scenario"
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
	stsdiag := fs.String("stsdiag", "bin/kubectl-stsdiag", "path of the kubectl-stsdiag binary")
	logDir := fs.String("log-dir", "e2e/_artifacts/demo", "folder for component logs")
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: localcluster demo|up [flags]")
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
	default:
		return fmt.Errorf("unknown mode %q: want demo or up", mode)
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
