package stuck

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// The kube-controller-manager's leader Lease: the instance that holds it runs the StatefulSet
// controller, and renews it every RetryPeriod (2 s) while it leads (--leader-elect-lease-duration
// 15 s, --leader-elect-renew-deadline 10 s, --leader-elect-retry-period 2 s:
// k8s.io/component-base@v0.37.2 config/v1alpha1/defaults.go:38-44; lock kube-system/
// kube-controller-manager, cmd/kube-controller-manager/app/options/options.go).
const (
	ControllerManagerLeaseNamespace = "kube-system"
	ControllerManagerLeaseName      = "kube-controller-manager"
)

// leaseSkew is how far the reader's clock may be from the controller manager's before a lease
// past its duration counts as not renewed. Candidates compare a lease with the moment they last
// saw it change, never with renewTime (observedTime, client-go@v0.37.2
// tools/leaderelection/leaderelection.go:396 and :553); one read has only renewTime.
const leaseSkew = 30 * time.Second

// LeaseState says what the API gave for the controller manager's leader Lease.
type LeaseState string

const (
	// LeaseRenewed: renewed within its duration: the controller runs, statuses are current.
	LeaseRenewed LeaseState = "Renewed"
	// LeaseNotRenewed: not renewed for longer than its duration (plus leaseSkew): no instance
	// leads, no StatefulSet status is updated and no rollout progresses.
	LeaseNotRenewed LeaseState = "NotRenewed"
	// LeaseNotFound: no such Lease (leader election off, or another lock): statuses are
	// trusted as current.
	LeaseNotFound LeaseState = "NotFound"
	// LeaseUnreadable: the Lease could not be read (no permission): statuses are trusted as
	// current.
	LeaseUnreadable LeaseState = "Unreadable"
)

// ControllerManagerLease is the controller manager's leader Lease as read, or why it was not.
type ControllerManagerLease struct {
	// Lease is the object; nil when it does not exist (NotFound) or could not be read (Err).
	Lease    *coordinationv1.Lease
	NotFound bool
	// Err is why it could not be read, first line.
	Err string
}

// State judges the lease at now.
func (l ControllerManagerLease) State(now time.Time) LeaseState {
	switch {
	case l.NotFound:
		return LeaseNotFound
	case l.Lease == nil:
		return LeaseUnreadable
	}
	stale, _ := l.stale(now)
	if stale {
		return LeaseNotRenewed
	}
	return LeaseRenewed
}

func (l ControllerManagerLease) stale(now time.Time) (bool, facts.LeaseStale) {
	spec := l.Lease.Spec
	fx := facts.LeaseStale{}
	if spec.HolderIdentity != nil {
		fx.Holder = *spec.HolderIdentity
	}
	if spec.LeaseDurationSeconds != nil {
		fx.Duration = time.Duration(*spec.LeaseDurationSeconds) * time.Second
	}
	renewed := spec.RenewTime
	if renewed == nil {
		renewed = spec.AcquireTime
	}
	if renewed == nil {
		return false, fx // never renewed: nothing to judge by
	}
	fx.RenewTime = renewed.Time
	fx.For = now.Sub(renewed.Time).Truncate(time.Second)
	return now.After(renewed.Add(fx.Duration + leaseSkew)), fx
}

// controllerManagerFinding is the ControllerManagerNotRunning finding when the lease was read
// and has not been renewed: every StatefulSet status in the cluster is stale and no rollout
// progresses.
func controllerManagerFinding(l ControllerManagerLease, now time.Time) (Finding, bool) {
	if l.Lease == nil {
		return Finding{}, false
	}
	stale, fx := l.stale(now)
	if !stale {
		return Finding{}, false
	}
	f := Finding{Finding: apiv1.Finding{Code: apiv1.ControllerManagerNotRunning, Severity: apiv1.SeverityError,
		Namespace: l.Lease.Namespace, Reason: "LeaseNotRenewed",
		Details: apiv1.FindingDetails{Lease: l.Lease.Namespace + "/" + l.Lease.Name, Holder: fx.Holder,
			RenewTime: fx.RenewTime.UTC().Format(time.RFC3339), NotRenewedFor: fx.For.String()}}}
	f.Facts = fx
	return f, true
}
