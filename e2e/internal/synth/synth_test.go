package synth_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stsdiag/stsdiag/e2e/internal/synth"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestSyntheticMix: the benchmark's cluster gives exactly its known findings.
func TestSyntheticMix(t *testing.T) {
	c := synth.Generate(200, 5, 20)
	snap := c.Snapshot()
	snap.Now = time.Now()
	got := map[string]int{}
	for _, f := range diagnose.Report(snap, stuck.DefaultOptions()).Findings {
		got[string(f.Code)]++
	}
	if fmt.Sprint(got) != fmt.Sprint(c.Expected) {
		t.Fatalf("findings %v, want %v", got, c.Expected)
	}
}

// BenchmarkDiagnose measures the pure diagnosis (stuck + resolver + report) over in-memory
// snapshots of the benchmark's sizes. Run with -cpu 1 for the one-core figure.
func BenchmarkDiagnose(b *testing.B) {
	for _, size := range []struct{ sets, replicas int }{{200, 5}, {2000, 5}} {
		c := synth.Generate(size.sets, size.replicas, size.sets/10)
		snap := c.Snapshot()
		snap.Now = time.Now()
		b.Run(fmt.Sprintf("%dx%d", size.sets, size.replicas), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				diagnose.Report(snap, stuck.DefaultOptions())
			}
			b.ReportMetric(float64(len(c.Pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
		})
	}
}
