package check

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/fleet"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// Target is one cluster of a fleet: the name the merged report gives it (its kubeconfig
// context, or its ClusterProfile as NAMESPACE/NAME), its clients and scope.
type Target struct {
	Context string
	Clients gather.Clients
	Scope   gather.Scope
	// Connect, if set, gives the target's clients and scope instead: it is called in the fleet's
	// run, within FleetOptions.Concurrency, so that reaching the member (its exec plugin, its first
	// request) is that member's error and bounded like its reads.
	Connect func(ctx context.Context) (gather.Clients, gather.Scope, error)
}

// FleetOptions tune RunFleet.
type FleetOptions struct {
	Options
	// Concurrency bounds how many members are checked at once (0: all at once).
	Concurrency int
	// Noun is what a member is called in warnings: "context" (the default) or "clusterprofile".
	Noun string
}

// outcome is one target's report, or why there is none.
type outcome struct {
	rep *model.Report
	err error
}

// RunFleet gathers and diagnoses every target concurrently (at most o.Concurrency at once) and merges
// the reports into one: each StatefulSet and finding carries its context. A target that cannot
// be evaluated (unreachable, forbidden, namespace missing) becomes a warning naming it, and
// neither hides nor stops the others; members lists every target with its error, if any. The
// report's server block is kept when every evaluated context applied the same rules, and
// omitted when they differ (each context's findings still follow its own release).
func RunFleet(ctx context.Context, targets []Target, o FleetOptions) (rep *model.Report, members []apiv1.FleetMember) {
	opts := o.Diagnosis
	limit := fleet.NewLimit(o.Concurrency)
	outcomes := fleet.Run(ctx, targets, func(ctx context.Context, t Target) outcome {
		var out outcome
		err := limit.Do(ctx, func() error {
			c, scope := t.Clients, t.Scope
			if t.Connect != nil {
				var err error
				if c, scope, err = t.Connect(ctx); err != nil {
					return err
				}
			}
			if !o.Admission && scope.Namespace == "" && len(scope.Names) == 0 {
				// All namespaces, as check -A.
				out.rep, _, out.err = ClusterWide(ctx, c, scope, Options{Diagnosis: opts, Full: o.Full, PageSize: o.PageSize})
				return nil
			}
			out.rep, _, out.err = diagnose.FromSource(ctx, gather.SourceFor(c, scope, o.Admission), opts)
			return nil
		})
		if err != nil {
			out.err = err
		}
		return out
	}, nil)
	noun := o.Noun
	if noun == "" {
		noun = "context"
	}
	var sets []apiv1.StatefulSetSummary
	var findings []stuck.Finding
	var warnings []string
	var servers []*apiv1.ServerInfo
	openshift := false
	for i, o := range outcomes {
		name := targets[i].Context
		member := apiv1.FleetMember{Name: name}
		if o.err != nil {
			member.Error = o.err.Error()
			members = append(members, member)
			warnings = append(warnings, fmt.Sprintf("%s %s: %v", noun, name, o.err))
			continue
		}
		members = append(members, member)
		openshift = openshift || o.rep.OpenShift
		servers = append(servers, o.rep.Server)
		for _, s := range o.rep.StatefulSets {
			s.Context = name
			sets = append(sets, s)
		}
		for _, f := range o.rep.Findings {
			f.Context = name
			findings = append(findings, f)
		}
		for _, w := range o.rep.Warnings {
			warnings = append(warnings, fmt.Sprintf("%s %s: %s", noun, name, w))
		}
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	rep = model.NewReport(openshift, sets, findings)
	rep.Warnings = warnings
	rep.Server = commonServer(servers)
	return rep, members
}

// Failed are the members that could not be checked, by name.
func Failed(members []apiv1.FleetMember) []string {
	var out []string
	for _, m := range members {
		if m.Error != "" {
			out = append(out, m.Name)
		}
	}
	return out
}

// commonServer is the server block every context agrees on, or nil when they differ or none
// was evaluated. Each cluster's controller manager is its own (a stopped one is a finding of its
// context): the common block has none.
func commonServer(servers []*apiv1.ServerInfo) *apiv1.ServerInfo {
	if len(servers) == 0 {
		return nil
	}
	rules := make([]apiv1.ServerInfo, len(servers))
	for i, s := range servers {
		if s != nil {
			rules[i] = *s
			rules[i].ControllerManager = nil
		}
	}
	for i, s := range servers[1:] {
		if (s == nil) != (servers[0] == nil) || !reflect.DeepEqual(rules[i+1], rules[0]) {
			return nil
		}
	}
	if servers[0] == nil {
		return nil
	}
	return &rules[0]
}
