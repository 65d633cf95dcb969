package check

import (
	"context"
	"errors"
	"maps"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// AllNamespaces diagnoses every namespace of the scope (all namespaces, by selector only) one at
// a time as gather.EachNamespace reads them, and dropping each after: the report is Report's of
// one snapshot of everything, in the memory of one namespace. With explanations it also returns
// diagnose.ReportWithExplanations' explanations. When the LISTs cannot be read namespace by namespace
// (gather.ErrRestart) it gathers everything at once instead.
func AllNamespaces(ctx context.Context, c gather.Clients, scope gather.Scope, opts stuck.Options, explanations bool) (*model.Report, map[string]*apiv1.Explanation, error) {
	var findings []stuck.Finding
	var sets []apiv1.StatefulSetSummary
	var recheck time.Time
	var explained map[string]*apiv1.Explanation
	if explanations {
		explained = map[string]*apiv1.Explanation{}
	}
	read, err := gather.EachNamespace(ctx, c, scope, func(snap *stuck.Objects) error {
		var rep *model.Report
		var here map[string]*apiv1.Explanation
		if explanations {
			rep, here = diagnose.ReportWithExplanations(snap, opts)
		} else {
			rep = diagnose.Report(snap, opts)
		}
		findings = append(findings, rep.Findings...)
		sets = append(sets, rep.StatefulSets...)
		if !rep.RecheckAt.IsZero() && (recheck.IsZero() || rep.RecheckAt.Before(recheck)) {
			recheck = rep.RecheckAt
		}
		maps.Copy(explained, here)
		return nil
	})
	if errors.Is(err, gather.ErrRestart) {
		src := gather.Lister{Clients: c, Scope: scope}
		if explanations {
			snap, warnings, err := src.Snapshot(ctx)
			if err != nil {
				return nil, nil, err
			}
			rep, explained := diagnose.ReportWithExplanations(snap, opts)
			rep.Warnings = warnings
			return rep, explained, nil
		}
		rep, _, err := diagnose.FromSource(ctx, src, opts)
		return rep, nil, err
	}
	if err != nil {
		return nil, nil, err
	}
	rep := model.NewReport(read.OpenShift, sets, findings)
	rep.RecheckAt = recheck
	rules := stuck.RulesOrNewest(read.ServerVersion, opts.FeatureGates)
	rep.Server = &apiv1.ServerInfo{Version: read.ServerVersion, Rules: rules.Version, AssumedFeatureGates: rules.Gates}
	rep.Warnings = read.Warnings
	return rep, explained, nil
}
