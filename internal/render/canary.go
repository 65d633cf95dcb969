package render

import (
	"fmt"
	"io"
	"strings"
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
		if err := analysisLines(w, s.Analysis); err != nil {
			return err
		}
	}
	return WaitResult(w, &res.WaitResult, flags, elapsed, color)
}

// analysisLines are a step's analysis: its phase, then each metric's phase, tallies and values.
func analysisLines(w io.Writer, run *apiv1.AnalysisRun) error {
	if run == nil {
		return nil
	}
	if _, err := fmt.Fprintf(w, "  analysis %s: %s\n", run.Template, run.Phase); err != nil {
		return err
	}
	for _, m := range run.Metrics {
		values := make([]string, 0, len(m.Measurements))
		for _, x := range m.Measurements {
			v := x.Value
			if x.Phase == apiv1.AnalysisError {
				v = "error"
			}
			values = append(values, v)
		}
		if _, err := fmt.Fprintf(w, "    metric %s: %s (%d successful, %d failed, %d inconclusive, %d errors): %s\n",
			m.Name, m.Phase, m.Successful, m.Failed, m.Inconclusive, m.Error, strings.Join(values, " ")); err != nil {
			return err
		}
	}
	return nil
}
