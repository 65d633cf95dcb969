package e2e

// These tests install the ImageStream CRD, so they run after check_test.go's plain-Kubernetes test
// (go test runs files in name order). The seed case on OpenShift's own image API and admission,
// and its repair by fix, are in e2e/openshift (TestSeedAppliedBeforeStream); what stays here is
// stsdiag's own behaviour around it (--openshift=never, the shipped role, missing permissions),
// which any API serving imagestreams shows, kept in the suite `make e2e` runs.

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestOpenShiftUnresolvedImage: the seed case on the real control plane with the ImageStream CRD.
func TestOpenShiftUnresolvedImage(t *testing.T) {
	const ns = "openshift-seed"
	f := features.New("unresolved ImageStream reference").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			seedScenario(ctx, t, cfg, ns)
			return ctx
		}).
		Assess("check names the digest admission would have written", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
			rep := decodeReport(t, r)
			if r.code != 1 || !rep.OpenShift {
				t.Fatalf("exit %d openshift %v", r.code, rep.OpenShift)
			}
			var unresolved, failing int
			for _, f := range rep.Findings {
				switch f.Code {
				case apiv1.UnresolvedImageReference:
					unresolved++
					if f.Severity != apiv1.SeverityError || f.StatefulSet != "web" || f.Container != "web" || f.Image != scenario.SeedImage ||
						f.ResolvedImage != scenario.SeedResolved(ns) || !strings.HasPrefix(f.Remedy, "oc patch statefulset web -n "+ns) {
						t.Errorf("finding %+v", f)
					}
				case apiv1.CurrentRevisionFailing:
					failing++
					if f.Pod != "web-0" {
						t.Errorf("stuck pod %q, want web-0", f.Pod)
					}
				default:
					t.Errorf("unexpected finding %s/%s", f.Code, f.Pod)
				}
			}
			if unresolved != 1 || failing != 1 {
				t.Fatalf("findings %v, want one UnresolvedImageReference and web-0 CurrentRevisionFailing", harness.Codes(rep))
			}
			return ctx
		}).
		Assess("--openshift=never: plain-Kubernetes mode, no ImageStream finding", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json", "--openshift=never")
			rep := decodeReport(t, r)
			if rep.OpenShift || r.code != 1 {
				t.Fatalf("exit %d openshift %v", r.code, rep.OpenShift)
			}
			for _, f := range rep.Findings {
				if f.Code != apiv1.CurrentRevisionFailing {
					t.Errorf("unexpected finding %s", f.Code)
				}
			}
			return ctx
		}).
		Assess("deploy/check-clusterrole.yaml is enough for check", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			role := loadRole(t, "../deploy/check-clusterrole.yaml")
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "shipped-role", role.Rules)
			asUser := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json", "--kubeconfig", kubeconfig)
			asAdmin := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
			if asUser.code != asAdmin.code || asUser.stderr != "" || len(decodeReport(t, asUser).Findings) != len(decodeReport(t, asAdmin).Findings) {
				t.Fatalf("with the shipped role: exit %d stderr %q; as admin exit %d", asUser.code, asUser.stderr, asAdmin.code)
			}
			return ctx
		}).
		Assess("no permission on imagestreams: one warning, the rest still runs", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "reader", readRules)
			r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json", "--kubeconfig", kubeconfig)
			rep := decodeReport(t, r)
			if r.code != 1 || len(rep.Warnings) != 1 || !strings.Contains(r.stderr, "Warning: ImageStream checks skipped") {
				t.Fatalf("exit %d warnings %v stderr %q", r.code, rep.Warnings, r.stderr)
			}
			if len(rep.Findings) != 1 || rep.Findings[0].Code != apiv1.CurrentRevisionFailing {
				t.Errorf("findings %v", harness.Codes(rep))
			}
			return ctx
		}).
		Assess("forbidden to list pods: one error line, exit 2", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "no-pods", []rbacv1.PolicyRule{readRules[1]})
			r := stsdiagRun(t, cfg, "check", "-n", ns, "--kubeconfig", kubeconfig)
			if r.code != 2 || !strings.Contains(r.stderr, "forbidden") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Fatalf("exit %d stderr %q", r.code, r.stderr)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// readRules allow what check reads, except imagestreams.
var readRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"namespaces", "pods", "persistentvolumeclaims", "events"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{"apps"}, Resources: []string{"statefulsets", "controllerrevisions"}, Verbs: []string{"get", "list"}},
}

// tokenKubeconfig returns a kubeconfig for a new ServiceAccount bound to a ClusterRole of rules.
func tokenKubeconfig(ctx context.Context, t *testing.T, cfg *envconf.Config, ns, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	cs := clientset(t, cfg)
	sa, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "stsdiag-e2e-" + name}, Rules: rules}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "stsdiag-e2e-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := local.WriteKubeconfig(path, name, tok.Status.Token); err != nil {
		t.Fatal(err)
	}
	return path
}

// seedScenario builds the OpenShift seed case in a new namespace (installing the CRD if needed).
func seedScenario(ctx context.Context, t *testing.T, cfg *envconf.Config, ns string) {
	t.Helper()
	images := imageStreams(ctx, t, cfg)
	cs := clientset(t, cfg)
	if err := scenario.Namespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	if err := scenario.UnresolvedImageStream(ctx, cs, images, ns); err != nil {
		t.Fatal(err)
	}
}
