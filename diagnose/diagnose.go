// Package diagnose runs every diagnosis (stuck, resolver) over a snapshot and assembles the
// report. Report is pure; Run glues it to gathering.
package diagnose

import (
	"context"
	"fmt"
	"strings"

	"github.com/stsdiag/stsdiag/report"
	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/snapshot"
	"github.com/stsdiag/stsdiag/stuck"
)

// Report diagnoses a snapshot.
func Report(snap *snapshot.Snapshot) *report.Report {
	return ReportWith(snap, stuck.DefaultOptions())
}

// ReportWith diagnoses a snapshot with the given options (the CLI becomes "oc" on OpenShift).
func ReportWith(snap *snapshot.Snapshot, opts stuck.Options) *report.Report {
	if snap.OpenShift {
		opts.CLI = "oc"
	}
	res := stuck.Diagnose(snap, opts)
	findings := linkImageRemedies(append(res.Findings, resolver.Diagnose(snap, opts.CLI)...))
	return report.New(snap.OpenShift, markStuck(res.StatefulSets, findings), findings)
}

// markStuck marks StatefulSets with an error finding from any diagnosis as Stuck.
func markStuck(sets []report.StatefulSetSummary, findings []report.Finding) []report.StatefulSetSummary {
	stuckSets := map[string]bool{}
	for _, f := range findings {
		if f.Severity == report.SeverityError {
			stuckSets[snapshot.Key(f.Namespace, f.StatefulSet)] = true
		}
	}
	for i := range sets {
		if stuckSets[snapshot.Key(sets[i].Namespace, sets[i].Name)] && sets[i].Status != report.StatusTerminating {
			sets[i].Status = report.StatusStuck
		}
	}
	return sets
}

// linkImageRemedies points a pod failing on an unresolved ImageStream name to the exact image the
// resolver computed, instead of a generic "fix the image".
func linkImageRemedies(findings []report.Finding) []report.Finding {
	resolved := map[string]string{}
	for _, f := range findings {
		if f.Code == report.UnresolvedImageReference {
			resolved[snapshot.Key(f.Namespace, f.StatefulSet)+"/"+f.Container+"/"+f.Image] = f.ResolvedImage
		}
	}
	for i, f := range findings {
		to, ok := resolved[snapshot.Key(f.Namespace, f.StatefulSet)+"/"+f.Container+"/"+f.Image]
		if !ok || f.Code != report.CurrentRevisionFailing {
			continue
		}
		findings[i].Remedy = fmt.Sprintf("the image is an unresolved ImageStream name: set container %q to %s (see UnresolvedImageReference for the exact patch), then delete the stuck pod: %s",
			f.Container, to, deleteCommand(f.Remedy, f.Pod, f.Namespace))
	}
	return findings
}

func deleteCommand(remedy, pod, namespace string) string {
	cli := "kubectl"
	if strings.Contains(remedy, "oc ") {
		cli = "oc"
	}
	return fmt.Sprintf("%s delete pod %s -n %s", cli, pod, namespace)
}

// Run gathers the scope (snapshot.Gather) and diagnoses it.
func Run(ctx context.Context, c snapshot.Clients, scope snapshot.Scope) (*report.Report, *snapshot.Snapshot, error) {
	snap, warnings, err := snapshot.Gather(ctx, c, scope)
	if err != nil {
		return nil, nil, err
	}
	rep := Report(snap)
	rep.Warnings = warnings
	return rep, snap, nil
}
