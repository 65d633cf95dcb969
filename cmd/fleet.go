package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/stsdiag/stsdiag/internal/clusterprofile"
	"github.com/stsdiag/stsdiag/internal/gather"
)

// defaultClusterConcurrency is how many members of a fleet are reached and checked at once: their
// exec plugins, first requests and, for check, whole reads.
const defaultClusterConcurrency = 10

// profileFleet is a fleet of ClusterProfiles on the hub, the current kubeconfig context.
type profileFleet struct {
	// namespace on the hub; "" with --all-cluster-profiles.
	namespace string
	providers *clusterprofile.Providers
}

// toProfileFleet checks the ClusterProfile flags and reads the provider file.
func (s *scopeFlags) toProfileFleet() (*profileFleet, error) {
	if s.ProviderFile == "" {
		return nil, errors.New("--cluster-profiles needs --clusterprofile-provider-file: the exec plugins that get each access provider's credentials (docs/fleet.md)")
	}
	providers, err := clusterprofile.ReadProviders(s.ProviderFile)
	if err != nil {
		return nil, err
	}
	return &profileFleet{namespace: s.ClusterProfiles, providers: providers}, nil
}

// member is one cluster of a fleet: its name in results (a kubeconfig context, or a ClusterProfile
// as NAMESPACE/NAME) and how to reach it. connect reaches it: for a ClusterProfile it runs the
// provider's exec plugin and makes the first request within the request timeout, so an
// unreachable or unauthorized member, or a plugin that fails or hangs, is that member's error.
type member struct {
	name    string
	connect func(ctx context.Context, p profile) (gather.Clients, gather.Scope, error)
}

// noun is what a member is called in warnings.
func (s scope) noun() string {
	if s.profiles != nil {
		return "clusterprofile"
	}
	return "context"
}

// members lists the fleet of the scope: its contexts, or the ClusterProfiles the hub holds now.
func (s scope) members(ctx context.Context, flags *genericclioptions.ConfigFlags) ([]member, error) {
	if s.profiles == nil {
		var out []member
		for _, name := range s.contexts {
			out = append(out, member{name: name, connect: func(_ context.Context, p profile) (gather.Clients, gather.Scope, error) {
				return contextTarget(flags, name, s.allNamespaces, s.Scope, p)
			}})
		}
		return out, nil
	}
	hubConfig, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig (the hub): %w", err)
	}
	hubConfig = rest.CopyConfig(hubConfig)
	if hubConfig.Timeout == 0 {
		hubConfig.Timeout = defaultRequestTimeout
	}
	hub, err := dynamic.NewForConfig(hubConfig)
	if err != nil {
		return nil, err
	}
	profiles, err := clusterprofile.List(ctx, hub, s.profiles.namespace)
	if err != nil {
		return nil, err
	}
	if len(profiles) == 0 {
		where := "in namespace " + s.profiles.namespace
		if s.profiles.namespace == "" {
			where = "in any namespace"
		}
		return nil, fmt.Errorf("the hub holds no ClusterProfile %s", where)
	}
	// Each member's namespace: -n, else every namespace with -A, else default (a member has no
	// kubeconfig context of its own to take one from).
	base := s.Scope
	switch {
	case s.allNamespaces:
		base.Namespace = ""
	case flags.Namespace != nil && *flags.Namespace != "":
		base.Namespace = *flags.Namespace
	default:
		base.Namespace = "default"
	}
	timeout := defaultRequestTimeout
	if flags.Timeout != nil && *flags.Timeout != "" && *flags.Timeout != "0" {
		if d, err := time.ParseDuration(*flags.Timeout); err == nil && d > 0 {
			timeout = d
		}
	}
	out := make([]member, 0, len(profiles))
	for _, pr := range profiles {
		config, configErr := s.profiles.providers.Config(pr)
		out = append(out, member{name: pr.Key(), connect: func(ctx context.Context, p profile) (gather.Clients, gather.Scope, error) {
			if configErr != nil {
				return gather.Clients{}, gather.Scope{}, configErr
			}
			if err := clusterprofile.Reach(ctx, config, timeout); err != nil {
				return gather.Clients{}, gather.Scope{}, err
			}
			config := rest.CopyConfig(config)
			if p.timeout != 0 {
				config.Timeout = timeout
			}
			c, err := clientsFor(config, p)
			return c, base, err
		}})
	}
	return out, nil
}
