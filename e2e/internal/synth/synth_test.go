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

// TestRealisticMix: the realistic mix has the proportions issue 36 asks for — 20% of pods owned
// by StatefulSets, most by ReplicaSets, Jobs and DaemonSets, 1% of StatefulSets unsettled — and
// gives exactly its known findings, as one snapshot.
func TestRealisticMix(t *testing.T) {
	for _, size := range []struct{ sets, replicas int }{{240, 5}, {400, 5}} {
		t.Run(fmt.Sprintf("%dx%d", size.sets, size.replicas), func(t *testing.T) {
			c := synth.Realistic(size.sets, size.replicas)
			owners := map[string]int{}
			for _, p := range c.Pods {
				owners[p.OwnerReferences[0].Kind]++
			}
			pods := 5 * size.sets * size.replicas
			nodes := pods / 100
			// The quota sets (every 400th from 200 on) miss their last pod.
			wantOwners := map[string]int{"StatefulSet": size.sets*size.replicas - (size.sets+199)/400,
				"ReplicaSet": pods - size.sets*size.replicas - pods/20 - 3*nodes, "Job": pods / 20, "DaemonSet": 3 * nodes}
			if fmt.Sprint(owners) != fmt.Sprint(wantOwners) {
				t.Errorf("pods by owner %v, want %v", owners, wantOwners)
			}
			if len(c.Nodes) != nodes || len(c.DaemonSets) != 3 || len(c.Namespaces) != size.sets/2+1 {
				t.Errorf("%d nodes, %d DaemonSets, %d namespaces", len(c.Nodes), len(c.DaemonSets), len(c.Namespaces))
			}
			unsettled := (size.sets + 99) / 100
			if len(c.Deep) != unsettled {
				t.Errorf("deep namespaces %v, want %d", c.Deep, unsettled)
			}
			snap := c.Snapshot()
			snap.Now = time.Now()
			got := map[string]int{}
			for _, f := range diagnose.Report(snap, stuck.DefaultOptions()).Findings {
				got[string(f.Code)]++
			}
			want := map[string]int{}
			for i := 0; i < size.sets; i += 100 {
				switch i / 100 % 4 {
				case 0:
					want["StaleRevisionStuck"]++
				case 1:
					want["PodUnschedulable"]++
				case 2:
					want["PodCreateFailed"]++
				case 3:
					want["UnresolvedImageReference"]++
					want["CurrentRevisionFailing"]++
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(c.Expected) != fmt.Sprint(want) {
				t.Fatalf("findings %v, Expected %v, want %v", got, c.Expected, want)
			}
		})
	}
}
