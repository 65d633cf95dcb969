// Package check is the check and explain use cases: it reads the cluster (package gather) the way
// the scope asks — one LIST of a namespace or of named StatefulSets, all namespaces one at a
// time, or a fleet of contexts — and diagnoses what it read (package diagnose, pure), adding the
// previous logs of crashed containers when asked.
package check

import (
	"context"
	"fmt"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// Options say what one cluster's check reads and returns.
type Options struct {
	Diagnosis stuck.Options
	// Admission also asks admission about each predicted image rewrite (--confirm-with-admission,
	// gather.SourceFor); it reads the whole scope in one LIST, not triaged.
	Admission bool
	// Source, if set, is where the snapshot comes from instead (a test's fixed objects).
	Source gather.Source
	// Explanations also returns each StatefulSet's explanation, from the same diagnosis (the
	// HTML report draws each set's ordinals from them).
	Explanations bool
	// Full reads every object of all namespaces instead of triaging them by the StatefulSets'
	// statuses (check -A --full).
	Full bool
	// PageSize is the limit of each page of a full all-namespaces read (0: the default).
	PageSize int64
	// Logs, if positive, adds the last Logs lines of the run that exited to each finding about a
	// container that exited (gather.PreviousLogs).
	Logs int64
}

// Cluster checks one cluster's scope: all namespaces (no namespace, no names, no admission)
// triaged by the StatefulSets' statuses or one namespace at a time (ClusterWide), else one
// snapshot of the scope.
func Cluster(ctx context.Context, c gather.Clients, scope gather.Scope, o Options) (*model.Report, map[string]*apiv1.Explanation, error) {
	var rep *model.Report
	var explanations map[string]*apiv1.Explanation
	var err error
	if scope.Namespace == "" && len(scope.Names) == 0 && o.Source == nil && !o.Admission {
		rep, explanations, err = ClusterWide(ctx, c, scope, o)
	} else {
		src := o.Source
		if src == nil {
			src = gather.SourceFor(c, scope, o.Admission)
		}
		var snap *stuck.Objects
		var warnings []string
		if snap, warnings, err = src.Snapshot(ctx); err == nil {
			if o.Explanations {
				rep, explanations = diagnose.ReportWithExplanations(snap, o.Diagnosis)
			} else {
				rep = diagnose.Report(snap, o.Diagnosis)
			}
			rep.Warnings = warnings
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if o.Logs > 0 {
		rep.Warnings = append(rep.Warnings, gather.PreviousLogs(ctx, c.Kube, rep.Findings, o.Logs)...)
	}
	return rep, explanations, nil
}

// Run gathers the scope (gather.Gather) and diagnoses it; gathering warnings go in the report.
func Run(ctx context.Context, c gather.Clients, scope gather.Scope, opts stuck.Options) (*model.Report, *stuck.Objects, error) {
	return diagnose.FromSource(ctx, gather.Lister{Clients: c, Scope: scope}, opts)
}

// Explain gathers one StatefulSet's namespace (one LIST of the scope, gather.Lister) and
// explains it (diagnose.Explanation).
func Explain(ctx context.Context, c gather.Clients, scope gather.Scope, namespace, name string, opts stuck.Options) (*apiv1.Explanation, []string, error) {
	snap, warnings, err := gather.Lister{Clients: c, Scope: scope}.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	e := diagnose.Explanation(snap, namespace, name, opts)
	if e == nil {
		return nil, nil, &gather.NotFoundError{What: fmt.Sprintf("statefulset %q in namespace %q", name, namespace)}
	}
	return e, warnings, nil
}
