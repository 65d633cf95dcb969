package watch_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// TestSettledSlimIsFull: watch -A caches a StatefulSet whose status is settled without most of
// its template (snapshot.SlimSettled). On every scenario of testdata — those whose controller
// manager is stopped, so that a status says settled while a pod fails, included — the report and
// the explanations are byte for byte those of the whole objects, and so is each set's settle
// verdict (rollout.Settled: the liveness window wait and watch's canary steps wait out).
func TestSettledSlimIsFull(t *testing.T) {
	files, err := filepath.Glob("../../testdata/*/*/objects.yaml")
	if err != nil || len(files) < 80 {
		t.Fatalf("%d scenarios: %v", len(files), err)
	}
	opts := stuck.DefaultOptions()
	slimmed, withFindings := 0, 0
	for _, file := range files {
		for _, stale := range []bool{false, true} {
			whole, err := stuck.LoadFile(file, snapshottest.Now)
			if err != nil {
				t.Fatal(err)
			}
			slim, err := stuck.LoadFile(file, snapshottest.Now)
			if err != nil {
				t.Fatal(err)
			}
			if stale {
				// Every status says settled whatever the pods do, as a stopped controller leaves
				// them: every rule then runs on slimmed templates.
				for _, s := range []*stuck.Objects{whole, slim} {
					for i := range s.StatefulSets {
						snapshottest.SayDone(&s.StatefulSets[i])
					}
				}
			}
			for i := range slim.StatefulSets {
				out, err := snapshot.SlimSettled(&slim.StatefulSets[i])
				if err != nil {
					t.Fatal(err)
				}
				if controller.StatusSettled(&whole.StatefulSets[i]) {
					slimmed++
				}
				slim.StatefulSets[i] = *out.(*appsv1.StatefulSet)
			}
			wantRep, wantExpl := diagnose.ReportWithExplanations(whole, opts)
			gotRep, gotExpl := diagnose.ReportWithExplanations(slim, opts)
			if got, want := marshal(t, gotRep, gotExpl), marshal(t, wantRep, wantExpl); got != want {
				t.Errorf("%s (statuses settled: %v): settled StatefulSets slimmed:\n%s\nwhole:\n%s", file, stale, got, want)
			}
			if len(wantRep.Findings) > 0 {
				withFindings++
			}
			for i := range whole.StatefulSets {
				var pods []*corev1.Pod
				for k := range whole.Pods {
					pods = append(pods, &whole.Pods[k])
				}
				for _, settle := range []time.Duration{0, time.Minute} {
					wantOK, wantU := rollout.Settled(&whole.StatefulSets[i], pods, snapshottest.Now, settle)
					gotOK, gotU := rollout.Settled(&slim.StatefulSets[i], pods, snapshottest.Now, settle)
					if gotOK != wantOK || gotU != wantU {
						t.Errorf("%s: %s: settled %v %+v slimmed, %v %+v whole", file, whole.StatefulSets[i].Name, gotOK, gotU, wantOK, wantU)
					}
				}
			}
		}
	}
	t.Logf("%d scenarios (%d with findings), %d settled StatefulSets slimmed", len(files), withFindings, slimmed)
	if slimmed < 150 || withFindings < 100 {
		t.Fatalf("%d StatefulSets slimmed, %d scenarios with findings: the comparison says little", slimmed, withFindings)
	}
}

func marshal(t *testing.T, v ...any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
