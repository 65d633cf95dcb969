// Package clusterprofile reads a fleet from a cluster inventory: SIG-Multicluster's
// ClusterProfiles (KEP-4322, multicluster.x-k8s.io/v1alpha1) on a hub, and each member's
// rest.Config from the access providers of KEP-5339, as sigs.k8s.io/cluster-inventory-api's
// pkg/access defines them at 8375ac21498c5d46948b9e0bd19d4bbb8cc2b219 (config.go; that module
// is not served by the module proxy, so its contract is implemented here):
//
//   - the provider file (--clusterprofile-provider-file) is JSON: providers[] of name,
//     execConfig (client-go's clientcmd ExecConfig), profileSourcedCLIArgsPolicy (Append or
//     Ignore, default Ignore) and profileSourcedEnvVarsPolicy (AppendIfNotExists, Replace or
//     Ignore, default Ignore);
//   - a profile's status.accessProviders[] (and the deprecated status.credentialProviders[],
//     accessProviders winning on a name) are matched by name, the provider file's order
//     deciding which is used;
//   - the member's server, CA data and proxy URL come from the matched cluster; credentials come
//     from the provider's exec plugin only, run by client-go's exec credential machinery
//     (rest.Config.ExecProvider, interactive mode Never), the cluster's extension
//     client.authentication.k8s.io/exec passed as the ExecCredential's spec.cluster.config;
//   - the extensions clusterprofiles.multicluster.x-k8s.io/exec/additional-args (a list of
//     arguments) and .../additional-envs (a map of variables) add to the plugin's arguments and
//     environment as the provider's policies allow.
//
// Unlike config.go, building one profile's config never changes the provider file's exec
// config (config.go appends a profile's extra arguments to the provider's own slice, so they
// accumulate across profiles), policies are checked when the file is read, and the
// environment's order is the file's, then the extension's names sorted (config.go's is a map's).
package clusterprofile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/yaml"
)

// Resource is the ClusterProfiles' API (config/crd/bases/multicluster.x-k8s.io_clusterprofiles.yaml).
var Resource = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "clusterprofiles"}

// The cluster extensions pkg/access reads (config.go:47-62).
const (
	// ExecExtension is SIG Auth's reserved extension: its value is handed to the exec plugin as
	// the ExecCredential's spec.cluster.config.
	ExecExtension = "client.authentication.k8s.io/exec"
	// ArgsExtension holds a list of arguments for the plugin (KEP-5339).
	ArgsExtension = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
	// EnvsExtension holds a map of environment variables for the plugin (KEP-5339).
	EnvsExtension = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"
)

// ArgsPolicy is what a provider does with a profile's additional arguments.
type ArgsPolicy string

// EnvsPolicy is what a provider does with a profile's additional environment variables.
type EnvsPolicy string

// The policies of pkg/access (config.go:64-76); empty is Ignore.
const (
	ArgsAppend ArgsPolicy = "Append"
	ArgsIgnore ArgsPolicy = "Ignore"

	EnvsAppendIfNotExists EnvsPolicy = "AppendIfNotExists"
	EnvsReplace           EnvsPolicy = "Replace"
	EnvsIgnore            EnvsPolicy = "Ignore"
)

// Provider is one entry of the provider file.
type Provider struct {
	Name                        string                   `json:"name"`
	ExecConfig                  *clientcmdapi.ExecConfig `json:"execConfig"`
	ProfileSourcedCLIArgsPolicy ArgsPolicy               `json:"profileSourcedCLIArgsPolicy,omitempty"`
	ProfileSourcedEnvVarsPolicy EnvsPolicy               `json:"profileSourcedEnvVarsPolicy,omitempty"`
}

// Providers is the provider file: how this machine reaches a cluster through each kind of
// access provider a profile may offer.
type Providers struct {
	Providers []Provider `json:"providers"`
}

// ReadProviders reads and checks a provider file.
func ReadProviders(path string) (*Providers, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the ClusterProfile provider file: %w", err)
	}
	var p Providers
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("the ClusterProfile provider file %s is not JSON of providers: %w", path, err)
	}
	if len(p.Providers) == 0 {
		return nil, fmt.Errorf("the ClusterProfile provider file %s names no provider", path)
	}
	for _, pr := range p.Providers {
		switch {
		case pr.Name == "":
			return nil, fmt.Errorf("the ClusterProfile provider file %s has a provider without a name", path)
		case pr.ExecConfig == nil || pr.ExecConfig.Command == "":
			return nil, fmt.Errorf("provider %q of %s has no execConfig.command", pr.Name, path)
		}
		switch pr.ProfileSourcedCLIArgsPolicy {
		case "", ArgsAppend, ArgsIgnore:
		default:
			return nil, fmt.Errorf("provider %q of %s: profileSourcedCLIArgsPolicy %q: want Append or Ignore", pr.Name, path, pr.ProfileSourcedCLIArgsPolicy)
		}
		switch pr.ProfileSourcedEnvVarsPolicy {
		case "", EnvsAppendIfNotExists, EnvsReplace, EnvsIgnore:
		default:
			return nil, fmt.Errorf("provider %q of %s: profileSourcedEnvVarsPolicy %q: want AppendIfNotExists, Replace or Ignore", pr.Name, path, pr.ProfileSourcedEnvVarsPolicy)
		}
	}
	return &p, nil
}

// AccessProvider is one way to reach a profile's cluster (status.accessProviders[]).
type AccessProvider struct {
	Name    string              `json:"name"`
	Cluster clientcmdv1.Cluster `json:"cluster,omitempty"`
}

// Profile is what is read of one ClusterProfile.
type Profile struct {
	Namespace, Name string
	// Access are its access providers: accessProviders, and the deprecated credentialProviders
	// whose names accessProviders does not use.
	Access []AccessProvider
}

// Key is NAMESPACE/NAME, how every result of a member names it.
func (p Profile) Key() string { return p.Namespace + "/" + p.Name }

// clusterProfile is the part of the object read.
type clusterProfile struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Status   struct {
		AccessProviders     []AccessProvider `json:"accessProviders"`
		CredentialProviders []AccessProvider `json:"credentialProviders"`
	} `json:"status"`
}

// profileOf decodes one listed object.
func profileOf(obj *unstructured.Unstructured) (Profile, error) {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return Profile{}, err
	}
	var cp clusterProfile
	if err := json.Unmarshal(data, &cp); err != nil {
		return Profile{}, fmt.Errorf("ClusterProfile %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	p := Profile{Namespace: cp.Metadata.Namespace, Name: cp.Metadata.Name, Access: cp.Status.AccessProviders}
	for _, c := range cp.Status.CredentialProviders {
		if !slices.ContainsFunc(p.Access, func(a AccessProvider) bool { return a.Name == c.Name }) {
			p.Access = append(p.Access, c)
		}
	}
	return p, nil
}

// List reads the ClusterProfiles of namespace on the hub ("": every namespace), in pages,
// sorted by namespace and name.
func List(ctx context.Context, hub dynamic.Interface, namespace string) ([]Profile, error) {
	var profiles []Profile
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return hub.Resource(Resource).Namespace(namespace).List(ctx, opts)
	})
	p.PageSize = 500
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("listing ClusterProfiles: unexpected %T", obj)
		}
		profile, err := profileOf(u)
		if err != nil {
			return err
		}
		profiles = append(profiles, profile)
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("the hub serves no ClusterProfiles (%s): install the cluster inventory's CRD, or point --context/--kubeconfig at the hub: %w", Resource.GroupResource(), err)
	}
	if err != nil {
		return nil, fmt.Errorf("listing ClusterProfiles on the hub: %w", err)
	}
	sort.Slice(profiles, func(i, j int) bool { return profiles[i].Key() < profiles[j].Key() })
	return profiles, nil
}

// Config is the rest.Config of a profile's cluster through the first of the file's providers
// the profile offers.
func (ps *Providers) Config(p Profile) (*rest.Config, error) {
	var provider *Provider
	var access *AccessProvider
	for i := range ps.Providers {
		for j := range p.Access {
			if p.Access[j].Name == ps.Providers[i].Name {
				provider, access = &ps.Providers[i], &p.Access[j]
				break
			}
		}
		if provider != nil {
			break
		}
	}
	if provider == nil {
		var offered, known []string
		for _, a := range p.Access {
			offered = append(offered, a.Name)
		}
		for _, pr := range ps.Providers {
			known = append(known, pr.Name)
		}
		return nil, fmt.Errorf("no access provider of the profile is in the provider file (profile: %s; file: %s)", orNone(offered), orNone(known))
	}
	if access.Cluster.Server == "" {
		return nil, fmt.Errorf("access provider %q gives no cluster server", access.Name)
	}
	exec := provider.ExecConfig.DeepCopy()
	exec.InteractiveMode = clientcmdapi.NeverExecInteractiveMode
	for _, ext := range access.Cluster.Extensions {
		var err error
		switch ext.Name {
		case ArgsExtension:
			err = addArgs(exec, ext.Extension.Raw, provider.ProfileSourcedCLIArgsPolicy)
		case EnvsExtension:
			err = addEnvs(exec, ext.Extension.Raw, provider.ProfileSourcedEnvVarsPolicy)
		}
		if err != nil {
			return nil, fmt.Errorf("access provider %q: %w", access.Name, err)
		}
	}
	// The cluster's extensions as client-go's kubeconfig loading converts them (v1 → internal):
	// the exec extension is what the plugin gets as spec.cluster.config.
	cluster := clientcmdapi.NewCluster()
	if err := clientcmdlatest.Scheme.Convert(&access.Cluster, cluster, nil); err != nil {
		return nil, fmt.Errorf("access provider %q: its cluster: %w", access.Name, err)
	}
	exec.Config = cluster.Extensions[ExecExtension]
	proxy := access.Cluster.ProxyURL
	config := &rest.Config{
		Host:            access.Cluster.Server,
		TLSClientConfig: rest.TLSClientConfig{CAData: access.Cluster.CertificateAuthorityData},
		ExecProvider:    exec,
	}
	if proxy != "" {
		u, err := url.Parse(proxy)
		if err != nil {
			return nil, fmt.Errorf("access provider %q: proxy-url: %w", access.Name, err)
		}
		config.Proxy = http.ProxyURL(u)
	}
	return config, nil
}

// addArgs appends the profile's additional arguments when the provider allows it.
func addArgs(exec *clientcmdapi.ExecConfig, raw []byte, policy ArgsPolicy) error {
	if policy == "" || policy == ArgsIgnore {
		return nil
	}
	var args []string
	if err := yaml.Unmarshal(raw, &args); err != nil {
		return fmt.Errorf("extension %s: want a list of arguments: %w", ArgsExtension, err)
	}
	exec.Args = append(exec.Args, args...)
	return nil
}

// addEnvs merges the profile's additional environment variables as the provider's policy
// says: AppendIfNotExists keeps the provider's value of a name both give, Replace takes the
// profile's.
func addEnvs(exec *clientcmdapi.ExecConfig, raw []byte, policy EnvsPolicy) error {
	if policy == "" || policy == EnvsIgnore {
		return nil
	}
	var extra map[string]string
	if err := yaml.Unmarshal(raw, &extra); err != nil {
		return fmt.Errorf("extension %s: want a map of variables: %w", EnvsExtension, err)
	}
	for i, e := range exec.Env {
		if v, ok := extra[e.Name]; ok {
			if policy == EnvsReplace {
				exec.Env[i].Value = v
			}
			delete(extra, e.Name)
		}
	}
	names := make([]string, 0, len(extra))
	for n := range extra {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: n, Value: extra[n]})
	}
	return nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Reach asks the member's API server for its version with config's credentials — the exec
// plugin runs here, once, and client-go keeps its credential for the clients built from the same
// config — within timeout. client-go runs an exec plugin without a deadline (exec.Command, no
// context: plugin/pkg/client/auth/exec/exec.go@v0.35.4), so a plugin that never answers is
// abandoned here: the member is an error and the others go on; the plugin's process is left to
// end by itself.
func Reach(ctx context.Context, config *rest.Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	probe := rest.CopyConfig(config)
	probe.Timeout = timeout
	done := make(chan error, 1)
	go func() {
		dc, err := discovery.NewDiscoveryClientForConfig(probe)
		if err == nil {
			_, err = dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
		}
		done <- err
	}()
	select {
	case err := <-done:
		switch {
		case err == nil || config.ExecProvider == nil:
			return err
		case apierrors.IsUnauthorized(err):
			return fmt.Errorf("Unauthorized: %s refused the credential of exec plugin %s: %w", config.Host, config.ExecProvider.Command, err)
		case strings.Contains(err.Error(), "getting credentials"):
			return fmt.Errorf("exec plugin %s: %w", config.ExecProvider.Command, err)
		}
		return err
	case <-ctx.Done():
		if config.ExecProvider != nil {
			return fmt.Errorf("no answer within %s (exec plugin %s, then GET /version of %s): %w", timeout, config.ExecProvider.Command, config.Host, ctx.Err())
		}
		return fmt.Errorf("no answer within %s from %s: %w", timeout, config.Host, ctx.Err())
	}
}
