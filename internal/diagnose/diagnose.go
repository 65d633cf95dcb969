// Package diagnose runs every diagnosis (stuck, resolver) over a snapshot and assembles the
// report. Report is pure; Run glues it to gathering.
package diagnose

import (
	"context"
	"fmt"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/resolver"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/stuck"
)

// Report diagnoses a snapshot. On OpenShift the remedies name oc instead of kubectl.
func Report(snap *snapshot.Snapshot, opts stuck.Options) *model.Report {
	if snap.OpenShift {
		opts.CLI = "oc"
	}
	if opts.CLI == "" {
		opts.CLI = "kubectl"
	}
	res := stuck.Diagnose(snap, opts)
	findings := linkImageRemedies(append(res.Findings, resolver.Diagnose(snap, opts.CLI)...), opts.CLI)
	rep := model.NewReport(snap.OpenShift, markStuck(res.StatefulSets, findings), findings)
	rep.RecheckAt = res.RecheckAt
	rep.Server = &apiv1.ServerInfo{Version: snap.ServerVersion, Rules: res.Rules.Version, AssumedFeatureGates: res.Rules.Gates}
	return rep
}

// Run gathers the scope (gather.Gather) and diagnoses it; gathering warnings go in the report.
func Run(ctx context.Context, c gather.Clients, scope gather.Scope, opts stuck.Options) (*model.Report, *snapshot.Snapshot, error) {
	return FromSource(ctx, gather.Lister{Clients: c, Scope: scope}, opts)
}

// FromSource takes a snapshot from the source and diagnoses it; its warnings go in the report.
func FromSource(ctx context.Context, src gather.Source, opts stuck.Options) (*model.Report, *snapshot.Snapshot, error) {
	snap, warnings, err := src.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	rep := Report(snap, opts)
	rep.Warnings = warnings
	return rep, snap, nil
}

// markStuck marks StatefulSets with an error finding from any diagnosis as Stuck.
func markStuck(sets []apiv1.StatefulSetSummary, findings []model.Finding) []apiv1.StatefulSetSummary {
	stuckSets := map[string]bool{}
	for _, f := range findings {
		if f.Severity == apiv1.SeverityError {
			stuckSets[snapshot.Key(f.Namespace, f.StatefulSet)] = true
		}
	}
	for i := range sets {
		if stuckSets[snapshot.Key(sets[i].Namespace, sets[i].Name)] && sets[i].Status != apiv1.StatusTerminating {
			sets[i].Status = apiv1.StatusStuck
		}
	}
	return sets
}

// linkImageRemedies points a pod failing on an unresolved ImageStream name to the exact image the
// resolver computed, instead of a generic "fix the image".
func linkImageRemedies(findings []model.Finding, cli string) []model.Finding {
	resolved := map[string]string{}
	for _, f := range findings {
		if f.Code == apiv1.UnresolvedImageReference {
			resolved[snapshot.Key(f.Namespace, f.StatefulSet)+"/"+f.Container+"/"+f.Image] = f.ResolvedImage
		}
	}
	for i, f := range findings {
		to, ok := resolved[snapshot.Key(f.Namespace, f.StatefulSet)+"/"+f.Container+"/"+f.Image]
		if !ok || f.Code != apiv1.CurrentRevisionFailing {
			continue
		}
		findings[i].Remedy = fmt.Sprintf("the image is an unresolved ImageStream name: set container %q to %s (see UnresolvedImageReference for the exact patch), then delete the stuck pod: %s delete pod %s -n %s",
			f.Container, to, cli, f.Pod, f.Namespace)
	}
	return findings
}
