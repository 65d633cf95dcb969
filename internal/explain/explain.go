// Package explain turns the facts of findings into words: each finding's Message, Short (the
// table's message), Remedy, and the details that are sentences (blocks, nodeCondition,
// skipped). It is the only place findings are worded; analyzers return facts only.
package explain

import (
	"fmt"

	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck"
)

// Options say how remedies are written.
type Options struct {
	// CLI is the command remedies name: "kubectl" (the default) or "oc".
	CLI string
}

// ForCluster returns the options for a cluster: remedies name oc on OpenShift, else kubectl.
func ForCluster(openshift bool) Options {
	if openshift {
		return Options{CLI: "oc"}
	}
	return Options{CLI: "kubectl"}
}

func (o Options) cli() string {
	if o.CLI == "" {
		return "kubectl"
	}
	return o.CLI
}

// Findings explains every finding in place.
func Findings(findings []stuck.Finding, opts Options) {
	for i := range findings {
		Finding(&findings[i], opts)
	}
}

// Finding fills the finding's Message, Short, Remedy and worded details from its facts. A
// finding without facts keeps its words; facts of a type this package does not know are a
// programming error (it panics).
func Finding(f *stuck.Finding, opts Options) {
	w := words{f: f, cli: opts.cli()}
	switch facts := f.Facts.(type) {
	case nil:
	case stuck.StaleStuck:
		w.staleStuck(facts)
	case stuck.Failing:
		w.failing(facts)
	case stuck.PodUnschedulable:
		w.unschedulable(facts)
	case stuck.ClaimStuck:
		w.claimPending(facts)
	case stuck.OnDeleteOld:
		w.onDeleteStale(facts)
	case stuck.SetTerminating:
		w.setTerminating(facts)
	case stuck.PodTerminating:
		w.podTerminating(facts)
	case stuck.OrphanPod:
		w.orphanPod(facts)
	case stuck.OrphanRevisions:
		w.orphanRevisions(facts)
	case stuck.ServiceProblem:
		w.service(facts)
	case stuck.CreateFailed:
		w.createFailed(facts)
	case stuck.WaitBlocked:
		w.waitBlocked(facts)
	case stuck.NeverObserved:
		w.neverObserved(facts)
	case stuck.CanaryNotStarted:
		w.canaryNotStarted(facts)
	case stuck.CanaryPaused:
		w.canaryPaused(facts)
	case stuck.WithoutSet:
		w.withoutSet(facts)
	case stuck.LeaseStale:
		w.controllerManager(facts)
	default:
		w.image(facts)
	}
}

// image words the facts of resolver's findings.
func (w words) image(facts stuck.Facts) {
	switch facts := facts.(type) {
	case resolver.LookupOff:
		w.lookupOff(facts)
	case resolver.TagMissing:
		w.tagMissing(facts)
	case resolver.NotRewritten:
		w.notRewritten(facts)
	case resolver.NeverResolved:
		w.neverResolved(facts)
	case resolver.TriggerBroken:
		w.triggerBroken(facts)
	case resolver.TriggerBehind:
		w.triggerBehind(facts)
	default:
		panic(fmt.Sprintf("explain: no words for %T of %s", facts, w.f.Code))
	}
}

// words writes one finding.
type words struct {
	f   *stuck.Finding
	cli string
}
