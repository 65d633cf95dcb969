package check

import (
	"context"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// ClusterWide checks all namespaces (by selector only). It reads kube-controller-manager's
// leader Lease first: while it is renewed (or cannot say: not found, unreadable), the
// StatefulSets' statuses are current and the read is triaged by them (Triaged); when it is not
// renewed, or with o.Full or o.Explanations, everything is read (AllNamespaces). Either way the
// report says what the Lease said (server.controllerManager) and a Lease not renewed is a
// finding of its own (ControllerManagerNotRunning).
func ClusterWide(ctx context.Context, c gather.Clients, scope gather.Scope, o Options) (*model.Report, map[string]*apiv1.Explanation, error) {
	lease := gather.ControllerManagerLease(ctx, c)
	now := time.Now()
	var rep *model.Report
	var explanations map[string]*apiv1.Explanation
	var err error
	if o.Full || o.Explanations || lease.State(now) == stuck.LeaseNotRenewed {
		rep, explanations, err = AllNamespaces(ctx, gather.Paged{Clients: c, Scope: scope, PageSize: o.PageSize}, o.Diagnosis, o.Explanations)
	} else {
		rep, err = Triaged(ctx, c, scope, o.Diagnosis)
	}
	if err != nil {
		return nil, nil, err
	}
	withLease(rep, lease, now, o.Diagnosis)
	return rep, explanations, nil
}

// Triaged diagnoses all namespaces as gather.Triaged reads them: the namespaces it reads deep
// as AllNamespaces does, the settled ones from their StatefulSets and Services alone
// (stuck.Objects.StatusOnly). For the same cluster it reports what a full read reports.
func Triaged(ctx context.Context, c gather.Clients, scope gather.Scope, opts stuck.Options) (*model.Report, error) {
	rep, _, err := AllNamespaces(ctx, gather.Triaged{Clients: c, Scope: scope}, opts, false)
	return rep, err
}

// withLease adds what the controller manager's Lease said to the report.
func withLease(rep *model.Report, lease stuck.ControllerManagerLease, now time.Time, opts stuck.Options) {
	if rep.Server == nil {
		rep.Server = &apiv1.ServerInfo{}
	}
	info := &apiv1.ControllerManagerInfo{Lease: stuck.ControllerManagerLeaseNamespace + "/" + stuck.ControllerManagerLeaseName,
		State: string(lease.State(now)), Error: lease.Err}
	if l := lease.Lease; l != nil {
		if l.Spec.HolderIdentity != nil {
			info.Holder = *l.Spec.HolderIdentity
		}
		if l.Spec.RenewTime != nil {
			info.RenewTime = l.Spec.RenewTime.UTC().Format(time.RFC3339)
		}
	} else {
		info.Assumed = "statuses current"
	}
	rep.Server.ControllerManager = info
	if cluster := diagnose.Cluster(rep.Server.Version, rep.OpenShift, &lease, now, opts); len(cluster.Findings) > 0 {
		rep.Findings = append(rep.Findings, cluster.Findings...)
		model.SortFindings(rep.Findings)
	}
}
