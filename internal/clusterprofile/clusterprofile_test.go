package clusterprofile_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"

	"github.com/stsdiag/stsdiag/internal/clusterprofile"
)

func writeFile(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadProviders ports pkg/access's NewFromFile cases (config_test.go@8375ac21: a valid
// file, a missing one, invalid JSON) and adds what is refused when the file is read rather than
// per profile: no provider, a provider without a command, an unknown policy.
func TestReadProviders(t *testing.T) {
	valid := `{"providers": [{"name": "gkeFleet", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1beta1",
		"command": "gke-gcloud-auth-plugin", "provideClusterInfo": true}}]}`
	p, err := clusterprofile.ReadProviders(writeFile(t, "p.json", valid, 0o644))
	if err != nil || len(p.Providers) != 1 || p.Providers[0].Name != "gkeFleet" || p.Providers[0].ExecConfig.Command != "gke-gcloud-auth-plugin" ||
		!p.Providers[0].ExecConfig.ProvideClusterInfo || p.Providers[0].ProfileSourcedCLIArgsPolicy != "" || p.Providers[0].ProfileSourcedEnvVarsPolicy != "" {
		t.Fatalf("%+v %v", p, err)
	}
	for _, c := range []struct{ name, content, want string }{
		{"missing", "", "reading the ClusterProfile provider file"},
		{"invalid JSON", "invalid json content", "is not JSON of providers"},
		{"empty", "{}", "names no provider"},
		{"no name", `{"providers": [{"execConfig": {"command": "x"}}]}`, "a provider without a name"},
		{"no command", `{"providers": [{"name": "a", "execConfig": {"args": ["x"]}}]}`, `provider "a" of`},
		{"no execConfig", `{"providers": [{"name": "a"}]}`, "has no execConfig.command"},
		{"args policy", `{"providers": [{"name": "a", "execConfig": {"command": "x"}, "profileSourcedCLIArgsPolicy": "Prepend"}]}`, `profileSourcedCLIArgsPolicy "Prepend": want Append or Ignore`},
		{"envs policy", `{"providers": [{"name": "a", "execConfig": {"command": "x"}, "profileSourcedEnvVarsPolicy": "Merge"}]}`, `profileSourcedEnvVarsPolicy "Merge": want AppendIfNotExists, Replace or Ignore`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "absent.json")
			if c.content != "" {
				path = writeFile(t, "p.json", c.content, 0o644)
			}
			if _, err := clusterprofile.ReadProviders(path); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// extension is a cluster extension whose value is JSON, as the API server stores it.
func extension(t *testing.T, name string, v any) clientcmdv1.NamedExtension {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return clientcmdv1.NamedExtension{Name: name, Extension: runtime.RawExtension{Raw: raw}}
}

// TestConfig ports pkg/access's BuildConfigFromCP and provider-matching cases
// (config_test.go@8375ac21): the first provider of the file the profile offers wins; no match
// is an error; server, CA data and the exec plugin come through; additional arguments are
// appended under Append; additional variables under Replace take the profile's value, under
// AppendIfNotExists keep the provider's, and under Ignore neither is added.
func TestConfig(t *testing.T) {
	profile := clusterprofile.Profile{Namespace: "fleet", Name: "test-cluster", Access: []clusterprofile.AccessProvider{
		{Name: "test-provider-1", Cluster: clientcmdv1.Cluster{Server: "https://test-server-1.com", CertificateAuthorityData: []byte("test-ca-data-1"),
			ProxyURL: "http://proxy.example.com",
			Extensions: []clientcmdv1.NamedExtension{
				extension(t, clusterprofile.ArgsExtension, []string{"--audience", "audience"}),
				extension(t, clusterprofile.EnvsExtension, map[string]string{"CLIENT_ID": "client-id", "TENANT_ID": "tenant-id"}),
			}}},
		{Name: "test-provider-2", Cluster: clientcmdv1.Cluster{Server: "https://test-server-2.com", CertificateAuthorityData: []byte("test-ca-data-2")}},
		{Name: "unsupported-provider", Cluster: clientcmdv1.Cluster{Server: "https://unsupported-server.com"}},
	}}
	provider := func(name string, args clusterprofile.ArgsPolicy, envs clusterprofile.EnvsPolicy) clusterprofile.Provider {
		return clusterprofile.Provider{Name: name, ProfileSourcedCLIArgsPolicy: args, ProfileSourcedEnvVarsPolicy: envs,
			ExecConfig: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "cat", Args: []string{"creds.json"},
				Env: []clientcmdapi.ExecEnvVar{{Name: "CLIENT_ID", Value: "None"}}}}
	}
	cases := []struct {
		name     string
		file     []clusterprofile.Provider
		server   string
		args     []string
		env      []clientcmdapi.ExecEnvVar
		errorHas string
	}{
		{name: "first of the file's providers the profile offers", file: []clusterprofile.Provider{provider("other", "", ""), provider("test-provider-2", "", ""), provider("test-provider-1", "", "")},
			server: "https://test-server-2.com", args: []string{"creds.json"}, env: []clientcmdapi.ExecEnvVar{{Name: "CLIENT_ID", Value: "None"}}},
		{name: "no match", file: []clusterprofile.Provider{provider("different-provider", "", "")},
			errorHas: "no access provider of the profile is in the provider file (profile: test-provider-1, test-provider-2, unsupported-provider; file: different-provider)"},
		{name: "append args, replace envs", file: []clusterprofile.Provider{provider("test-provider-1", clusterprofile.ArgsAppend, clusterprofile.EnvsReplace)},
			server: "https://test-server-1.com", args: []string{"creds.json", "--audience", "audience"},
			env: []clientcmdapi.ExecEnvVar{{Name: "CLIENT_ID", Value: "client-id"}, {Name: "TENANT_ID", Value: "tenant-id"}}},
		{name: "append args, envs if not there", file: []clusterprofile.Provider{provider("test-provider-1", clusterprofile.ArgsAppend, clusterprofile.EnvsAppendIfNotExists)},
			server: "https://test-server-1.com", args: []string{"creds.json", "--audience", "audience"},
			env: []clientcmdapi.ExecEnvVar{{Name: "CLIENT_ID", Value: "None"}, {Name: "TENANT_ID", Value: "tenant-id"}}},
		{name: "ignore both", file: []clusterprofile.Provider{provider("test-provider-1", clusterprofile.ArgsIgnore, clusterprofile.EnvsIgnore)},
			server: "https://test-server-1.com", args: []string{"creds.json"}, env: []clientcmdapi.ExecEnvVar{{Name: "CLIENT_ID", Value: "None"}}},
		{name: "no policy is ignore", file: []clusterprofile.Provider{provider("test-provider-1", "", "")},
			server: "https://test-server-1.com", args: []string{"creds.json"}, env: []clientcmdapi.ExecEnvVar{{Name: "CLIENT_ID", Value: "None"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := &clusterprofile.Providers{Providers: c.file}
			cfg, err := file.Config(profile)
			if c.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errorHas) {
					t.Fatalf("error %v, want %q", err, c.errorHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != c.server || cfg.ExecProvider.Command != "cat" || !reflect.DeepEqual(cfg.ExecProvider.Args, c.args) ||
				!reflect.DeepEqual(cfg.ExecProvider.Env, c.env) || cfg.ExecProvider.InteractiveMode != clientcmdapi.NeverExecInteractiveMode {
				t.Errorf("host %s exec %+v", cfg.Host, cfg.ExecProvider)
			}
			wantCA := map[string]string{"https://test-server-1.com": "test-ca-data-1", "https://test-server-2.com": "test-ca-data-2"}[c.server]
			if string(cfg.TLSClientConfig.CAData) != wantCA || cfg.BearerToken != "" || cfg.Username != "" || len(cfg.CertData) != 0 {
				t.Errorf("CA %q, want %q; credentials other than the exec plugin's: %+v", cfg.TLSClientConfig.CAData, wantCA, cfg)
			}
			// Building a config never changes the file's own exec config.
			if again, _ := file.Config(profile); !reflect.DeepEqual(again.ExecProvider.Args, c.args) {
				t.Errorf("a second config's args %v: the first changed the provider", again.ExecProvider.Args)
			}
		})
	}
}

// TestConfigProxyAndCredentialProviders: a profile's proxy URL is used; the deprecated
// credentialProviders are read, an accessProviders entry of the same name winning; a cluster
// without a server, or an additional-args extension that is not a list, is an error.
func TestConfigProxyAndCredentialProviders(t *testing.T) {
	hub := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{clusterprofile.Resource: "ClusterProfileList"},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
			"metadata": map[string]any{"namespace": "fleet", "name": "b"},
			"spec":     map[string]any{"clusterManager": map[string]any{"name": "ocm"}},
			"status": map[string]any{
				"credentialProviders": []any{
					map[string]any{"name": "old", "cluster": map[string]any{"server": "https://old.example"}},
					map[string]any{"name": "token", "cluster": map[string]any{"server": "https://stale.example"}},
				},
				"accessProviders": []any{
					map[string]any{"name": "token", "cluster": map[string]any{"server": "https://b.example", "proxy-url": "http://proxy.example:3128",
						"extensions": []any{map[string]any{"name": clusterprofile.ArgsExtension, "extension": map[string]any{"audience": "x"}}}}},
				},
			}}},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
			"metadata": map[string]any{"namespace": "fleet", "name": "a"},
			"status":   map[string]any{"accessProviders": []any{map[string]any{"name": "token", "cluster": map[string]any{}}}}}},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
			"metadata": map[string]any{"namespace": "other", "name": "c"}}},
	)
	profiles, err := clusterprofile.List(context.Background(), hub, "fleet")
	if err != nil || len(profiles) != 2 || profiles[0].Key() != "fleet/a" || profiles[1].Key() != "fleet/b" {
		t.Fatalf("%+v %v", profiles, err)
	}
	if all, err := clusterprofile.List(context.Background(), hub, ""); err != nil || len(all) != 3 || all[2].Key() != "other/c" {
		t.Fatalf("all namespaces: %+v %v", all, err)
	}
	b := profiles[1]
	if len(b.Access) != 2 || b.Access[0].Cluster.Server != "https://b.example" || b.Access[1].Name != "old" {
		t.Fatalf("access %+v", b.Access)
	}
	file := &clusterprofile.Providers{Providers: []clusterprofile.Provider{{Name: "token", ExecConfig: &clientcmdapi.ExecConfig{Command: "x"}}}}
	cfg, err := file.Config(b)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://b.example/version", nil)
	if u, err := cfg.Proxy(req); err != nil || u.String() != "http://proxy.example:3128" {
		t.Errorf("proxy %v %v", u, err)
	}
	if _, err := file.Config(profiles[0]); err == nil || !strings.Contains(err.Error(), `access provider "token" gives no cluster server`) {
		t.Errorf("a cluster without a server: %v", err)
	}
	file.Providers[0].ProfileSourcedCLIArgsPolicy = clusterprofile.ArgsAppend
	if _, err := file.Config(b); err == nil || !strings.Contains(err.Error(), "want a list of arguments") {
		t.Errorf("additional-args that is a map: %v", err)
	}
}

// TestExecPluginThroughClientGo: the config's exec plugin runs through client-go's exec
// credential machinery: the API server gets its token; the plugin gets the profile's
// additional argument and variable and, with provideClusterInfo, the cluster's server and the
// client.authentication.k8s.io/exec extension as spec.cluster.config. A plugin that fails, and
// one that never answers, are one error each, the latter within the timeout.
func TestExecPluginThroughClientGo(t *testing.T) {
	var gotAuth string
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major": "1", "minor": "37", "gitVersion": "v1.37.2"}`))
	}))
	defer server.Close()
	dir := t.TempDir()
	info := filepath.Join(dir, "exec-info.json")
	plugin := writeFile(t, "plugin.sh", `#!/bin/sh
printf '%s' "$KUBERNETES_EXEC_INFO" > `+info+`
echo "$1 $MEMBER_TOKEN_SUFFIX" > `+info+`.args
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"member-%s"}}' "$MEMBER_TOKEN_SUFFIX"
`, 0o755)
	ca := pemCA(t, server)
	profile := clusterprofile.Profile{Namespace: "fleet", Name: "a", Access: []clusterprofile.AccessProvider{{Name: "token", Cluster: clientcmdv1.Cluster{
		Server: server.URL, CertificateAuthorityData: ca, Extensions: []clientcmdv1.NamedExtension{
			extension(t, clusterprofile.ExecExtension, map[string]any{"audience": "fleet-a"}),
			extension(t, clusterprofile.ArgsExtension, []string{"--cluster=a"}),
			extension(t, clusterprofile.EnvsExtension, map[string]string{"MEMBER_TOKEN_SUFFIX": "a"}),
		}}}}}
	file := &clusterprofile.Providers{Providers: []clusterprofile.Provider{{Name: "token", ProfileSourcedCLIArgsPolicy: clusterprofile.ArgsAppend,
		ProfileSourcedEnvVarsPolicy: clusterprofile.EnvsAppendIfNotExists,
		ExecConfig:                  &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: plugin, ProvideClusterInfo: true}}}}
	cfg, err := file.Config(profile)
	if err != nil {
		t.Fatal(err)
	}
	if err := clusterprofile.Reach(context.Background(), cfg, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if gotAuth != "Bearer member-a" {
		t.Errorf("Authorization %q, want the plugin's token", gotAuth)
	}
	var cred struct {
		Spec struct {
			Cluster struct {
				Server string         `json:"server"`
				Config map[string]any `json:"config"`
			} `json:"cluster"`
			Interactive bool `json:"interactive"`
		} `json:"spec"`
	}
	data, _ := os.ReadFile(info)
	if err := json.Unmarshal(data, &cred); err != nil || cred.Spec.Cluster.Server != server.URL || cred.Spec.Cluster.Config["audience"] != "fleet-a" || cred.Spec.Interactive {
		t.Errorf("KUBERNETES_EXEC_INFO %s (%v)", data, err)
	}
	if args, _ := os.ReadFile(info + ".args"); string(args) != "--cluster=a a\n" {
		t.Errorf("plugin argument and variable %q", args)
	}

	// A credential the server refuses (401).
	refusing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer refusing.Close()
	refused := clusterprofile.Profile{Namespace: "fleet", Name: "r", Access: []clusterprofile.AccessProvider{{Name: "token", Cluster: clientcmdv1.Cluster{
		Server: refusing.URL, CertificateAuthorityData: pemCA(t, refusing)}}}}
	file.Providers[0].ExecConfig = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: plugin}
	cfg, _ = file.Config(refused)
	if err := clusterprofile.Reach(context.Background(), cfg, 10*time.Second); err == nil || !strings.HasPrefix(err.Error(), "Unauthorized: "+refusing.URL+" refused the credential of exec plugin "+plugin) {
		t.Errorf("a refused credential: %v", err)
	}

	failing := writeFile(t, "failing.sh", "#!/bin/sh\necho 'token expired' >&2\nexit 3\n", 0o755)
	file.Providers[0].ExecConfig = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: failing}
	cfg, _ = file.Config(profile)
	if err := clusterprofile.Reach(context.Background(), cfg, 10*time.Second); err == nil || !strings.Contains(err.Error(), "exec plugin "+failing) ||
		!strings.Contains(err.Error(), "failed with exit code 3") {
		t.Errorf("a failing plugin: %v", err)
	}

	hanging := writeFile(t, "hanging.sh", "#!/bin/sh\nexec sleep 3\n", 0o755)
	file.Providers[0].ExecConfig = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: hanging}
	cfg, _ = file.Config(profile)
	start := time.Now()
	err = clusterprofile.Reach(context.Background(), cfg, time.Second)
	if err == nil || !strings.Contains(err.Error(), "no answer within 1s (exec plugin "+hanging) || time.Since(start) > 5*time.Second {
		t.Errorf("a plugin that never answers: %v after %s", err, time.Since(start))
	}
}

// pemCA is the test server's certificate, PEM-encoded as a kubeconfig's CA data.
func pemCA(t *testing.T, server *httptest.Server) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
}
