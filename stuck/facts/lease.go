package facts

import (
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// LeaseStale are the facts of ControllerManagerNotRunning.
type LeaseStale struct {
	// Holder is spec.holderIdentity ("" once released).
	Holder    string
	RenewTime time.Time
	// Duration is spec.leaseDurationSeconds.
	Duration time.Duration
	// For is how long the lease has not been renewed.
	For time.Duration
}

// Code is the finding code the facts explain.
func (LeaseStale) Code() apiv1.Code { return apiv1.ControllerManagerNotRunning }
