package e2e

// The Helm chart's default install, as docs/integrations.md gives it, on the local control
// plane: its pods are admitted under PodSecurity "restricted", and `watch`, run with the chart's
// arguments as the chart's ServiceAccount (a simulated node runs no container), marks a
// kubernetes#67250 rollout Stalled and exports the finding to a scraper bound to the chart's
// metrics-reader ClusterRole.

import (
	"bufio"
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestHelmDefaultInstallRunsWatch: `helm install helm-stsdiag deploy/helm/stsdiag -n
// helm-stsdiag --create-namespace` (rendered by Helm's install action, applied server-side
// into a namespace of its own, so that nothing is shared with deploy/watch's objects).
func TestHelmDefaultInstallRunsWatch(t *testing.T) {
	const release, ns, stuck = "helm-stsdiag", "helm-stsdiag", "helm-stuck"
	f := features.New("helm chart defaults").
		Assess("pods admitted under restricted; watch as the chart's ServiceAccount marks a stuck set Stalled", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			objs, err := harness.Helm(filepath.Join("..", "deploy/helm/stsdiag"), release, ns, nil)
			if err != nil {
				t.Fatal(err)
			}
			// --create-namespace, then the label docs/integrations.md adds.
			nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
			if _, err := cs.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cs.AppsV1().Deployments(ns).Delete(context.Background(), release, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
			})
			if err := harness.Apply(ctx, cfg.Client().RESTConfig(), objs); err != nil {
				t.Fatal(err)
			}
			var chartArgs []string
			err = wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
				list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=stsdiag"})
				if err != nil {
					return false, err
				}
				running := 0
				for _, p := range list.Items {
					if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Spec.ServiceAccountName == release {
						running++
						chartArgs = p.Spec.Containers[0].Args
					}
				}
				return running == 2, nil
			})
			if err != nil {
				events, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
				for _, e := range events.Items {
					t.Logf("%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
				}
				t.Fatalf("the chart's Deployment has not 2 Running pods under PodSecurity restricted: %v", err)
			}
			t.Logf("2 pods Running, args %v", chartArgs)
			if slices.Contains(chartArgs, "--fix") || !slices.Contains(chartArgs, "--all-namespaces") || !slices.Contains(chartArgs, "--leader-elect") {
				t.Fatalf("default args %v: want report mode, --all-namespaces, --leader-elect", chartArgs)
			}

			// Premise: a rollout the controller never finishes (kubernetes#67250), proven for 30 s.
			if err := scenario.Namespace(ctx, cs, stuck); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { // later `watch -A --fix` tests must not find it
				_ = cs.CoreV1().Namespaces().Delete(context.Background(), stuck, metav1.DeleteOptions{})
			})
			if err := scenario.StuckRollout(ctx, cs, stuck, "web", 2); err != nil {
				t.Fatal(err)
			}
			harness.ProvenStuck(ctx, t, cs, stuck, "web", 30*time.Second)
			if set, err := cs.AppsV1().StatefulSets(stuck).Get(ctx, "web", metav1.GetOptions{}); err != nil || stalled(set) != nil {
				t.Fatalf("premise: web has a Stalled condition before watch: %v", err)
			}

			imageStreams(ctx, t, cfg)
			token, err := scenario.ServiceAccountToken(ctx, cs, ns, release)
			if err != nil {
				t.Fatal(err)
			}
			kubeconfig := filepath.Join(t.TempDir(), "helm-sa.kubeconfig")
			if err := local.WriteKubeconfig(kubeconfig, release, token); err != nil {
				t.Fatal(err)
			}
			// The pod's arguments, less the addresses and certificate directory a test process
			// replaces; the Lease namespace is the pod's $POD_NAMESPACE.
			var args []string
			for _, a := range chartArgs[1:] {
				if !strings.HasPrefix(a, "--metrics-addr=") && !strings.HasPrefix(a, "--health-addr=") && !strings.HasPrefix(a, "--metrics-cert-dir=") {
					args = append(args, a)
				}
			}
			w := startWatch(t, kubeconfig, append(args, "--leader-elect-namespace", ns, "--hold", "5s")...)

			set, took := waitSet(ctx, t, cs, stuck, "web", 60*time.Second, "Stalled=True", stalledTrue)
			c := stalled(set)
			t.Logf("Stalled=True after %s: %s %s", took.Round(100*time.Millisecond), c.Reason, c.Message)
			if c.Reason != "StaleRevisionStuck" {
				t.Errorf("Stalled reason %q, want StaleRevisionStuck", c.Reason)
			}

			// /metrics through the chart's own RBAC: the TokenReview and SubjectAccessReview of
			// <release>-metrics-auth, a scraper bound to <release>-metrics-reader.
			if err := scenario.ServiceAccountWithClusterRole(ctx, cs, ns, "helm-scraper", release+"-metrics-reader"); err != nil {
				t.Fatal(err)
			}
			scraper, err := scenario.ServiceAccountToken(ctx, cs, ns, "helm-scraper")
			if err != nil {
				t.Fatal(err)
			}
			if code, _ := w.scrape(t, ""); code != http.StatusUnauthorized {
				t.Errorf("/metrics without a token: %d, want 401", code)
			}
			code, body := w.scrape(t, scraper)
			if code != http.StatusOK {
				t.Fatalf("/metrics as helm-scraper: %d %s", code, body)
			}
			const want = `stsdiag_findings{code="StaleRevisionStuck",namespace="helm-stuck"} 1`
			found := false
			for sc := bufio.NewScanner(strings.NewReader(body)); sc.Scan(); {
				if sc.Text() == want {
					found = true
				}
			}
			if !found {
				t.Errorf("/metrics lacks %s", want)
			}
			kubePrometheusStackScrape(ctx, t, cfg, w)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// kubePrometheusStackScrape: the chart installed for kube-prometheus-stack (release
// kube-prometheus-stack in namespace kps: its Prometheus runs as ServiceAccount
// kube-prometheus-stack-prometheus, charts/kube-prometheus-stack/templates/_helpers.tpl
// "kube-prometheus-stack.prometheus.serviceAccountName") with serviceMonitor.enabled and
// prometheus.serviceAccount naming it: a scrape with that ServiceAccount's token, refused (403)
// before, is authorized (200), and so is one with the token the ServiceMonitor's
// authorization.credentials name. w is the chart's watch, running as the chart's ServiceAccount.
func kubePrometheusStackScrape(ctx context.Context, t *testing.T, cfg *envconf.Config, w *watchProcess) {
	const release, ns, promNS, promSA = "kps-stsdiag", "kps-stsdiag", "kps", "kube-prometheus-stack-prometheus"
	cs := clientset(t, cfg)
	for _, n := range []string{ns, promNS} {
		if err := scenario.Namespace(ctx, cs, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ServiceAccounts(promNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: promSA}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	prometheus, err := scenario.ServiceAccountToken(ctx, cs, promNS, promSA)
	if err != nil {
		t.Fatal(err)
	}
	// Premise: with the chart's former default binding (kube-prometheus' prometheus-k8s), this
	// Prometheus is refused, as the StsdiagWatchDown reports.
	user := "system:serviceaccount:" + promNS + ":" + promSA
	if canGetMetrics(ctx, t, cs, user) {
		t.Fatalf("premise: %s may GET /metrics before the chart binds it", user)
	}
	if code, body := w.scrape(t, prometheus); code != http.StatusForbidden {
		t.Fatalf("premise: kube-prometheus-stack's Prometheus scraped /metrics with %d before the chart binds it, want 403: %.200s", code, body)
	}
	objs, err := harness.Helm(filepath.Join("..", "deploy/helm/stsdiag"), release, ns, map[string]any{
		"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus-stack"}},
		"prometheus":     map[string]any{"serviceAccount": map[string]any{"name": promSA, "namespace": promNS}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Everything but the ServiceMonitor (no prometheus-operator CRDs here) and the Deployment (w
	// already serves /metrics); the ServiceMonitor names the Secret whose token Prometheus sends.
	var apply []*unstructured.Unstructured
	var credentials string
	secretSA := map[string]string{}
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceMonitor":
			if eps, _, _ := unstructured.NestedSlice(o.Object, "spec", "endpoints"); len(eps) == 1 {
				if ep, ok := eps[0].(map[string]any); ok {
					credentials, _, _ = unstructured.NestedString(ep, "authorization", "credentials", "name")
					if _, file := ep["bearerTokenFile"]; file {
						t.Errorf("the ServiceMonitor uses bearerTokenFile")
					}
				}
			}
			continue
		case "Deployment":
			continue
		case "Secret":
			secretSA[o.GetName()] = o.GetAnnotations()["kubernetes.io/service-account.name"]
		}
		apply = append(apply, o)
	}
	if credentials == "" || secretSA[credentials] == "" {
		t.Fatalf("the ServiceMonitor's authorization.credentials %q name no ServiceAccount token Secret of the chart", credentials)
	}
	t.Cleanup(func() {
		for _, n := range []string{ns, promNS} {
			_ = cs.CoreV1().Namespaces().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
		for _, o := range apply {
			switch o.GetKind() {
			case "ClusterRoleBinding":
				_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
			case "ClusterRole":
				_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
			}
		}
	})
	if err := harness.Apply(ctx, cfg.Client().RESTConfig(), apply); err != nil {
		t.Fatal(err)
	}
	if !canGetMetrics(ctx, t, cs, user) {
		t.Fatalf("the chart's prometheus.serviceAccount binding does not let %s GET /metrics", user)
	}
	scraper, err := scenario.ServiceAccountToken(ctx, cs, ns, secretSA[credentials])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, token string }{{"kube-prometheus-stack's Prometheus", prometheus}, {"the ServiceMonitor's credentials (" + secretSA[credentials] + ")", scraper}} {
		// watch's delegated authorizer caches a refusal for 30 s (internal/watch/serve/serve.go
		// DenyCacheTTL): the premise's 403 holds that long.
		var code int
		var body string
		_ = wait.PollUntilContextTimeout(ctx, time.Second, 45*time.Second, true, func(context.Context) (bool, error) {
			code, body = w.scrape(t, c.token)
			return code == http.StatusOK, nil
		})
		t.Logf("%s: %d", c.name, code)
		if code != http.StatusOK || !strings.Contains(body, "stsdiag_diagnosis_duration_seconds") {
			t.Errorf("%s: /metrics %d, want 200 with the metrics: %.200s", c.name, code, body)
		}
	}
}
