// Command check-namespace checks the StatefulSets of one namespace with stsdiag's public packages
// only, as a health check or a CI step written in Go would: read the namespace (stuck/read),
// diagnose it (stuck), print each StatefulSet's status and every finding with its remedy, and
// exit 1 when a rollout cannot finish by itself.
//
//	go run ./check-namespace -n shop [--kubeconfig FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

func main() {
	namespace := flag.String("n", "default", "namespace to check")
	kubeconfig := flag.String("kubeconfig", clientcmd.RecommendedHomeFile, "kubeconfig file")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	stuckSets, err := check(context.Background(), read.Clients{Kube: kube}, *namespace, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	if stuckSets > 0 {
		os.Exit(1)
	}
}

// check reads and diagnoses the namespace, prints what it found and returns how many of its
// StatefulSets are stuck.
func check(ctx context.Context, c read.Clients, namespace string, w io.Writer) (int, error) {
	objs, err := read.List{Clients: c, Scope: read.Scope{Namespace: namespace}}.Objects(ctx)
	if err != nil {
		return 0, err
	}
	for _, warning := range objs.Warnings {
		fmt.Fprintln(w, "warning:", warning)
	}
	res := stuck.Diagnose(objs, stuck.DefaultOptions())
	n := 0
	for _, s := range res.StatefulSets {
		fmt.Fprintf(w, "%s/%s: %s: %s\n", s.Namespace, s.Name, s.Status, s.Message)
		if s.Status == apiv1.StatusStuck {
			n++
		}
	}
	for _, f := range res.Findings {
		fmt.Fprintf(w, "%s %s %s: %s\n  remedy: %s\n", f.Severity, f.Code, f.Pod, f.Message, f.Remedy)
	}
	return n, nil
}
