package render

import (
	"fmt"
	"io"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
)

// CanaryResult prints canary's verdict in the format of the -o flags: the CanaryResult document,
// JUnit (wait's, one test case per StatefulSet), or wait's human form preceded by the steps.
func CanaryResult(w io.Writer, res *model.CanaryResult, flags *PrintFlags, elapsed time.Duration, color bool) error {
	switch {
	case flags.OutputFormat == FormatJUnit:
		return WriteJUnit(w, &res.WaitResult, elapsed)
	case !flags.Human():
		return flags.PrintDocument(res.Public(), w)
	}
	if res.Result == apiv1.WaitNotFound || res.Result == apiv1.WaitUnevaluable {
		return nil // the error line says it
	}
	for _, s := range res.Steps {
		if _, err := fmt.Fprintf(w, "step %-5s %d pods, partition %d: %s\n", s.Step, s.Pods, s.Partition, s.Result); err != nil {
			return err
		}
	}
	return WaitResult(w, &res.WaitResult, flags, elapsed, color)
}
