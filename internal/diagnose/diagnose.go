// Package diagnose turns stuck.Diagnose's result into the report the command line prints, and
// explains StatefulSets from the same diagnosis. It is pure: it reads a snapshot and calls no API
// (package check reads the cluster for it).
package diagnose

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// Report diagnoses a snapshot (stuck.Diagnose: the controller's rules and OpenShift's image
// lookup, worded, each StatefulSet's status decided once from every finding) into a report.
func Report(snap *stuck.Objects, opts stuck.Options) *model.Report {
	rep, _ := report(snap, opts)
	return rep
}

// views are what explain shows of a diagnosis beyond its findings: the controller's next sync of
// each StatefulSet (namespace/name) and the changes expected by themselves, by pod
// (namespace/name).
type views struct {
	sets        map[types.NamespacedName]*controller.View
	predictions map[types.NamespacedName]facts.Prediction
}

func report(snap *stuck.Objects, opts stuck.Options) (*model.Report, views) {
	res := stuck.Diagnose(snap, opts)
	rep := model.NewReport(snap.OpenShift, res.StatefulSets, res.Findings)
	rep.RecheckAt = res.RecheckAt
	rep.Server = serverInfo(snap.ServerVersion, res.Rules)
	return rep, views{sets: res.Views, predictions: res.Predictions}
}

func serverInfo(version string, rules stuck.Rules) *apiv1.ServerInfo {
	return &apiv1.ServerInfo{Version: version, Rules: rules.Version, AssumedFeatureGates: rules.Gates}
}

// Cluster diagnoses what is of the cluster, not of a namespace, for reports assembled from one
// diagnosis per namespace: the server's rules (ServerInfo) and, when the controller manager's
// leader Lease was read, ControllerManagerNotRunning — the same stuck.Diagnose that a snapshot
// holding the Lease gets.
func Cluster(version string, openshift bool, lease *stuck.ControllerManagerLease, now time.Time, opts stuck.Options) *model.Report {
	return Report(&stuck.Objects{Now: now, ServerVersion: version, OpenShift: openshift, ControllerManager: lease}, opts)
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
