package watch

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/watch/leader"
	"github.com/stsdiag/stsdiag/internal/watch/serve"
)

// HTTPOptions say where /metrics, /healthz and /readyz are served and how /metrics is
// guarded (package serve's).
type HTTPOptions = serve.Options

// Lease is the Lease a watch campaigns for with --leader-elect (package leader's).
type Lease = leader.Lease

// ServeOptions are what `stsdiag watch` runs: the controller, its HTTP endpoints and,
// optionally, leader election.
type ServeOptions struct {
	Clients gather.Clients
	Scope   gather.Scope
	Watch   Options
	// HTTP says where /metrics, /healthz and /readyz are served (package serve).
	HTTP HTTPOptions
	// Lease, if set, runs the controller only while this process holds it (--leader-elect).
	Lease *Lease
	// Log receives one line per state change.
	Log io.Writer
}

// Serve runs the controller until ctx ends, its endpoints served meanwhile. With a Lease it
// campaigns for it, runs a controller while leading and campaigns again after losing it; if the
// controller itself fails, the Lease is given back and the error returned (the Deployment
// restarts the process).
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	metrics := NewMetrics()
	var current atomic.Pointer[Controller]
	var elector *leader.Elector
	endpoints := serve.Endpoints{Metrics: metrics.Registry, Ready: func() bool {
		if c := current.Load(); c != nil {
			return c.Ready()
		}
		return o.Lease != nil // a standby that has not led yet is ready to take over
	}}
	if o.Lease != nil {
		elector = leader.New(*o.Lease, o.Clients.Kube.CoordinationV1(), o.Log)
		endpoints.Healthy = elector.Healthy
	}
	stop, err := serve.Start(ctx, o.HTTP, endpoints, o.Log)
	if err != nil {
		return err
	}
	defer stop()
	if elector == nil {
		ctrl := New(o.Clients, o.Scope, o.Watch, metrics)
		current.Store(ctrl)
		return ctrl.Run(ctx)
	}
	return elector.Run(ctx, func(leading context.Context) error {
		ctrl := New(o.Clients, o.Scope, o.Watch, metrics)
		current.Store(ctrl)
		err := ctrl.Run(leading)
		if err != nil && leading.Err() == nil {
			// The words of this line predate the package's name: kept, as every log line of watch.
			fmt.Fprintf(o.Log, "%s: the monitor failed, giving the Lease back: %v\n", o.Lease.Identity, err)
		}
		return err
	}, func() { current.Store(nil) })
}
