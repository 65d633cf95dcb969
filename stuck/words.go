// The words of findings: each finding's Message, Short (the table's message), Remedy, and the
// details that are sentences (blocks, nodeCondition, skipped), written from its facts alone.
// Rules return facts only; Diagnose words them last.

package stuck

import (
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// cliFor is the command remedies name: opts.CLI when set, else oc on OpenShift and kubectl
// elsewhere.
func cliFor(opts Options, openshift bool) string {
	switch {
	case opts.CLI != "":
		return opts.CLI
	case openshift:
		return "oc"
	}
	return "kubectl"
}

// wordFindings words every finding in place.
func wordFindings(findings []Finding, cli string) {
	for i := range findings {
		findings[i].Word(cli)
	}
}

// Word fills the finding's Message, Short, Remedy and the details that are sentences from its
// Facts, as Diagnose does; cli is the command remedies name ("kubectl" or "oc"). A program that
// builds a finding from facts itself (stsdiag preflight does, for a pod the API server refuses
// in a dry run) gets check's words this way. A finding without facts, or with facts of a type
// this package does not word, keeps its words.
func (f *Finding) Word(cli string) {
	w := words{f: f, cli: cli}
	switch fx := f.Facts.(type) {
	case nil:
	case facts.StaleStuck:
		w.staleStuck(fx)
	case facts.Failing:
		w.failing(fx)
	case facts.PodUnschedulable:
		w.unschedulable(fx)
	case facts.ClaimStuck:
		w.claimPending(fx)
	case facts.OnDeleteOld:
		w.onDeleteStale(fx)
	case facts.SetTerminating:
		w.setTerminating(fx)
	case facts.PodTerminating:
		w.podTerminating(fx)
	case facts.OrphanPod:
		w.orphanPod(fx)
	case facts.OrphanRevisions:
		w.orphanRevisions(fx)
	case facts.ServiceProblem:
		w.service(fx)
	case facts.CreateFailed:
		w.createFailed(fx)
	case facts.WaitBlocked:
		w.waitBlocked(fx)
	case facts.NeverObserved:
		w.neverObserved(fx)
	case facts.CanaryNotStarted:
		w.canaryNotStarted(fx)
	case facts.CanaryPaused:
		w.canaryPaused(fx)
	case facts.LeaseStale:
		w.controllerManager(fx)
	case facts.WithoutSet:
		w.withoutSet(fx)
	case facts.LookupOff:
		w.lookupOff(fx)
	case facts.TagMissing:
		w.tagMissing(fx)
	case facts.NotRewritten:
		w.notRewritten(fx)
	case facts.NeverResolved:
		w.neverResolved(fx)
	case facts.TriggerBroken:
		w.triggerBroken(fx)
	case facts.TriggerBehind:
		w.triggerBehind(fx)
	}
}

// words writes one finding.
type words struct {
	f   *Finding
	cli string
}
