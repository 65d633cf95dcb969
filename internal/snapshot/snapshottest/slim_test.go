package snapshottest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
)

const scenario = "testdata/readiness-probe"

// ruleReading returns a rule that reports each pod whose first container has the field read
// sets. The readiness probe is a field snapshot.Slim drops; the image one it keeps.
func ruleReading(read func(s *stuck.Objects, i int) bool) Diagnosis {
	return func(s *stuck.Objects, _ map[string]bool) ([]apiv1.Finding, []apiv1.StatefulSetSummary) {
		var out []apiv1.Finding
		for i := range s.Pods {
			if read(s, i) {
				out = append(out, apiv1.Finding{Code: "ProbeSeen", Namespace: s.Pods[i].Namespace, Pod: s.Pods[i].Name})
			}
		}
		return out, nil
	}
}

var (
	readsProbe = ruleReading(func(s *stuck.Objects, i int) bool { return s.Pods[i].Spec.Containers[0].ReadinessProbe != nil })
	readsImage = ruleReading(func(s *stuck.Objects, i int) bool { return s.Pods[i].Spec.Containers[0].Image != "" })
)

// TestRunDiagnosesWhatGatheringKeeps: a rule reading a field gathering drops finds it in the raw
// objects, yet fails the scenario runner, which diagnoses every object through snapshot.Slim and
// through slimpb's protobuf decoding (as Gather and Live do). The stuck and resolver suites run every testdata scenario through that
// runner, so such a rule cannot pass its scenario and then see a zero value in production: keep
// the field in snapshot.Slim instead. The same rule reading a kept field passes.
func TestRunDiagnosesWhatGatheringKeeps(t *testing.T) {
	raw, err := stuck.LoadFile(scenario+"/objects.yaml", Now)
	if err != nil {
		t.Fatal(err)
	}
	if findings, _ := readsProbe(raw, nil); len(findings) != 1 {
		t.Fatalf("the raw objects give %d findings, want 1", len(findings))
	}
	for name, read := range map[string]func(*stuck.Objects) error{"Slim": slim, "protobuf": slimDecode} {
		t.Run(name+": a dropped field fails", func(t *testing.T) {
			r := runCheck(readsProbe, read)
			if got := strings.Join(r.log, "\n"); got != "got 0 findings, want 1:\nnull" {
				t.Errorf("the runner reported %q, want the finding missing", got)
			}
		})
		t.Run(name+": a kept field passes", func(t *testing.T) {
			if r := runCheck(readsImage, read); len(r.log) != 0 {
				t.Errorf("the runner reported %q", r.log)
			}
		})
	}
}

// runCheck runs the scenario through Run's check, its objects read by read, recording its failures.
func runCheck(rule Diagnosis, read func(*stuck.Objects) error) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r, scenario, rule, read)
	}()
	<-done
	return r
}

// recorder is a testing.TB that records failures; Fatal ends its goroutine as testing's does.
// It implements only what check calls (the embedded TB is nil).
type recorder struct {
	testing.TB
	log []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }
