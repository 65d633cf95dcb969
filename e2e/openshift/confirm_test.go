package openshift

// check and fix --confirm-with-admission against OpenShift's real ImagePolicy admission: the probe
// (a server-side dry-run create of a pod per namespace) must be resolved by the real plugin as the
// StatefulSet's template would be, the findings must say what the real admission wrote, and a
// user without create on pods must get a warning and unconfirmed findings, nothing else changed.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// dConfirm is the digest of TestConfirmDiffers's image (sha256 of "stsdiag-confirm-differs"), of
// its own: that test deletes its Image object, which is cluster-scoped.
const dConfirm = "sha256:2a1ed509df876a527fac5d03dd766f81774b0616ef424134dfb87aa08b5df3b6"

// seedForConfirm is the seed case in ns: web applied before its stream (admission left the local
// name myapp:1.0.1), then the stream created with lookup and tag 1.0.1 pushed as digest. It
// proves what the real admission stored.
func seedForConfirm(t *testing.T, ns, digest string) {
	t.Helper()
	ctx := context.Background()
	namespace(t, ns, nil)
	if err := scenario.Volumes(ctx, cs, ns, 1); err != nil {
		t.Fatal(err)
	}
	set := createSet(t, scenario.StatefulSet(ns, "web", "myapp:1.0.1", 1, true))
	want(t, "stored image (no stream yet)", set.Spec.Template.Spec.Containers[0].Image, "myapp:1.0.1")
	waitReason(t, ns, "web-0", "ImagePullBackOff")
	time.Sleep(1100 * time.Millisecond)
	stream(t, ns, "myapp", true)
	push(t, ns, "myapp", "1.0.1", digest, registry+"/"+ns+"/myapp@"+digest)
	want(t, "stored image after the push", storedImage(t, ns, "web"), "myapp:1.0.1")
}

// admissionOf returns details.admission of the UnresolvedImageReference finding (the only one).
func admissionOf(t *testing.T, rep apiv1.Report) (apiv1.Finding, apiv1.AdmissionCheck) {
	t.Helper()
	found := harness.ByCode(rep, apiv1.UnresolvedImageReference)
	if len(found) != 1 || found[0].Details.Admission == nil {
		t.Fatalf("want one UnresolvedImageReference with details.admission, got %+v", found)
	}
	return found[0], *found[0].Details.Admission
}

// TestConfirmWithAdmission: the prediction (the digest of tag 1.0.1) is what the real admission
// writes for the probe: check says Confirmed, and fix's plan patches that digest, confirmed.
func TestConfirmWithAdmission(t *testing.T) {
	t.Parallel()
	const ns = "os-confirm"
	resolved := registry + "/" + ns + "/myapp@" + d1
	seedForConfirm(t, ns, d1)
	want(t, "what admission writes for the same manifest now (StatefulSet dry run)",
		dryRunImage(t, scenario.StatefulSet(ns, "web", "myapp:1.0.1", 1, true)), resolved)
	stuck(t, ns)

	r := stsdiagRun(t, "check", "-n", ns, "-o", "json", "--confirm-with-admission")
	rep := harness.DecodeReport(t, r.Stdout)
	if r.Code != 1 || len(rep.Warnings) != 0 {
		t.Fatalf("check --confirm-with-admission: exit %d (want 1), warnings %q\n%s", r.Code, rep.Warnings, r.Stderr)
	}
	only(t, rep, "UnresolvedImageReference/", "CurrentRevisionFailing/web-0")
	f, adm := admissionOf(t, rep)
	if adm.Result != apiv1.AdmissionConfirmed || adm.Predicted != resolved || adm.Written != resolved || adm.Error != "" ||
		f.ResolvedImage != resolved || !strings.Contains(f.Message, "confirmed by the API server's admission") {
		t.Errorf("finding %+v, admission %+v", f, adm)
	}
	// The probe was never stored.
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, "stsdiag-probe-") {
			t.Errorf("probe pod %s was persisted", p.Name)
		}
	}

	r = stsdiagRun(t, "fix", "-n", ns, "--dry-run=server", "-o", "json", "--confirm-with-admission")
	res := harness.DecodeFix(t, r.Stdout)
	if len(res.Actions) == 0 {
		t.Fatalf("fix --dry-run=server: no action\n%s", r.Stderr)
	}
	patch := res.Actions[0]
	if patch.Action != apiv1.PatchImage || patch.From != "myapp:1.0.1" || patch.To != resolved || patch.Admission == nil ||
		patch.Admission.Result != apiv1.AdmissionConfirmed || patch.Admission.Written != resolved {
		t.Errorf("patch %+v (admission %+v)", patch, patch.Admission)
	}
	want(t, "template image after a server-side dry run", storedImage(t, ns, "web"), "myapp:1.0.1")
}

// TestConfirmDiffers: stsdiag's model assumes the Image object of every tag event exists. Here
// the Image of tag 1.0.1 is deleted after the push while the stream keeps its tag event: the real
// ImageStreamTag lookup is then NotFound as an imagestreamtag (observed: `imagestreamtags.image.openshift.io
// "<digest>" not found`), so the real admission writes the stream's tag pull spec, as for a tag
// without image (imagepolicy.go:366-383@a8019f39), while the model still predicts the digest. With
// --confirm-with-admission stsdiag trusts the server: resolvedImage and the patch are the tag
// form, and the finding says it differs from the prediction.
func TestConfirmDiffers(t *testing.T) {
	t.Parallel()
	const ns = "os-confirm-differs"
	ctx := context.Background()
	predicted := registry + "/" + ns + "/myapp@" + dConfirm
	tagForm := registry + "/" + ns + "/myapp:1.0.1"
	seedForConfirm(t, ns, dConfirm)
	if err := images.ImageV1().Images().Delete(ctx, dConfirm, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Image %s: %v", dConfirm, err)
	}
	is, err := images.ImageV1().ImageStreams(ns).Get(ctx, "myapp", metav1.GetOptions{})
	if err != nil || len(is.Status.Tags) != 1 || len(is.Status.Tags[0].Items) == 0 || is.Status.Tags[0].Items[0].Image != dConfirm {
		t.Fatalf("the stream no longer has its tag event for %s: %v %+v", dConfirm, err, is.Status.Tags)
	}
	_, err = images.ImageV1().ImageStreamTags(ns).Get(ctx, "myapp:1.0.1", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("ImageStreamTag myapp:1.0.1 without its Image: %v, want NotFound", err)
	}
	t.Logf("ImageStreamTag myapp:1.0.1 without its Image: %v", err)
	want(t, "what admission writes for the same manifest now (StatefulSet dry run)",
		dryRunImage(t, scenario.StatefulSet(ns, "web", "myapp:1.0.1", 1, true)), tagForm)
	stuck(t, ns)

	// Without asking, the model's prediction stands.
	rep := check(t, ns, 1)
	if f := harness.ByCode(rep, apiv1.UnresolvedImageReference); len(f) != 1 || f[0].ResolvedImage != predicted || f[0].Details.Admission != nil {
		t.Fatalf("without --confirm-with-admission: %+v", f)
	}

	r := stsdiagRun(t, "check", "-n", ns, "-o", "json", "--confirm-with-admission")
	rep = harness.DecodeReport(t, r.Stdout)
	if r.Code != 1 {
		t.Fatalf("check --confirm-with-admission: exit %d (want 1)\n%s", r.Code, r.Stderr)
	}
	f, adm := admissionOf(t, rep)
	if adm.Result != apiv1.AdmissionDiffers || adm.Predicted != predicted || adm.Written != tagForm || f.ResolvedImage != tagForm ||
		f.Details.Patch == nil || f.Details.Patch.To != tagForm ||
		!strings.Contains(f.Message, "the API server's admission writes "+tagForm+" (a server-side dry run of a probe pod in namespace "+ns+"), not "+predicted) {
		t.Errorf("finding %+v, admission %+v", f, adm)
	}

	r = stsdiagRun(t, "fix", "-n", ns, "--dry-run=server", "-o", "json", "--confirm-with-admission")
	res := harness.DecodeFix(t, r.Stdout)
	if len(res.Actions) == 0 {
		t.Fatalf("fix --dry-run=server: no action\n%s", r.Stderr)
	}
	patch := res.Actions[0]
	if patch.Action != apiv1.PatchImage || patch.From != "myapp:1.0.1" || patch.To != tagForm || patch.Admission == nil ||
		patch.Admission.Result != apiv1.AdmissionDiffers || patch.Admission.Predicted != predicted {
		t.Errorf("patch %+v (admission %+v)", patch, patch.Admission)
	}
	// The plan line says it.
	r = stsdiagRun(t, "fix", "-n", ns, "--dry-run=client", "--confirm-with-admission")
	if !strings.Contains(r.Stdout, "→ "+tagForm+"; admission's answer (server-side dry run); stsdiag predicted "+predicted) {
		t.Errorf("plan does not say the patch is admission's answer:\n%s", r.Stdout)
	}
}

// TestConfirmWithoutPermission: a user bound to deploy/check-clusterrole.yaml only cannot create
// the probe: one warning naming deploy/confirm-clusterrole.yaml, the finding Unconfirmed with the
// API server's refusal and its prediction kept, the exit code unchanged. Bound to
// deploy/confirm-clusterrole.yaml too (in the namespace only), the same check is Confirmed.
func TestConfirmWithoutPermission(t *testing.T) {
	t.Parallel()
	const ns = "os-confirm-rbac"
	ctx := context.Background()
	resolved := registry + "/" + ns + "/myapp@" + d1
	seedForConfirm(t, ns, d1)
	stuck(t, ns)
	reader := serviceAccountKubeconfig(ctx, t, ns, "confirm-reader")
	bindClusterRole(ctx, t, ns, "confirm-reader", "../../deploy/check-clusterrole.yaml", false)

	r := harness.Run(t, reader, binDir, nil, stsdiag, "check", "-n", ns, "-o", "json", "--confirm-with-admission")
	rep := harness.DecodeReport(t, r.Stdout)
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1 (as without the flag)\n%s", r.Code, r.Stderr)
	}
	f, adm := admissionOf(t, rep)
	if adm.Result != apiv1.AdmissionUnconfirmed || adm.Written != "" || adm.Predicted != resolved || f.ResolvedImage != resolved ||
		!strings.Contains(adm.Error, `cannot create resource "pods" in API group "" in the namespace "`+ns+`"`) {
		t.Errorf("finding %+v, admission %+v", f, adm)
	}
	warned := 0
	for _, w := range rep.Warnings {
		if strings.Contains(w, `probe pod in namespace "`+ns+`" failed`) && strings.Contains(w, "deploy/confirm-clusterrole.yaml") {
			warned++
		}
	}
	if warned != 1 || !strings.Contains(r.Stderr, "Warning: image predictions not confirmed with admission") {
		t.Errorf("want one warning naming deploy/confirm-clusterrole.yaml, got %q\n%s", rep.Warnings, r.Stderr)
	}

	bindClusterRole(ctx, t, ns, "confirm-reader", "../../deploy/confirm-clusterrole.yaml", true)
	r = harness.Run(t, reader, binDir, nil, stsdiag, "check", "-n", ns, "-o", "json", "--confirm-with-admission")
	rep = harness.DecodeReport(t, r.Stdout)
	if _, adm := admissionOf(t, rep); r.Code != 1 || adm.Result != apiv1.AdmissionConfirmed || adm.Written != resolved {
		t.Errorf("with deploy/confirm-clusterrole.yaml: exit %d, admission %+v\n%s", r.Code, adm, r.Stderr)
	}
}

// serviceAccountKubeconfig creates a ServiceAccount in ns and writes a kubeconfig with its token.
func serviceAccountKubeconfig(ctx context.Context, t *testing.T, ns, name string) string {
	t.Helper()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: restConfig.Host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name, Namespace: ns}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// bindClusterRole creates the ClusterRole of a deploy/ file under a name of the test's own and
// binds the ServiceAccount to it: in ns only (a RoleBinding) or cluster-wide. Removed at the end.
func bindClusterRole(ctx context.Context, t *testing.T, ns, sa, file string, namespaced bool) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	role.Name = ns + "-" + role.Name
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })
	ref := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}
	meta := metav1.ObjectMeta{Name: role.Name}
	if namespaced {
		_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
	} else {
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		t.Cleanup(func() {
			_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), meta.Name, metav1.DeleteOptions{})
		})
	}
	if err != nil {
		t.Fatal(err)
	}
}
