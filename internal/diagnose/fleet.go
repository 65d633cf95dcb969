package diagnose

import (
	"context"
	"fmt"
	"sort"
	"sync"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/stuck"
)

// Target is one cluster of a fleet: the kubeconfig context naming it, its clients and scope.
type Target struct {
	Context string
	Clients gather.Clients
	Scope   gather.Scope
}

// RunFleet gathers and diagnoses every target concurrently and merges the reports into one:
// each StatefulSet and finding carries its context. A target that cannot be evaluated
// (unreachable, forbidden, namespace missing) becomes a warning naming it, and its context is
// returned in failed; the others are reported all the same.
func RunFleet(ctx context.Context, targets []Target, opts stuck.Options) (rep *model.Report, failed []string) {
	type outcome struct {
		rep *model.Report
		err error
	}
	outcomes := make([]outcome, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _, err := Run(ctx, t.Clients, t.Scope, opts)
			outcomes[i] = outcome{r, err}
		}()
	}
	wg.Wait()
	var sets []apiv1.StatefulSetSummary
	var findings []model.Finding
	var warnings []string
	openshift := false
	for i, o := range outcomes {
		name := targets[i].Context
		if o.err != nil {
			failed = append(failed, name)
			warnings = append(warnings, fmt.Sprintf("context %s: %v", name, o.err))
			continue
		}
		openshift = openshift || o.rep.OpenShift
		for _, s := range o.rep.StatefulSets {
			s.Context = name
			sets = append(sets, s)
		}
		for _, f := range o.rep.Findings {
			f.Context = name
			findings = append(findings, f)
		}
		for _, w := range o.rep.Warnings {
			warnings = append(warnings, fmt.Sprintf("context %s: %s", name, w))
		}
	}
	sort.Strings(failed)
	rep = model.NewReport(openshift, sets, findings)
	rep.Warnings = warnings
	return rep, failed
}
