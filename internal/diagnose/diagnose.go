// Package diagnose runs every diagnosis (stuck, resolver) over a snapshot and assembles the
// report, and explains StatefulSets from the same diagnosis. It is pure: it reads a snapshot and
// calls no API (package check reads the cluster for it).
package diagnose

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// Report diagnoses a snapshot: every analyzer establishes its facts, facts of one analyzer are
// linked to another's, explain words them (naming oc on OpenShift, else kubectl), and each
// StatefulSet's status is decided once, from every finding.
func Report(snap *stuck.Objects, opts stuck.Options) *model.Report {
	rep, _ := report(snap, opts)
	return rep
}

// Settled diagnoses a namespace whose StatefulSets the controller's status calls settled, read
// without their pods, claims, revisions or Events (gather.Triage): stuck.DiagnoseSettled, worded
// and counted as Report does.
func Settled(snap *stuck.Objects, opts stuck.Options) *model.Report {
	res := stuck.DiagnoseSettled(snap, opts)
	explain.Findings(res.Findings, explain.ForCluster(snap.OpenShift))
	rep := model.NewReport(snap.OpenShift, model.Summaries(res.StatefulSets, res.Findings), res.Findings)
	rep.Server = &apiv1.ServerInfo{Version: snap.ServerVersion, Rules: res.Rules.Version, AssumedFeatureGates: res.Rules.Gates}
	return rep
}

// report is Report, with the controller model each StatefulSet's findings come from.
// views are what explain shows of a diagnosis beyond its findings: the controller's next sync of
// each StatefulSet (namespace/name) and the changes expected by themselves, by pod
// (namespace/name).
type views struct {
	sets        map[string]*controller.View
	predictions map[string]stuck.Prediction
}

func report(snap *stuck.Objects, opts stuck.Options) (*model.Report, views) {
	if snap.Shared == nil {
		// Indexed once for both analyzers.
		indexed := *snap
		indexed.Shared = stuck.NewShared(snap)
		snap = &indexed
	}
	res := stuck.Diagnose(snap, opts)
	findings := append(res.Findings, resolver.Diagnose(snap)...)
	linkUnresolvedImages(findings)
	explain.Findings(findings, explain.ForCluster(snap.OpenShift))
	rep := model.NewReport(snap.OpenShift, model.Summaries(res.StatefulSets, findings), findings)
	rep.RecheckAt = res.RecheckAt
	rep.Server = &apiv1.ServerInfo{Version: snap.ServerVersion, Rules: res.Rules.Version, AssumedFeatureGates: res.Rules.Gates}
	return rep, views{sets: res.Views, predictions: res.Predictions}
}

// Source is what a diagnosis reads: a snapshot and the warnings of reading it (gather.Source;
// diagnose itself calls no API).
type Source interface {
	Snapshot(ctx context.Context) (*stuck.Objects, []string, error)
}

// FromSource takes a snapshot from the source and diagnoses it; its warnings go in the report.
func FromSource(ctx context.Context, src Source, opts stuck.Options) (*model.Report, *stuck.Objects, error) {
	snap, warnings, err := src.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	rep := Report(snap, opts)
	rep.Warnings = warnings
	return rep, snap, nil
}

// imageUse is one container image of a StatefulSet.
type imageUse struct {
	set       types.NamespacedName
	container string
	image     string
}

// linkUnresolvedImages tells a pod failing on an unresolved ImageStream name the exact image the
// resolver computed, so its remedy sets that image instead of a generic "fix the image".
func linkUnresolvedImages(findings []stuck.Finding) {
	resolved := map[imageUse]string{}
	for _, f := range findings {
		if f.Code == apiv1.UnresolvedImageReference {
			resolved[useOf(f)] = f.ResolvedImage
		}
	}
	for i, f := range findings {
		failing, ok := f.Facts.(stuck.Failing)
		if to, found := resolved[useOf(f)]; ok && found {
			failing.UnresolvedTo = to
			findings[i].Facts = failing
		}
	}
}

func useOf(f stuck.Finding) imageUse {
	return imageUse{set: types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}, container: f.Container, image: f.Image}
}
