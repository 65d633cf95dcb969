package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestNoController: on a control plane without kube-controller-manager, a StatefulSet is never
// synced. The premise is proven first (no status, no pod for 30 s), then check reports
// RolloutBlocked (the controller never observed it) once the set is a minute old — a rollout that
// stops because no controller runs is not silent either.
func TestNoController(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := cluster.New("_artifacts/no-controller")
	c.APIServerOnly = true
	kubeconfig, err := c.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Destroy(ctx) }()
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	const ns = "no-controller"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	createSet(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false))

	harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
		set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if set.Status.ObservedGeneration != 0 || len(pods.Items) != 0 {
			return fmt.Errorf("synced: observedGeneration %d, %d pods", set.Status.ObservedGeneration, len(pods.Items))
		}
		return nil
	})
	time.Sleep(time.Until(created.Add(65 * time.Second)))
	r := runCmd(t, envconf.New().WithKubeconfigFile(kubeconfig), stsdiag, "check", "--kubeconfig", kubeconfig, "-n", ns, "-o", "json")
	rep := decodeReport(t, r)
	if r.code != 1 || len(rep.Findings) != 1 || rep.Findings[0].Code != apiv1.RolloutBlocked || rep.Findings[0].Reason != "NeverObserved" ||
		rep.Findings[0].Details.WaitingFor != "Observed" || rep.StatefulSets[0].Status != apiv1.StatusStuck {
		t.Errorf("exit %d, findings %v: want one RolloutBlocked (NeverObserved), web Stuck, exit 1", r.code, harness.Codes(rep))
	}
}
