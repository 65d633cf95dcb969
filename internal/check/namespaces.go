package check

import (
	"context"
	"maps"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// AllNamespaces diagnoses what the reader hands out, one snapshot at a time (gather.Paged: every
// namespace in turn, dropping each after): the report is Report's of one snapshot of
// everything, in the memory of one namespace. With explanations it also returns
// diagnose.ReportWithExplanations' explanations. When the reader starts over (a nil snapshot),
// what it handed out before is dropped.
func AllNamespaces(ctx context.Context, r gather.Reader, opts stuck.Options, explanations bool) (*model.Report, map[string]*apiv1.Explanation, error) {
	var findings []stuck.Finding
	var sets []apiv1.StatefulSetSummary
	var recheck time.Time
	var explained map[string]*apiv1.Explanation
	if explanations {
		explained = map[string]*apiv1.Explanation{}
	}
	read, err := r.Read(ctx, func(snap *stuck.Objects) error {
		if snap == nil {
			findings, sets, recheck = nil, nil, time.Time{}
			clear(explained)
			return nil
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
	rep := model.NewReport(read.OpenShift, sets, findings)
	rep.RecheckAt = recheck
	rep.Server = diagnose.Cluster(read.ServerVersion, read.OpenShift, nil, time.Now(), opts).Server
	rep.Warnings = read.Warnings
	return rep, explained, nil
}
