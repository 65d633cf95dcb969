package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/stsdiag/stsdiag/e2e/internal/synth"
)

// preflightManifest writes a manifest stream of n StatefulSets for the synthetic cluster: nine
// in ten are updates of its StatefulSets (a new image: a rollout replacing every pod), one in ten
// new StatefulSets in the same namespaces (every pod created) — what a CI pipeline applies.
func preflightManifest(syn *synth.Cluster, n int, dir string) (string, error) {
	var docs []string
	for i := 0; i < n; i++ {
		var set appsv1.StatefulSet
		if i%10 != 9 && i < len(syn.StatefulSets) {
			set = *syn.StatefulSets[i].DeepCopy()
			set.ObjectMeta = metav1.ObjectMeta{Name: set.Name, Namespace: set.Namespace, Labels: set.Labels}
			set.Status = appsv1.StatefulSetStatus{}
			set.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/app:2"
		} else {
			name := fmt.Sprintf("preflight-%05d", i)
			labels := map[string]string{"app": name}
			set = appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: syn.Namespaces[i%len(syn.Namespaces)], Labels: labels},
				Spec: appsv1.StatefulSetSpec{Replicas: syn.StatefulSets[0].Spec.Replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/app:2"}}}}}}
		}
		set.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
		data, err := yaml.Marshal(&set)
		if err != nil {
			return "", err
		}
		docs = append(docs, string(data))
	}
	path := filepath.Join(dir, "preflight-manifest.yaml")
	return path, os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600)
}

// preflightNodes gives the synthetic cluster the nodes its pods would need (one per
// synth.PodsPerNode pods): the scheduler model judges where the new pods fit.
func preflightNodes(ctx context.Context, cfg *rest.Config, syn *synth.Cluster) (int, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	nodes := synth.Nodes(max(1, len(syn.Pods)/synth.PodsPerNode), time.Now())
	for i := range nodes {
		if _, err := kube.CoreV1().Nodes().Create(ctx, &nodes[i], metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, err
		}
		// Admission (TaintNodesByCondition) taints a new node not-ready until the node lifecycle
		// controller, which the bench does not run, sees its kubelet: the node is Ready.
		patch := []byte(`{"spec":{"taints":null}}`)
		if _, err := kube.CoreV1().Nodes().Patch(ctx, nodes[i].Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return 0, err
		}
	}
	return len(nodes), nil
}

// measurePreflight runs preflight on the manifest reps times: its time, requests, peak RSS and
// the API server's CPU; the target (issue 43) is ≤ 2 s for 200 StatefulSets at 10k pods.
func measurePreflight(ctx context.Context, tl tools, srv *apiServer, cfg *rest.Config, env []string, stsdiag string, syn *synth.Cluster, sets, reps int) ([]string, error) {
	dir, err := os.MkdirTemp("", "stsdiag-bench-preflight-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file, err := preflightManifest(syn, sets, dir)
	if err != nil {
		return nil, err
	}
	nodes, err := preflightNodes(ctx, cfg, syn)
	if err != nil {
		return nil, err
	}
	var samples []sample
	for i := 0; i < reps; i++ {
		s, err := measure(tl, srv, env, stsdiag, "preflight", "-f", file, "--skip-images", "-o", "json", "--fail-on", "never")
		if err != nil {
			return nil, err
		}
		samples = append(samples, s)
	}
	sMin, sMed := stats(samples)
	fmt.Printf("\n| cluster | manifest | nodes | preflight time (min / median) | requests | API server CPU-s | peak RSS |\n|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %d pods, %d StatefulSets in %d namespaces | %d StatefulSets (%d updates, %d new), --skip-images | %d | %.2fs / %.2fs | %d | %.2f | %s |\n",
		len(syn.Pods), len(syn.StatefulSets), len(syn.Namespaces), sets, sets-sets/10, sets/10, nodes, sMin, sMed, samples[0].requests,
		medianCPU(samples), mib(medianRSS(samples)))
	var failures []string
	if len(syn.Pods) >= 10000 && sets >= 200 && sMed > 2 {
		failures = append(failures, fmt.Sprintf("preflight of %d StatefulSets took %.2fs at %d pods (target ≤ 2 s)", sets, sMed, len(syn.Pods)))
	}
	return failures, nil
}
