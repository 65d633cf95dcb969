package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes one testcase per StatefulSet; failures carry the findings.
func WriteJUnit(w io.Writer, res *model.WaitResult, elapsed time.Duration) error {
	seconds := fmt.Sprintf("%.3f", elapsed.Seconds())
	suite := junitSuite{Name: "stsdiag wait", Time: seconds}
	byName := map[string][]stuck.Finding{}
	for _, f := range res.Findings {
		k := key(f.Context, f.Namespace, f.StatefulSet)
		byName[k] = append(byName[k], f)
	}
	sets := append([]apiv1.StatefulSetSummary(nil), res.StatefulSets...)
	sort.Slice(sets, func(i, j int) bool {
		return key(sets[i].Context, sets[i].Namespace, sets[i].Name) < key(sets[j].Context, sets[j].Namespace, sets[j].Name)
	})
	if len(sets) == 0 && (res.Result == apiv1.WaitNotFound || res.Result == apiv1.WaitUnevaluable) {
		suite.Cases = append(suite.Cases, junitCase{Name: "statefulsets", Classname: "stsdiag.wait", Time: seconds,
			Failure: &junitFailure{Message: res.Message, Type: string(res.Result), Text: res.Message}})
		suite.Failures++
	}
	for _, s := range sets {
		tc := junitCase{Name: key(s.Context, s.Namespace, s.Name), Classname: "stsdiag.wait", Time: seconds}
		var failing []stuck.Finding
		for _, f := range byName[tc.Name] {
			if f.Blocking() {
				failing = append(failing, f)
			}
		}
		switch {
		case res.Result == apiv1.WaitStuck && len(failing) > 0:
			tc.Failure = findingsFailure(failing, string(apiv1.WaitStuck))
		case rolledBack(res, s) != nil:
			msg, text := explain.RolledBackCase(*rolledBack(res, s))
			tc.Failure = &junitFailure{Message: msg, Type: string(apiv1.WaitRolledBack), Text: text + res.Message}
		case res.Result == apiv1.CanaryStopped || res.Result == apiv1.CanaryInconclusive || (res.Result == apiv1.WaitStuck && !anyBlocking(res.Findings)):
			// Stopped by someone else, paused by its analysis, or stuck with no finding of its
			// own (a canary step whose analysis failed, --no-rollback).
			tc.Failure = &junitFailure{Message: res.Message, Type: string(res.Result), Text: res.Message}
		case res.Result == apiv1.WaitTimedOut && s.Status != apiv1.StatusComplete:
			tc.Failure = &junitFailure{Message: res.Message, Type: string(apiv1.WaitTimedOut), Text: fmt.Sprintf("%d/%d ready, status %s", s.ReadyReplicas, s.Replicas, s.Status)}
		}
		if tc.Failure != nil {
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	return writeSuite(w, suite)
}

// findingsFailure is a testcase's failure for its blocking findings: their codes, and for each
// its line, its remedy and the last log lines of the run that exited, if gathered.
func findingsFailure(failing []stuck.Finding, typ string) *junitFailure {
	var text strings.Builder
	var codes []string
	for _, f := range failing {
		codes = append(codes, string(f.Code))
		fmt.Fprintf(&text, "%s %s %s: %s\nremedy: %s\n", f.Severity, f.Code, f.Pod, f.Message, f.Remedy)
		if len(f.Details.Logs) > 0 {
			fmt.Fprintf(&text, "last log lines of the run that exited:\n  %s\n", strings.Join(f.Details.Logs, "\n  "))
		}
	}
	return &junitFailure{Message: strings.Join(codes, ", "), Type: typ, Text: text.String()}
}

// writeSuite writes one suite as a JUnit XML document, its test count filled in.
func writeSuite(w io.Writer, suite junitSuite) error {
	suite.Tests = len(suite.Cases)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// key names a StatefulSet in a testcase: namespace/name, after its context in a fleet.
func key(context, namespace, name string) string {
	if context != "" {
		return context + "/" + namespace + "/" + name
	}
	return namespace + "/" + name
}

// rolledBack is the rollback wait --fix --rollback made of a StatefulSet, if any: a failed deploy.
func rolledBack(res *model.WaitResult, s apiv1.StatefulSetSummary) *apiv1.RolledBack {
	for i, r := range res.RolledBack {
		if r.Namespace == s.Namespace && r.StatefulSet == s.Name {
			return &res.RolledBack[i]
		}
	}
	return nil
}

func anyBlocking(findings []stuck.Finding) bool {
	for _, f := range findings {
		if f.Blocking() {
			return true
		}
	}
	return false
}
