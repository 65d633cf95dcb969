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

// Target is one cluster of a fleet: the kubeconfig context naming it, its clients and scope.
type Target struct {
	Context string
	Clients gather.Clients
	Scope   gather.Scope
	// Source, if set, is where the target's snapshot comes from instead of a fresh LIST of its
	// scope (e.g. one that also asks admission, probe.Source).
	Source gather.Source
}

// outcome is one target's report, or why there is none.
type outcome struct {
	rep *model.Report
	err error
}

// RunFleet gathers and diagnoses every target concurrently and merges the reports into one:
// each StatefulSet and finding carries its context. A target that cannot be evaluated
// (unreachable, forbidden, namespace missing) becomes a warning naming it, and its context is
// returned in failed; the others are reported all the same. The report's server block is kept
// when every evaluated context applied the same rules, and omitted when they differ (each
// context's findings still follow its own release).
func RunFleet(ctx context.Context, targets []Target, o Options) (rep *model.Report, failed []string) {
	opts := o.Diagnosis
	outcomes := fleet.Run(ctx, targets, func(ctx context.Context, t Target) outcome {
		src := t.Source
		if src == nil {
			if t.Scope.Namespace == "" && len(t.Scope.Names) == 0 {
				// All namespaces, as check -A.
				r, _, err := ClusterWide(ctx, t.Clients, t.Scope, Options{Diagnosis: opts, Full: o.Full, PageSize: o.PageSize})
				return outcome{r, err}
			}
			src = gather.Lister{Clients: t.Clients, Scope: t.Scope}
		}
		r, _, err := diagnose.FromSource(ctx, src, opts)
		return outcome{r, err}
	}, nil)
	var sets []apiv1.StatefulSetSummary
	var findings []stuck.Finding
	var warnings []string
	var servers []*apiv1.ServerInfo
	openshift := false
	for i, o := range outcomes {
		name := targets[i].Context
		if o.err != nil {
			failed = append(failed, name)
			warnings = append(warnings, fmt.Sprintf("context %s: %v", name, o.err))
			continue
		}
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
			warnings = append(warnings, fmt.Sprintf("context %s: %s", name, w))
		}
	}
	sort.Strings(failed)
	rep = model.NewReport(openshift, sets, findings)
	rep.Warnings = warnings
	rep.Server = commonServer(servers)
	return rep, failed
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
