package connect

import (
	"context"
	"fmt"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/stsdiag/stsdiag/internal/clusterprofile"
	"github.com/stsdiag/stsdiag/internal/fleet"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// Member is one cluster of a fleet: its name in results (a kubeconfig context, or a
// ClusterProfile as NAMESPACE/NAME) and how to reach it. Connect reaches it: for a
// ClusterProfile it runs the provider's exec plugin and makes the first request within the
// request timeout, so an unreachable or unauthorized member, or a plugin that fails or hangs, is
// that member's error. Its errors do not name the member: the caller does.
type Member struct {
	Name    string
	Connect func(ctx context.Context, p Profile) (Clients, read.Scope, error)
}

// ContextMembers are the kubeconfig's contexts as a fleet: each with its clients and the base
// scope (names, selector, OpenShift mode) in that context's namespace (-n, else the context's
// own; every namespace with allNamespaces).
func ContextMembers(flags *genericclioptions.ConfigFlags, contexts []string, allNamespaces bool, base read.Scope) []Member {
	var out []Member
	for _, name := range contexts {
		out = append(out, Member{Name: name, Connect: func(_ context.Context, p Profile) (Clients, read.Scope, error) {
			ctxFlags := flagsForContext(flags, name)
			c, err := New(ctxFlags, p)
			if err != nil {
				return Clients{}, read.Scope{}, err
			}
			scope := base
			if scope.Namespace, err = Namespace(ctxFlags, allNamespaces); err != nil {
				return Clients{}, read.Scope{}, err
			}
			return c, scope, nil
		}})
	}
	return out
}

// flagsForContext copies the kubeconfig flags with another context.
func flagsForContext(flags *genericclioptions.ConfigFlags, name string) *genericclioptions.ConfigFlags {
	out := genericclioptions.NewConfigFlags(false)
	copyString := func(dst, src *string) {
		if src != nil && dst != nil {
			*dst = *src
		}
	}
	copyString(out.KubeConfig, flags.KubeConfig)
	copyString(out.Namespace, flags.Namespace)
	copyString(out.Timeout, flags.Timeout)
	copyString(out.Impersonate, flags.Impersonate)
	if flags.ImpersonateGroup != nil {
		*out.ImpersonateGroup = append([]string(nil), *flags.ImpersonateGroup...)
	}
	*out.Context = name
	return out
}

// ProfileFleet is a fleet of ClusterProfiles on the hub, the kubeconfig's current context.
type ProfileFleet struct {
	// Namespace on the hub; "" for every namespace's.
	Namespace string
	providers *clusterprofile.Providers
}

// NewProfileFleet reads the access providers' file (sigs.k8s.io/cluster-inventory-api's).
func NewProfileFleet(namespace, providerFile string) (*ProfileFleet, error) {
	providers, err := clusterprofile.ReadProviders(providerFile)
	if err != nil {
		return nil, err
	}
	return &ProfileFleet{Namespace: namespace, providers: providers}, nil
}

// Members lists the ClusterProfiles the hub holds now. Each member's namespace: -n, else every
// namespace with allNamespaces, else default (a member has no kubeconfig context of its own to
// take one from).
func (f *ProfileFleet) Members(ctx context.Context, flags *genericclioptions.ConfigFlags, allNamespaces bool, base read.Scope) ([]Member, error) {
	hubConfig, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig (the hub): %w", err)
	}
	hubConfig = rest.CopyConfig(hubConfig)
	if hubConfig.Timeout == 0 {
		hubConfig.Timeout = DefaultRequestTimeout
	}
	hub, err := dynamic.NewForConfig(hubConfig)
	if err != nil {
		return nil, err
	}
	profiles, err := clusterprofile.List(ctx, hub, f.Namespace)
	if err != nil {
		return nil, err
	}
	if len(profiles) == 0 {
		where := "in namespace " + f.Namespace
		if f.Namespace == "" {
			where = "in any namespace"
		}
		return nil, fmt.Errorf("the hub holds no ClusterProfile %s", where)
	}
	switch {
	case allNamespaces:
		base.Namespace = ""
	case flags.Namespace != nil && *flags.Namespace != "":
		base.Namespace = *flags.Namespace
	default:
		base.Namespace = "default"
	}
	timeout := DefaultRequestTimeout
	if flags.Timeout != nil && *flags.Timeout != "" && *flags.Timeout != "0" {
		if d, err := time.ParseDuration(*flags.Timeout); err == nil && d > 0 {
			timeout = d
		}
	}
	out := make([]Member, 0, len(profiles))
	for _, pr := range profiles {
		config, configErr := f.providers.Config(pr)
		out = append(out, Member{Name: pr.Key(), Connect: func(ctx context.Context, p Profile) (Clients, read.Scope, error) {
			if configErr != nil {
				return Clients{}, read.Scope{}, configErr
			}
			if err := clusterprofile.Reach(ctx, config, timeout); err != nil {
				return Clients{}, read.Scope{}, err
			}
			config := rest.CopyConfig(config)
			if p.Timeout != 0 {
				config.Timeout = timeout
			}
			c, err := ForConfig(config, p)
			return c, base, err
		}})
	}
	return out, nil
}

// Limited are the members with at most n of them reaching their cluster at once (n <= 0: no
// bound): their Connect calls wait for a place.
func Limited(members []Member, n int) []Member {
	limit := fleet.NewLimit(n)
	out := make([]Member, len(members))
	for i, m := range members {
		out[i] = Member{Name: m.Name, Connect: func(ctx context.Context, p Profile) (c Clients, scope read.Scope, err error) {
			if lerr := limit.Do(ctx, func() error {
				c, scope, err = m.Connect(ctx, p)
				return nil
			}); lerr != nil {
				return Clients{}, read.Scope{}, lerr
			}
			return c, scope, err
		}}
	}
	return out
}
