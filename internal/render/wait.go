package render

import (
	"fmt"
	"io"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
)

// WaitResult prints wait's verdict in the format of the -o flags.
func WaitResult(w io.Writer, res *model.WaitResult, flags *PrintFlags, elapsed time.Duration, color bool) error {
	switch {
	case flags.OutputFormat == FormatJUnit:
		return WriteJUnit(w, res, elapsed)
	case !flags.Human():
		return flags.PrintDocument(res.Public(), w)
	}
	if (res.Result == apiv1.WaitNotFound || res.Result == apiv1.WaitUnevaluable) && len(res.Findings) == 0 {
		return nil // the error line says it; a fleet's other members' findings are still shown
	}
	if res.Result != apiv1.WaitComplete && len(res.Findings) > 0 {
		rep := model.NewReport(false, res.StatefulSets, res.Findings)
		fleet := len(rep.StatefulSets) > 0 && rep.StatefulSets[0].Context != ""
		if err := PrintTable(w, rep, TableOptions{Color: color, Wide: flags.OutputFormat == FormatWide, WithContext: fleet, WithNamespace: fleet}); err != nil {
			return err
		}
		for _, f := range res.Findings {
			if len(f.Details.Events) > 0 {
				fmt.Fprintf(w, "Last events of pod %s:\n", f.Pod)
				for _, e := range f.Details.Events {
					fmt.Fprintf(w, "  %s\n", e)
				}
			}
		}
	}
	_, err := fmt.Fprintf(w, "%s after %s: %s\n", res.Result, res.Elapsed, res.Message)
	return err
}
