package preflight

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/preflight/predict"
)

// getter is a RESTClientGetter whose server serves the kinds the tests write.
func getter() genericclioptions.RESTClientGetter {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "ResourceQuota"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot},
		// The builder maps a List before flattening it; against a real API server a List file is
		// read the same way (e2e).
		{schema.GroupVersionKind{Version: "v1", Kind: "List"}, meta.RESTScopeRoot},
	} {
		mapper.Add(k.gvk, k.scope)
	}
	// The builder makes a client per kind; reading files never calls it.
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", Namespace: "ctx-ns"}
	cfg.CurrentContext = "c"
	return genericclioptions.NewTestConfigFlags().WithRESTMapper(mapper).WithClientConfig(clientcmd.NewDefaultClientConfig(*cfg, nil))
}

const input = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ServiceAccount
  metadata: {name: builder, namespace: shop}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: ignored, namespace: shop}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
 "spec": {"selector": {"matchLabels": {"app": "db"}}, "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres"}]}}}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: pods, namespace: shop}
spec: {hard: {pods: "4"}}
`

func TestReadManifest(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "all.yaml")
	if err := os.WriteFile(file, []byte(input), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"file", "stdin"} {
		t.Run(from, func(t *testing.T) {
			files := resource.FilenameOptions{Filenames: []string{file}}
			var in *strings.Reader
			if from == "stdin" {
				files.Filenames, in = []string{"-"}, strings.NewReader(input)
			}
			m, err := ReadManifest(getter(), files, in, "ctx-ns", false)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.StatefulSets) != 2 || m.StatefulSets[0].Typed.Namespace != "shop" || m.StatefulSets[1].Typed.Namespace != "ctx-ns" ||
				m.StatefulSets[1].Object.GetNamespace() != "ctx-ns" || m.StatefulSets[0].Mapping.Resource != "statefulsets" {
				t.Errorf("statefulsets %+v", m.StatefulSets)
			}
			if len(m.Namespaces) != 1 || len(m.ServiceAccounts["shop"]) != 1 || len(m.Quotas["shop"]) != 1 {
				t.Errorf("context: namespaces %v, service accounts %v, quotas %v", m.Namespaces, m.ServiceAccounts, m.Quotas)
			}
		})
	}
	bad := []struct{ name, text, want string }{
		{"malformed", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web\n", "error converting YAML to JSON"},
		{"unknown kind", "apiVersion: widgets.example.com/v1\nkind: Widget\nmetadata: {name: w}\n", `no matches for kind "Widget"`},
		{"no StatefulSet", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "the input holds no StatefulSet"},
		{"twice", strings.Repeat("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web}\n---\n", 2), "appears twice"},
		{"no name", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {labels: {a: b}}\n", "resource name may not be empty"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
			os.WriteFile(path, []byte(c.text), 0o600)
			_, err := ReadManifest(getter(), resource.FilenameOptions{Filenames: []string{path}}, nil, "ctx-ns", false)
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v: want one line, an InputError naming %q", err, c.want)
			}
		})
	}
	t.Run("another namespace than -n", func(t *testing.T) {
		_, err := ReadManifest(getter(), resource.FilenameOptions{Filenames: []string{file}}, nil, "other", true)
		if err == nil || !strings.Contains(err.Error(), `the namespace from the provided object "shop" does not match the namespace "other"`) {
			t.Errorf("error %v", err)
		}
	})
}

// TestRemote asks go-containerregistry's registry, served here, as preflight asks any.
func TestRemote(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(host + "/app:1")
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()
	ctx := context.Background()
	found := Remote{}.Head(ctx, host+"/app:1", nil)
	if found.Check != apiv1.ImageFound || found.Digest != digest.String() || found.Registry != host || found.Pulled != host+"/app:1" {
		t.Errorf("found: %+v", found)
	}
	missing := Remote{}.Head(ctx, host+"/app:nope", nil)
	if missing.Check != apiv1.ImageNotFound || !strings.HasPrefix(missing.Answer, "404 Not Found (MANIFEST_UNKNOWN") {
		t.Errorf("missing: %+v", missing)
	}
	srv.Close()
	gone := Remote{}.Head(ctx, host+"/app:1", nil)
	if gone.Check != apiv1.ImageUnreachable || !strings.Contains(gone.Answer, "connection refused") {
		t.Errorf("unreachable: %+v", gone)
	}
	if bad := (Remote{}).Head(ctx, "UPPER/case:1", nil); bad.Check != apiv1.ImageNotFound || !strings.HasPrefix(bad.Answer, "invalid image reference") {
		t.Errorf("invalid: %+v", bad)
	}
}

// TestApplyRefusal reads the API server's refusals of a dry-run apply as the e2e suite met them.
func TestApplyRefusal(t *testing.T) {
	gk := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	immutable := apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(field.NewPath("spec", "volumeClaimTemplates"), "x", "field is immutable")})
	policy := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "web",
		errors.New("ValidatingAdmissionPolicy 'team' with binding 'team' denied request: every StatefulSet needs a team label"))
	rbac := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "web",
		errors.New(`User "ci" cannot patch resource "statefulsets" in API group "apps" in the namespace "shop"`))
	exists := &predict.Namespace{Name: "shop", Exists: true}
	if r, err := applyRefusal(immutable, exists); err != nil || r.Reason != predict.ApplyImmutable || len(r.Causes) != 1 ||
		r.Causes[0] != `spec.volumeClaimTemplates: Invalid value: "x": field is immutable` {
		t.Errorf("immutable: %+v, %v", r, err)
	}
	if r, err := applyRefusal(policy, exists); err != nil || r.Reason != predict.ApplyAdmissionDenied || r.Policy != "team" ||
		r.Denial != "every StatefulSet needs a team label" {
		t.Errorf("policy: %+v, %v", r, err)
	}
	var forbidden *ForbiddenError
	if _, err := applyRefusal(rbac, exists); !errors.As(err, &forbidden) || !strings.Contains(err.Error(), "deploy/preflight-clusterrole.yaml") {
		t.Errorf("no permission: %v, want a ForbiddenError naming the role", err)
	}
	if _, err := applyRefusal(errors.New("dial tcp: connection refused"), exists); err == nil || !strings.HasPrefix(err.Error(), "cannot reach the API server") {
		t.Errorf("unreachable: %v", err)
	}
}
