package oracle

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The scorer reads stsdiag's documents as JSON, by the README's contract (apiVersion stsdiag/v1:
// Report of check, WaitResult of wait), with types of its own: a field renamed in the product
// breaks the oracle instead of silently following it.

// Finding is a finding as the JSON has it.
type Finding struct {
	Code        string         `json:"code"`
	Severity    string         `json:"severity"`
	Reason      string         `json:"reason"`
	Namespace   string         `json:"namespace"`
	StatefulSet string         `json:"statefulSet"`
	Pod         string         `json:"pod"`
	Details     map[string]any `json:"details"`
}

// detailReason is details.reason (PodCreateFailed's admission class), "" if none.
func (f Finding) detailReason() string {
	s, _ := f.Details["reason"].(string)
	return s
}

func (f Finding) String() string {
	s := f.Code
	if r := f.Reason; r != "" {
		s += "/" + r
	}
	if r := f.detailReason(); r != "" && r != f.Reason {
		s += "/" + r
	}
	if f.Pod != "" {
		s += "@" + f.Pod
	}
	return s
}

type document struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Result     string    `json:"result"`
	Findings   []Finding `json:"findings"`
}

// Run is what one command printed on stdout and its exit code (-1: it did not run or end).
type Run struct {
	Exit   int
	Stdout string
}

// Cause is one acceptable explanation of a fault: a finding whose code is one of Codes (any if
// empty) and whose reason or details.reason is one of Reasons (any if empty); Terminating: only
// about a pod that is terminating.
type Cause struct {
	Codes, Reasons []string
	Terminating    bool
}

func (c Cause) matches(f Finding, terminating []string) bool {
	if len(c.Codes) > 0 && !slices.Contains(c.Codes, f.Code) {
		return false
	}
	if len(c.Reasons) > 0 && !slices.Contains(c.Reasons, f.Reason) && !slices.Contains(c.Reasons, f.detailReason()) {
		return false
	}
	return !c.Terminating || slices.Contains(terminating, f.Pod)
}

var startup = []string{"StaleRevisionStuck", "CurrentRevisionFailing"}

// Causes are the expected cause families of each broken fault, from README.md and
// docs/findings.md: the codes and reasons that name it. A readiness gate named NotReady is
// explained but with the wrong cause.
var Causes = map[Fault][]Cause{
	MissingTag:          {{Codes: startup, Reasons: []string{"ErrImagePull", "ImagePullBackOff"}}},
	Crash:               {{Codes: startup, Reasons: []string{"CrashLoopBackOff"}}},
	Unready:             {{Codes: startup, Reasons: []string{"NotReady"}}},
	MissingConfigKey:    {{Codes: startup, Reasons: []string{"CreateContainerConfigError"}}},
	MissingSecretVolume: {{Codes: startup, Reasons: []string{"FailedMount"}}},
	InitFail:            {{Codes: startup, Reasons: []string{"CrashLoopBackOff"}}},
	InitHang:            {{Codes: []string{"RolloutBlocked"}}},
	// An Unschedulable pod or a Pending claim on an old revision is "stuck at startup" there
	// (docs/findings.md): StaleRevisionStuck with that reason names the cause too.
	CPUTooLarge:           {{Codes: []string{"PodUnschedulable"}}, {Codes: startup, Reasons: []string{"Unschedulable"}}},
	NodeSelector:          {{Codes: []string{"PodUnschedulable"}}, {Codes: startup, Reasons: []string{"Unschedulable"}}},
	Quota:                 {{Codes: []string{"PodCreateFailed"}, Reasons: []string{"QuotaExceeded"}}},
	MissingServiceAccount: {{Codes: []string{"PodCreateFailed"}, Reasons: []string{"ServiceAccountMissing"}}},
	PodSecurity:           {{Codes: []string{"PodCreateFailed"}, Reasons: []string{"PodSecurity"}}},
	UnknownStorageClass:   {{Codes: []string{"VolumeClaimPending"}}, {Codes: startup, Reasons: []string{"PersistentVolumeClaimPending"}}},
	Finalizer:             {{Codes: []string{"PodStuckTerminating"}}, {Codes: []string{"RolloutBlocked"}, Terminating: true}},
	ReadinessGate:         {{Reasons: []string{"ReadinessGate"}}},
}

// Truth is what the real system did, as TestOracle observed it.
type Truth struct {
	Outcome Outcome
	// Faults are the live faults: those of the revisions the update revision and the remaining
	// pods run, the namespace's quota and claim class, and a finalizer on a terminating pod.
	Faults []Fault
	// Terminating are the pods terminating at the end.
	Terminating []string
}

// Input is one history's truth and stsdiag's two answers about it.
type Input struct {
	Namespace, Name string
	Truth           Truth
	Check, Wait     Run
}

// Verdict is the score of one history. The pointers are nil where a mark does not apply (the
// cause of a complete history; the cause of a stuck one with no live broken fault).
type Verdict struct {
	Scored                                  bool
	Pass                                    bool
	CheckExplained, WaitExplained           *bool // truth stuck
	CheckCause, WaitCause                   *bool // truth stuck, with a live broken fault
	CheckUnflagged, WaitUnflagged           *bool // truth complete
	Reasons                                 []string
	CheckSummary, WaitSummary, TruthSummary string
	// Note says what was not judged and why.
	Note string
}

// Score judges stsdiag's answers against the truth:
//   - stuck: check exits 1 with an error finding about the StatefulSet (explained), one of
//     whose error findings belongs to a live fault's cause family (cause named); wait exits 1
//     with result Stuck and the same holds of its findings;
//   - complete: check exits 0 with no error finding about the StatefulSet; wait exits 0 with
//     result Complete;
//   - undecided: not scored.
func Score(in Input) Verdict {
	v := Verdict{TruthSummary: string(in.Truth.Outcome)}
	check, checkErr := decode(in.Check, "Report")
	wait, waitErr := decode(in.Wait, "WaitResult")
	checkErrors := errorsAbout(check.Findings, in.Namespace, in.Name)
	waitErrors := errorsAbout(wait.Findings, in.Namespace, in.Name)
	v.CheckSummary = summary(in.Check, checkErr, "", checkErrors)
	v.WaitSummary = summary(in.Wait, waitErr, wait.Result, waitErrors)
	fail := func(format string, args ...any) { v.Reasons = append(v.Reasons, fmt.Sprintf(format, args...)) }
	mark := func(ok bool) *bool { return &ok }
	var families []Cause
	var broken []string
	for _, f := range in.Truth.Faults {
		if c, ok := Causes[f]; ok {
			families = append(families, c...)
			broken = append(broken, string(f))
		}
	}
	switch in.Truth.Outcome {
	case Stuck:
		v.Scored = true
		v.CheckExplained = mark(checkErr == nil && in.Check.Exit == 1 && len(checkErrors) > 0)
		v.WaitExplained = mark(waitErr == nil && in.Wait.Exit == 1 && wait.Result == "Stuck" && len(waitErrors) > 0)
		if !*v.CheckExplained {
			fail("stuck but check did not explain it (exit %d, %d error findings about %s%s)", in.Check.Exit, len(checkErrors), in.Name, errSuffix(checkErr))
		}
		if !*v.WaitExplained {
			fail("stuck but wait did not say Stuck with a finding (exit %d, result %q, %d error findings%s)", in.Wait.Exit, wait.Result, len(waitErrors), errSuffix(waitErr))
		}
		if len(families) == 0 {
			v.Note = "cause not judged: no broken fault is live (" + faultList(in.Truth.Faults) + ")"
		} else {
			v.CheckCause = mark(named(checkErrors, families, in.Truth.Terminating))
			v.WaitCause = mark(named(waitErrors, families, in.Truth.Terminating))
			if !*v.CheckCause && *v.CheckExplained {
				fail("check names no cause of %s: %s", strings.Join(broken, ","), list(checkErrors))
			}
			if !*v.WaitCause && *v.WaitExplained {
				fail("wait names no cause of %s: %s", strings.Join(broken, ","), list(waitErrors))
			}
			if !*v.CheckExplained || !*v.WaitExplained {
				// A cause is only named by an answer that explains.
				*v.CheckCause = *v.CheckCause && *v.CheckExplained
				*v.WaitCause = *v.WaitCause && *v.WaitExplained
			}
		}
	case Complete:
		v.Scored = true
		v.CheckUnflagged = mark(checkErr == nil && in.Check.Exit == 0 && len(checkErrors) == 0)
		v.WaitUnflagged = mark(waitErr == nil && in.Wait.Exit == 0 && wait.Result == "Complete")
		if !*v.CheckUnflagged {
			fail("complete but check flagged it (exit %d: %s%s)", in.Check.Exit, list(checkErrors), errSuffix(checkErr))
		}
		if !*v.WaitUnflagged {
			fail("complete but wait did not say Complete (exit %d, result %q: %s%s)", in.Wait.Exit, wait.Result, list(waitErrors), errSuffix(waitErr))
		}
	}
	v.Pass = v.Scored && len(v.Reasons) == 0
	return v
}

func faultList(faults []Fault) string {
	s := make([]string, len(faults))
	for i, f := range faults {
		s[i] = string(f)
	}
	return strings.Join(s, ",")
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return "; " + err.Error()
}

func decode(r Run, kind string) (document, error) {
	var doc document
	if r.Exit < 0 {
		return doc, fmt.Errorf("it did not end")
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		return doc, fmt.Errorf("stdout is not JSON: %v", err)
	}
	if doc.APIVersion != "stsdiag/v1" || doc.Kind != kind {
		return doc, fmt.Errorf("stdout is %s/%s, not stsdiag/v1 %s", doc.APIVersion, doc.Kind, kind)
	}
	return doc, nil
}

// errorsAbout are the error findings about one StatefulSet.
func errorsAbout(findings []Finding, ns, name string) []Finding {
	var out []Finding
	for _, f := range findings {
		if f.Severity == "error" && f.Namespace == ns && f.StatefulSet == name {
			out = append(out, f)
		}
	}
	return out
}

func named(findings []Finding, families []Cause, terminating []string) bool {
	for _, f := range findings {
		for _, c := range families {
			if c.matches(f, terminating) {
				return true
			}
		}
	}
	return false
}

func list(findings []Finding) string {
	if len(findings) == 0 {
		return "no error finding"
	}
	s := make([]string, len(findings))
	for i, f := range findings {
		s[i] = f.String()
	}
	return strings.Join(s, ",")
}

// summary is one answer in a word: exit code, result (wait) and error findings.
func summary(r Run, err error, result string, findings []Finding) string {
	s := fmt.Sprintf("%d", r.Exit)
	if err != nil && r.Exit >= 0 {
		s += ":unparsable"
	}
	if result != "" {
		s += ":" + result
	}
	if len(findings) > 0 {
		s += "[" + list(findings) + "]"
	}
	return s
}

// Tally adds up verdicts into the score.
type Tally struct {
	StuckCheck, StuckWait, CauseCheck, CauseWait, CompleteCheck, CompleteWait counter
	Pass, Fail                                                                int
	Undecided                                                                 []string
}

type counter struct{ ok, of int }

func (c *counter) add(b *bool) {
	if b == nil {
		return
	}
	c.of++
	if *b {
		c.ok++
	}
}

func (c counter) String() string { return fmt.Sprintf("%d/%d", c.ok, c.of) }

// Add counts one history (id names it when undecided).
func (t *Tally) Add(id string, v Verdict) {
	if !v.Scored {
		t.Undecided = append(t.Undecided, id)
		return
	}
	if v.Pass {
		t.Pass++
	} else {
		t.Fail++
	}
	t.StuckCheck.add(v.CheckExplained)
	t.StuckWait.add(v.WaitExplained)
	t.CauseCheck.add(v.CheckCause)
	t.CauseWait.add(v.WaitCause)
	t.CompleteCheck.add(v.CheckUnflagged)
	t.CompleteWait.add(v.WaitUnflagged)
}

// String is the score line.
func (t Tally) String(elapsed time.Duration) string {
	sort.Strings(t.Undecided)
	und := "none"
	if len(t.Undecided) > 0 {
		und = strings.Join(t.Undecided, ",")
	}
	return fmt.Sprintf("score: %d PASS, %d FAIL; stuck explained %s (check), %s (wait); cause named %s (check), %s (wait); "+
		"complete unflagged %s (check), %s (wait); undecided (not scored): %s; run time %s",
		t.Pass, t.Fail, t.StuckCheck, t.StuckWait, t.CauseCheck, t.CauseWait, t.CompleteCheck, t.CompleteWait, und,
		elapsed.Round(time.Second))
}

// Line is a history's report line.
func Line(h History, v Verdict, took time.Duration) string {
	status := "UNDECIDED"
	if v.Scored {
		status = "FAIL"
		if v.Pass {
			status = "PASS"
		}
	}
	line := fmt.Sprintf("%s %s truth=%s check=%s wait=%s %s (%s)", h.ID(), status, v.TruthSummary, v.CheckSummary, v.WaitSummary,
		strings.TrimPrefix(h.String(), h.ID()+" "), took.Round(time.Second))
	if v.Note != "" {
		line += " [" + v.Note + "]"
	}
	if len(v.Reasons) > 0 {
		line += "\n    " + strings.Join(v.Reasons, "\n    ")
	}
	return line
}
