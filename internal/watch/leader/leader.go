// Package leader runs work only while this process holds a Lease: client-go's leader election with
// the timings kube-controller-manager uses, campaigning again after a lost term, and giving the
// Lease back at once when the work fails. It knows nothing of what the work is.
package leader

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Lease timings: client-go's defaults for controllers (kube-controller-manager uses the same).
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// Lease names the Lease and this process's identity in it (watch's --leader-elect-namespace,
// --leader-elect-name and hostname_pid).
type Lease struct {
	Namespace, Name string
	Identity        string
}

// Elector campaigns for one Lease. Create it with New, serve its Healthy on /healthz and call Run.
type Elector struct {
	lease   Lease
	client  coordinationv1.CoordinationV1Interface
	log     io.Writer
	healthz *leaderelection.HealthzAdaptor
}

// New returns an elector for the Lease, written through client; log receives one line per change
// of leadership.
func New(lease Lease, client coordinationv1.CoordinationV1Interface, log io.Writer) *Elector {
	if log == nil {
		log = io.Discard
	}
	return &Elector{lease: lease, client: client, log: log, healthz: leaderelection.NewLeaderHealthzAdaptor(renewDeadline)}
}

// Healthy is the watchdog of /healthz: an error once this process leads but has not renewed
// the Lease within the renew deadline and a grace period (client-go's HealthzAdaptor).
func (e *Elector) Healthy(r *http.Request) error { return e.healthz.Check(r) }

// Run campaigns for the Lease until ctx ends, calls lead each time this process starts leading
// (with a context that ends with the term) and campaigns again after a term. stopped is called
// each time a campaign ends, led or not. If lead fails while its term lasts, the Lease is given
// back and Run returns the error (the Deployment restarts the process).
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error, stopped func()) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: e.lease.Name, Namespace: e.lease.Namespace},
		Client:     e.client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.lease.Identity},
	}
	var (
		mu     sync.Mutex
		runErr error
	)
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return runErr
	}
	for ctx.Err() == nil && failed() == nil {
		campaign, cancel := context.WithCancel(ctx)
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			ReleaseOnCancel: true, Name: e.lease.Name, WatchDog: e.healthz,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(leading context.Context) {
					fmt.Fprintf(e.log, "%s leads (Lease %s/%s)\n", e.lease.Identity, e.lease.Namespace, e.lease.Name)
					if err := lead(leading); err != nil && leading.Err() == nil {
						mu.Lock()
						runErr = err
						mu.Unlock()
						cancel() // ReleaseOnCancel: the Lease is given back
					}
				},
				OnStoppedLeading: func() {
					stopped()
					fmt.Fprintf(e.log, "%s stopped leading\n", e.lease.Identity)
				},
			},
		})
		if err != nil {
			cancel()
			return err
		}
		elector.Run(campaign)
		cancel()
	}
	return failed()
}
