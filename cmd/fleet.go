package cmd

import (
	"context"
	"errors"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stsdiag/stsdiag/internal/connect"
)

// defaultClusterConcurrency is how many members of a fleet are reached and checked at once: their
// exec plugins, first requests and, for check, whole reads.
const defaultClusterConcurrency = 10

// toProfileFleet checks the ClusterProfile flags and reads the provider file.
func (s *scopeFlags) toProfileFleet() (*connect.ProfileFleet, error) {
	if s.ProviderFile == "" {
		return nil, errors.New("--cluster-profiles needs --clusterprofile-provider-file: the exec plugins that get each access provider's credentials (docs/fleet.md)")
	}
	return connect.NewProfileFleet(s.ClusterProfiles, s.ProviderFile)
}

// noun is what a member is called in warnings.
func (s scope) noun() string {
	if s.profiles != nil {
		return "clusterprofile"
	}
	return "context"
}

// members lists the fleet of the scope: its contexts, or the ClusterProfiles the hub holds now.
func (s scope) members(ctx context.Context, flags *genericclioptions.ConfigFlags) ([]connect.Member, error) {
	if s.profiles == nil {
		return connect.ContextMembers(flags, s.contexts, s.allNamespaces, s.Scope), nil
	}
	return s.profiles.Members(ctx, flags, s.allNamespaces, s.Scope)
}
