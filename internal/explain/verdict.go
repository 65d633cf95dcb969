package explain

import (
	"fmt"
	"strings"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// Verdict words a verdict of wait, a fleet's wait or canary: the Message of its result. It is the
// only place verdicts are worded; testdata/golden/verdicts/ holds one file per reason. A reason
// of a type this package does not know is a programming error (it panics).
func Verdict(v model.Verdict) string {
	switch r := v.Reason.(type) {
	case model.Complete:
		return complete(r.Settle)
	case model.Held:
		return fmt.Sprintf("%d finding(s) held for %s: the rollout will not finish on its own", len(r.Findings), r.Hold)
	case model.TimedOut:
		after := ""
		if r.After > 0 {
			after = " after " + r.After.String()
		}
		if r.Reading != nil {
			return fmt.Sprintf("timed out%s before the API server answered: %s", after, promQLLine(r.Reading.Error()))
		}
		return fmt.Sprintf("timed out%s while the rollout was still progressing", after)
	case model.Interrupted:
		return "interrupted while the rollout was still progressing"
	case model.Failed:
		return r.Err.Error()
	case model.Deleted:
		return r.What + ": deleted while waiting"
	case model.NoMatch:
		return "no StatefulSet matches the selector"
	case model.Stopped:
		return r.Words
	case model.NotObserved:
		sets := make([]string, len(r.StatefulSets))
		for i, s := range r.StatefulSets {
			sets[i] = s.String()
		}
		return fmt.Sprintf("the StatefulSet controller never observed the patch to %s within %s; the pods waiting for it were not deleted", strings.Join(sets, ", "), r.Within)
	case model.RolledBack:
		rolled := "rolled back " + rolledBack(r.Rolled)
		if r.Then.Result == apiv1.WaitComplete {
			return rolled + ": the deploy failed; the earlier revision's rollout is complete"
		}
		return rolled + "; " + Verdict(r.Then)
	case model.Fleet:
		if len(r.Members) == 0 {
			return "every rollout complete"
		}
		parts := make([]string, len(r.Members))
		for i, m := range r.Members {
			parts[i] = fmt.Sprintf("%s: %s: %s", m.Context, m.Result, m.Message)
		}
		return strings.Join(parts, "; ")
	case model.ContextFailed:
		return fmt.Sprintf("context %s: %v", r.Context, r.Err)
	}
	return canaryVerdict(v)
}

// canaryVerdict words the verdicts of canary.
func canaryVerdict(v model.Verdict) string {
	switch r := v.Reason.(type) {
	case model.CanaryComplete:
		return "canary complete: every step passed; " + complete(r.Hold)
	case model.CanaryTimedOut:
		return fmt.Sprintf("timed out after %s in step %s", r.After, r.Step)
	case model.CanaryCut:
		return fmt.Sprintf("%s while canary ran: %v", r.As, r.Err)
	case model.CanaryStepEnded:
		return Verdict(r.Then)
	case model.CanaryStopped:
		if r.DuringRollback {
			return change(r.Change) + " during the rollback; nothing overwritten"
		}
		return change(r.Change) + ": the canary stops and leaves it as it is; nothing overwritten"
	case model.CanaryNotStarted:
		return fmt.Sprintf("step %s not started: %s; nothing overwritten (%v)", r.Step, change(r.Change), r.Err)
	case model.CanaryDeleted:
		return fmt.Sprintf("statefulset %s/%s: deleted while canary ran", r.Namespace, r.Name)
	case model.CanaryHalted:
		return fmt.Sprintf("%s; --no-rollback: stopped, the partition stays %d", failedStep(r.FailedStep), r.Partition)
	case model.CanaryUnrollable:
		return fmt.Sprintf("%s; %s; the partition stays %d", failedStep(r.FailedStep), Unrollable(r.Why), r.Partition)
	case model.CanaryRollbackFailed:
		return fmt.Sprintf("%s; the rollback was not made: %s", failedStep(r.FailedStep), r.Action.Message)
	case model.CanaryRolledBack:
		return fmt.Sprintf("%s; rolled back to revision %s (revision %s failed), %s Ready on it again%s",
			failedStep(r.FailedStep), r.Rolled.Revision, r.Rolled.FromRevision, strings.Join(r.Pods, ", "), restore(r.Restore))
	case model.CanaryRollbackUnfinished:
		why := HeldFindings(r.Findings)
		if r.Analysis != nil {
			why = Analysis(r.Analysis)
		}
		return fmt.Sprintf("rolled back to revision %s after step %s failed (%s), but: %s", r.Rolled.Revision, r.Step, why, Verdict(r.Then))
	case model.CanaryInconclusive:
		return fmt.Sprintf("step %s paused: %s; nothing rolled back, no step forward, the partition stays %d", r.Step, Analysis(r.Analysis), r.Partition)
	}
	panic(fmt.Sprintf("explain: no words for the verdict reason %T (%s)", v.Reason, v.Result))
}

func complete(settle time.Duration) string {
	if settle > 0 {
		return fmt.Sprintf("rollout complete and healthy for %s", settle)
	}
	return "rollout complete"
}

// rolledBack names each StatefulSet rolled back, the revision it returned to and the images.
func rolledBack(rolled []apiv1.RolledBack) string {
	what := make([]string, len(rolled))
	for i, r := range rolled {
		what[i] = fmt.Sprintf("%s/%s to revision %s (revision %s failed%s)", r.Namespace, r.StatefulSet, r.Revision, r.FromRevision, images(r.Images))
	}
	return strings.Join(what, ", ")
}

func images(changes []apiv1.ImageChange) string {
	if len(changes) == 0 {
		return ""
	}
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = fmt.Sprintf("%s %s → %s", c.Container, orNone(c.From), orNone(c.To))
	}
	return "; " + strings.Join(parts, ", ")
}

// RolledBackCase is a StatefulSet's rollback as a failed JUnit test case says it: the failure's
// message, and its text's first lines (the message, then each image change).
func RolledBackCase(r apiv1.RolledBack) (message, text string) {
	message = fmt.Sprintf("rolled back to revision %s: revision %s failed", r.Revision, r.FromRevision)
	text = message + "\n"
	for _, c := range r.Images {
		text += fmt.Sprintf("container %s: %s → %s\n", c.Container, c.From, c.To)
	}
	return message, text
}

// failedStep is what failed: the step and the findings that held, or its analysis.
func failedStep(s model.FailedStep) string {
	if s.Analysis != nil {
		return fmt.Sprintf("step %s failed: %s", s.Step, Analysis(s.Analysis))
	}
	return fmt.Sprintf("step %s failed: %s held for %s", s.Step, HeldFindings(s.Findings), s.Hold)
}

var phaseWords = map[apiv1.AnalysisPhase]string{apiv1.AnalysisFailed: "failed", apiv1.AnalysisError: "could not be measured",
	apiv1.AnalysisInconclusive: "was inconclusive", apiv1.AnalysisSuccessful: "succeeded", apiv1.AnalysisRunning: "was still running"}

// Analysis says what decided an analysis run: why its phase (Argo's run message, or the
// deciding metric's tallies), that metric's last value or error, its conditions and its query.
func Analysis(run *apiv1.AnalysisRun) string {
	if run == nil {
		return "no analysis"
	}
	what := fmt.Sprintf("analysis %s %s", run.Template, phaseWords[run.Phase])
	var decided *apiv1.AnalysisMetric
	for i := range run.Metrics {
		if run.Metrics[i].Phase == run.Phase {
			decided = &run.Metrics[i]
			break
		}
	}
	switch {
	case run.Message != "":
		what += ": " + run.Message
	case decided != nil:
		what += fmt.Sprintf(": metric %q: %d successful, %d failed, %d inconclusive, %d errors", decided.Name, decided.Successful, decided.Failed, decided.Inconclusive, decided.Error)
	}
	if decided == nil {
		return what
	}
	if n := len(decided.Measurements); n > 0 {
		last := decided.Measurements[n-1]
		switch {
		case last.Phase == apiv1.AnalysisError && last.Message != "":
			if !strings.Contains(run.Message, last.Message) {
				what += "; last error: " + last.Message
			}
		case last.Value != "":
			what += "; last value " + last.Value
		}
	}
	if decided.SuccessCondition != "" {
		what += "; successCondition " + decided.SuccessCondition
	}
	if decided.FailureCondition != "" {
		what += "; failureCondition " + decided.FailureCondition
	}
	return what + "; query: " + promQLLine(decided.Query)
}

// promQLLine is a PromQL query on one line: its comments (# to the end of a line, outside a
// string) dropped, so that what is left still reads as the query, and its white space
// collapsed.
func promQLLine(query string) string {
	var b strings.Builder
	for _, line := range strings.Split(query, "\n") {
		var quote rune
		escaped := false
		cut := len(line)
	scan:
		for i, r := range line {
			switch {
			case escaped:
				escaped = false
			case quote != 0 && r == '\\':
				escaped = true
			case quote != 0 && r == quote:
				quote = 0
			case quote == 0 && (r == '"' || r == '\'' || r == '`'):
				quote = r
			case quote == 0 && r == '#':
				cut = i
				break scan
			}
		}
		b.WriteString(line[:cut])
		b.WriteByte(' ')
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// HeldFindings names the blocking findings among findings: pod, code and reason ("a finding"
// when none blocks).
func HeldFindings(findings []stuck.Finding) string {
	var parts []string
	for _, f := range findings {
		if !f.Blocking() {
			continue
		}
		s := string(f.Code)
		if f.Pod != "" {
			s = f.Pod + " " + s
		}
		if f.Reason != "" {
			s += " (" + f.Reason + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "a finding"
	}
	return strings.Join(parts, ", ")
}

// change says what someone else changed in a StatefulSet canary relies on.
func change(c model.CanaryChange) string {
	switch c.Kind {
	case model.ChangeRecreated:
		return fmt.Sprintf("statefulset %s/%s was deleted and created again (UID %s, was %s)", c.Namespace, c.Name, c.UID, c.WasUID)
	case model.ChangePartition:
		return fmt.Sprintf("someone else changed the partition of statefulset %s/%s from %d to %d", c.Namespace, c.Name, c.WasPartition, c.Partition)
	case model.ChangeTemplate:
		return fmt.Sprintf("someone else changed the pod template of statefulset %s/%s (generation %d, was %d)", c.Namespace, c.Name, c.Generation, c.WasGeneration)
	case model.ChangeSpec:
		return fmt.Sprintf("someone else changed the spec of statefulset %s/%s (generation %d, was %d)", c.Namespace, c.Name, c.Generation, c.WasGeneration)
	case model.ChangeUnreadable:
		return fmt.Sprintf("statefulset %s/%s could not be read again: %v", c.Namespace, c.Name, c.Err)
	}
	return fmt.Sprintf("statefulset %s/%s changed meanwhile", c.Namespace, c.Name)
}

// Unrollable says why fix --rollback's plan has no rollback of a StatefulSet (canary's verdict,
// watch's CanaryStuck Event).
func Unrollable(u model.Unrollable) string {
	if u.Why != "" {
		return "not rolled back: " + u.Why
	}
	return fmt.Sprintf("fix --rollback has no safe rollback for statefulset %s/%s", u.Namespace, u.Name)
}

// restore says what became of the partition after a canary's rollback ("" when it was already
// the one before the canary).
func restore(r model.PartitionRestore) string {
	switch {
	case !r.Tried:
		return ""
	case r.Err == nil:
		return fmt.Sprintf("; partition restored to %d", r.To)
	}
	return fmt.Sprintf("; the partition stays %d (restoring %d failed: %v)", r.Stays, r.To, r.Err)
}

// Result is the WaitResult of a verdict, in its words: with Word, the one place a verdict gets its
// message.
func Result(v model.Verdict) *model.WaitResult {
	return Word(&model.WaitResult{Result: v.Result, Reason: v.Reason, RolledBack: v.RolledBack})
}

// Word writes the message of a result whose verdict was decided elsewhere (verdict.MergeFleet's).
func Word(res *model.WaitResult) *model.WaitResult {
	res.Message = Verdict(model.Verdict{Result: res.Result, Reason: res.Reason, RolledBack: res.RolledBack})
	return res
}
