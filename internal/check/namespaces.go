package check

import (
	"context"
	"maps"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// AllNamespaces diagnoses what the reader hands out, one snapshot at a time (gather.Paged or
// gather.Triaged: every namespace in turn, dropping each after): the report is Report's of one
// snapshot of everything, in the memory of one namespace, its warnings those of every snapshot
// once each. With explanations it also returns diagnose.ReportWithExplanations' explanations.
// When the reader starts over (a nil snapshot), what it handed out before is dropped.
func AllNamespaces(ctx context.Context, r read.Reader, opts stuck.Options, explanations bool) (*model.Report, map[string]*apiv1.Explanation, error) {
	var findings []stuck.Finding
	var sets []apiv1.StatefulSetSummary
	var recheck time.Time
	var explained map[string]*apiv1.Explanation
	if explanations {
		explained = map[string]*apiv1.Explanation{}
	}
	var warnings []string
	warned := map[string]bool{}
	var openShift bool
	var serverVersion string
	err := r.Read(ctx, func(snap *stuck.Objects) error {
		if snap == nil {
			findings, sets, recheck, warnings = nil, nil, time.Time{}, nil
			clear(explained)
			clear(warned)
			return nil
		}
		openShift, serverVersion = snap.OpenShift, snap.ServerVersion
		for _, w := range snap.Warnings {
			if !warned[w] {
				warned[w] = true
				warnings = append(warnings, w)
			}
		}
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
	if err != nil {
		return nil, nil, err
	}
	rep := model.NewReport(openShift, sets, findings)
	rep.RecheckAt = recheck
	rep.Server = diagnose.Cluster(serverVersion, openShift, nil, time.Now(), opts).Server
	rep.Warnings = warnings
	return rep, explained, nil
}
