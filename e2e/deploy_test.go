package e2e

// deploy/ as a platform team's security review sees it: /metrics refuses anonymous and
// unauthorized scrapers, the Deployments of deploy/watch and deploy/watch-fix are admitted in a
// namespace that enforces PodSecurity "restricted", and the RBAC is exactly what watch uses.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestMetricsAuth: watch, as deploy/watch's ServiceAccount, serves /metrics over TLS only to a
// token the API server authenticates and authorizes for GET /metrics.
func TestMetricsAuth(t *testing.T) {
	f := features.New("secure /metrics").
		Assess("no token 401, a token without stsdiag-metrics-reader 403, with it 200", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			const ns = "metrics-auth"
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			w := startWatch(t, applyDeployRBAC(ctx, t, cfg), "-n", ns)
			if err := scenario.ServiceAccountWithClusterRole(ctx, cs, "stsdiag", "stsdiag-no-metrics", ""); err != nil {
				t.Fatal(err)
			}
			unauthorized, err := scenario.ServiceAccountToken(ctx, cs, "stsdiag", "stsdiag-no-metrics")
			if err != nil {
				t.Fatal(err)
			}
			authorized := scraperToken(t)
			// Premise, asked of the API server's authorizer: one may GET /metrics, the other not.
			if canGetMetrics(ctx, t, cs, "system:serviceaccount:stsdiag:stsdiag-no-metrics") {
				t.Fatal("premise: stsdiag-no-metrics may GET /metrics already")
			}
			if !canGetMetrics(ctx, t, cs, "system:serviceaccount:stsdiag:stsdiag-scraper") {
				t.Fatal("premise: stsdiag-scraper may not GET /metrics")
			}
			for _, c := range []struct {
				name, token string
				want        int
			}{
				{"no token", "", http.StatusUnauthorized},
				{"token without the ClusterRole", unauthorized, http.StatusForbidden},
				{"token bound to stsdiag-metrics-reader", authorized, http.StatusOK},
			} {
				code, body := w.scrape(t, c.token)
				t.Logf("%s: %d %.80q", c.name, code, body)
				if code != c.want {
					t.Errorf("%s: %d, want %d: %s", c.name, code, c.want, body)
				}
				if (code == http.StatusOK) != strings.Contains(body, "stsdiag_diagnosis_duration_seconds") {
					t.Errorf("%s: metrics in the body = %v", c.name, code != http.StatusOK)
				}
			}
			// Plain HTTP on the metrics port gets no metrics.
			resp, err := http.Get(strings.Replace(w.metrics, "https://", "http://", 1) + "/metrics")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Error("plain HTTP /metrics answered 200")
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func canGetMetrics(ctx context.Context, t *testing.T, cs kubernetes.Interface, user string) bool {
	t.Helper()
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// TestDeployAdmittedRestricted: kustomize builds of deploy/watch and deploy/watch-fix, applied
// as they are, into stsdiag's namespace, which enforces PodSecurity "restricted": the
// ReplicaSet controller's pods are admitted and run on the simulated node.
func TestDeployAdmittedRestricted(t *testing.T) {
	f := features.New("deploy/watch under PodSecurity restricted").
		Assess("the pods of deploy/watch and deploy/watch-fix are created", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			t.Cleanup(func() {
				_ = cs.AppsV1().Deployments("stsdiag").Delete(context.Background(), "stsdiag", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
			})
			for _, dir := range []string{"deploy/watch", "deploy/watch-fix"} {
				objs, err := harness.Kustomize(filepath.Join("..", dir))
				if err != nil {
					t.Fatal(err)
				}
				if err := harness.Apply(ctx, cfg.Client().RESTConfig(), objs); err != nil {
					t.Fatal(err)
				}
				// Premise: the namespace enforces restricted (the label comes from deploy/watch
				// itself): a pod without the securityContext is refused there.
				nsObj, err := cs.CoreV1().Namespaces().Get(ctx, "stsdiag", metav1.GetOptions{})
				if err != nil || nsObj.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
					t.Fatalf("namespace stsdiag not labelled enforce=restricted: %v %v", nsObj.Labels, err)
				}
				bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "premise", Namespace: "stsdiag"},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "ghcr.io/stsdiag/stsdiag:v0.3.0"}}}}
				_, err = cs.CoreV1().Pods("stsdiag").Create(ctx, bare, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
					t.Fatalf("premise: a pod without securityContext was not refused by PodSecurity: %v", err)
				}
				t.Logf("premise: %v", err)

				wantFix := dir == "deploy/watch-fix"
				var pods []corev1.Pod
				err = wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
					list, err := cs.CoreV1().Pods("stsdiag").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=stsdiag"})
					if err != nil {
						return false, err
					}
					pods = pods[:0]
					for _, p := range list.Items {
						if p.DeletionTimestamp == nil && slices.Contains(p.Spec.Containers[0].Args, "--fix") == wantFix && p.Status.Phase == corev1.PodRunning {
							pods = append(pods, p)
						}
					}
					return len(pods) == 2, nil
				})
				if err != nil {
					events, _ := cs.CoreV1().Events("stsdiag").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
					for _, e := range events.Items {
						t.Logf("%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
					}
					t.Fatalf("%s: %d Running pods (--fix=%v), want 2: %v", dir, len(pods), wantFix, err)
				}
				p := pods[0]
				t.Logf("%s: pods %s, %s Running; args %v; runAsUser %v", dir, pods[0].Name, pods[1].Name, p.Spec.Containers[0].Args, p.Spec.SecurityContext.RunAsUser)
				if p.Spec.ServiceAccountName != "stsdiag" {
					t.Errorf("serviceAccountName %q", p.Spec.ServiceAccountName)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// auditEvent is what the audit log (cluster.auditPolicy: Metadata level, the stsdiag
// ServiceAccount only) records of a request.
type auditEvent struct {
	Verb      string                    `json:"verb"`
	User      struct{ Username string } `json:"user"`
	UserAgent string                    `json:"userAgent"`
	ObjectRef *struct {
		Resource, Subresource, APIGroup, Namespace, Name string
	} `json:"objectRef"`
	RequestURI  string            `json:"requestURI"`
	Stage       string            `json:"stage"`
	Annotations map[string]string `json:"annotations"`
	Received    time.Time         `json:"requestReceivedTimestamp"`
}

// TestWatchRBACIsExact: `watch --fix --leader-elect` with exactly the RBAC of deploy/watch and
// deploy/watch-fix repairs a kubernetes#67250 rollout and the OpenShift seed case, takes the
// first step of a canary declared with its analysis in a ConfigMap, sets Stalled and serves a
// scrape; the API server's audit log of its requests is compared with the rules: none forbidden
// (a rule missing), and every granted verb used (no rule to spare).
func TestWatchRBACIsExact(t *testing.T) {
	f := features.New("deploy RBAC is exact").
		Assess("every request allowed, every verb used", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			imageStreams(ctx, t, cfg)
			kubeconfig := applyDeployRBAC(ctx, t, cfg)
			const stuck = "rbac-stuck"
			seed := "rbac-seed"
			if err := scenario.Namespace(ctx, cs, stuck); err != nil {
				t.Fatal(err)
			}
			if err := scenario.StuckRollout(ctx, cs, stuck, "web", 2); err != nil {
				t.Fatal(err)
			}
			seedScenario(ctx, t, cfg, seed)
			const canary = "rbac-canary"
			analysisCanary(ctx, t, cs, canary)
			start := time.Now()
			w := startWatch(t, kubeconfig, "-A", "--fix", "--min-stuck", "5s", "--leader-elect", "--leader-elect-namespace", "stsdiag")
			for _, ns := range []string{stuck, seed} {
				if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 2*time.Minute); err != nil {
					t.Fatalf("%s: %v", ns, err)
				}
			}
			waitSet(ctx, t, cs, canary, "web", time.Minute, "at its first step (partition 1)", partitionIs(1))
			if code, body := w.scrape(t, scraperToken(t)); code != http.StatusOK {
				t.Fatalf("/metrics: %d %s", code, body)
			}
			time.Sleep(5 * time.Second) // a Lease renewal or two
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-w.done:
			case <-time.After(20 * time.Second):
				t.Fatal("watch did not stop on SIGTERM")
			}
			stop := time.Now()

			used, forbidden := auditedRequests(t, start, stop)
			granted := grantedRules(ctx, t, cs)
			var unused []string
			for _, g := range granted {
				if _, elsewhere := notExercised[g]; !used[g] && !elsewhere {
					unused = append(unused, g)
				}
			}
			var ungranted []string
			for u := range used {
				if !slices.Contains(granted, u) {
					ungranted = append(ungranted, u)
				}
			}
			sort.Strings(ungranted)
			t.Logf("granted: %v", granted)
			t.Logf("used: %v", keys(used))
			if len(forbidden) > 0 {
				t.Errorf("forbidden requests (a rule is missing): %v", forbidden)
			}
			if len(unused) > 0 {
				t.Errorf("granted but never used: %v", unused)
			}
			if len(ungranted) > 0 {
				t.Errorf("used without a rule naming it (allowed by a default ClusterRole?): %v", ungranted)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// analysisCanary: web, 2 replicas, a one-step canary declared with its analysis in ConfigMap
// error-ratio, and a new template held behind partition 2 (no pod moved yet): watch reads the
// ConfigMap (get configmaps) and checks the template before it sets the first step's
// partition. The step's hold (1h) outlasts the test: nothing is measured, no Prometheus needed.
func analysisCanary(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	if err := scenario.Namespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "error-ratio", Namespace: ns}, Data: map[string]string{"template.yaml": `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: error-ratio
spec:
  args:
  - name: pods
  metrics:
  - name: errors
    successCondition: result[0] <= 0.1
    provider:
      prometheus:
        address: http://127.0.0.1:9
        query: sum(rate(http_requests_total{pod=~"{{args.pods}}",code=~"5.."}[1m])) / sum(rate(http_requests_total{pod=~"{{args.pods}}"}[1m]))
`}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	set := scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
	set.Annotations = map[string]string{"stsdiag.io/canary-steps": "1", "stsdiag.io/canary-hold": "1h", "stsdiag.io/canary-analysis": "error-ratio"}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := scenario.SetImage(ctx, cs, ns, "web", goodImage2); err != nil {
		t.Fatal(err)
	}
}

// notExercised are granted verbs whose code path this scenario does not reach, with that path.
var notExercised = map[string]string{
	"/pods/eviction create": "watch --fix --disruption=evict (internal/repair/evict.go evictPod); this scenario runs the default --disruption=delete, TestDisruptionBudget evicts with deploy/fix-clusterrole.yaml's same rule",
	"/events patch":         "client-go tools/record/event.go:330-334@v0.35.4: a repeated Event is patched (count, lastTimestamp), not created again",
	"/namespaces get":       "watch -n reads the namespace it watches (gather.checkNamespace); this scenario watches -A, whose repairs prove on the informer caches (internal/watch/prove.go), not on a LIST of one namespace",
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// auditedRequests reads the stsdiag ServiceAccount's requests made by watch between start and
// stop: "group/resource[/subresource] verb" allowed, and the forbidden ones.
func auditedRequests(t *testing.T, start, stop time.Time) (used map[string]bool, forbidden []string) {
	t.Helper()
	f, err := os.Open(local.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	used = map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if e.User.Username != "system:serviceaccount:stsdiag:stsdiag" || !strings.HasPrefix(e.UserAgent, "kubectl-stsdiag/") ||
			e.Received.Before(start) || e.Received.After(stop) || e.ObjectRef == nil {
			continue
		}
		key := e.ObjectRef.APIGroup + "/" + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			key += "/" + e.ObjectRef.Subresource
		}
		key += " " + e.Verb
		switch e.Annotations["authorization.k8s.io/decision"] {
		case "allow":
			used[key] = true
		case "forbid":
			forbidden = append(forbidden, key+" "+e.RequestURI)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return used, forbidden
}

// grantedRules expands the rules of the (Cluster)Roles that the kustomize build of
// deploy/watch-fix binds to ServiceAccount stsdiag/stsdiag into "group/resource verb", after
// checking that scenario.WatchManifests (what applyDeployRBAC creates) holds the same roles.
func grantedRules(_ context.Context, t *testing.T, _ kubernetes.Interface) []string {
	t.Helper()
	objs, err := harness.Kustomize(filepath.Join("..", "deploy/watch-fix"))
	if err != nil {
		t.Fatal(err)
	}
	bound := map[string]bool{} // kind/name of roles bound to the ServiceAccount
	roles := map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.RoleBinding // same fields
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
				t.Fatal(err)
			}
			for _, s := range b.Subjects {
				if s.Kind == "ServiceAccount" && s.Namespace == "stsdiag" && s.Name == "stsdiag" {
					bound[b.RoleRef.Kind+"/"+b.RoleRef.Name] = true
				}
			}
		case "ClusterRole", "Role":
			var r rbacv1.ClusterRole // same fields
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				t.Fatal(err)
			}
			roles[o.GetKind()+"/"+o.GetName()] = r.Rules
		}
	}
	applied := map[string]bool{}
	for _, file := range scenario.WatchManifests {
		objs, err := harness.Decode(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if k := o.GetKind(); k == "ClusterRole" || k == "Role" {
				applied[k+"/"+o.GetName()] = true
			}
		}
	}
	var out []string
	for name := range bound {
		if !applied[name] {
			t.Errorf("deploy/watch-fix binds %s, which scenario.WatchManifests does not apply", name)
		}
		for _, r := range roles[name] {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, g+"/"+res+" "+v)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
