package stuck_test

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// TestFacts: the rules establish typed facts (Diagnose words them; testdata/golden/findings
// locks the words).
func TestFacts(t *testing.T) {
	imagePull := facts.Startup{Kind: facts.ContainerWaiting, Reason: "ImagePullBackOff", Container: "app", Image: "app:typo", Waiting: `Back-off pulling image "app:typo"`}
	cases := []struct {
		scenario, version string
		code              apiv1.Code
		pod               string
		want              facts.Facts
	}{
		{scenario: "stale-revision-stuck-3-replicas", code: apiv1.StaleRevisionStuck, pod: "web-0",
			want: facts.StaleStuck{Startup: imagePull, Revision: "web-a", Target: "web-b",
				Why:     facts.NeverReplaced{Kind: facts.WaitsForReady, Policy: "OrderedReady", Strategy: "RollingUpdate"},
				Blocked: []facts.Blocked{{Pod: "web-1", Why: facts.NotCreated}, {Pod: "web-2", Why: facts.NotCreated}}}},
		{scenario: "parallel-stale-unavailable-v1.35.3", version: "v1.35.3", code: apiv1.StaleRevisionStuck, pod: "web-1",
			want: facts.StaleStuck{Startup: imagePull, Revision: "web-a", Target: "web-b",
				Why: facts.NeverReplaced{Kind: facts.BudgetSpent, Release: "v1.35.3", Unavailable: 1, MaxUnavailable: 1}}},
		{scenario: "not-ready-stale", code: apiv1.StaleRevisionStuck, pod: "web-0",
			want: facts.StaleStuck{Revision: "web-bad", Target: "web-good",
				Startup: facts.Startup{Kind: facts.ContainerNotReady, Reason: "NotReady", Container: "web", Image: "registry.k8s.io/nginx-slim:0.26",
					NotReadyFor: 10 * time.Minute, Probe: "Readiness probe failed: HTTP probe failed with statuscode: 503", ReadyMessage: "containers with unready status: [web]"},
				Why:     facts.NeverReplaced{Kind: facts.WaitsForReady, Policy: "OrderedReady", Strategy: "RollingUpdate"},
				Blocked: []facts.Blocked{{Pod: "web-1", Why: facts.NotCreated}}}},
		{scenario: "pod-stuck-terminating-lost-node", code: apiv1.PodStuckTerminating, pod: "web-1",
			want: facts.PodTerminating{Overdue: 10 * time.Minute, Node: "node-1",
				NodeState: facts.NodeState{Listed: true, Ready: "Unknown", Since: 11 * time.Minute, Reason: "NodeStatusUnknown", Lost: true},
				Blocked:   []facts.Blocked{{Pod: "web-2", Why: facts.NotCreated}}}},
		{scenario: "volume-claim-pending", code: apiv1.VolumeClaimPending, pod: "db-0",
			want: facts.ClaimStuck{Claim: facts.Claim{Name: "data-db-0", Why: facts.ClassMissing, Class: "fast-ssd"}}},
		{scenario: "orphaned-revision", code: apiv1.OrphanedRevision, pod: "web-0",
			want: facts.OrphanPod{Fate: facts.OwnerFate{State: facts.OwnerReplaced, CurrentUID: "new-uid"}, OwnerUID: "old-uid", HoldsOrdinal: true}},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			snap, err := stuck.LoadFile(filepath.Join("..", "testdata", "stuck", c.scenario, "objects.yaml"), snapshottest.Now)
			if err != nil {
				t.Fatal(err)
			}
			snap.ServerVersion = c.version
			for _, f := range stuck.Diagnose(snap, stuck.DefaultOptions()).Findings {
				if f.Code == c.code && f.Pod == c.pod {
					if !reflect.DeepEqual(f.Facts, c.want) {
						t.Errorf("facts\n%#v\nwant\n%#v", f.Facts, c.want)
					}
					if f.Message == "" || f.Short == "" {
						t.Errorf("not worded: message %q, short %q", f.Message, f.Short)
					}
					return
				}
			}
			t.Fatalf("no %s finding for %s", c.code, c.pod)
		})
	}
}

// TestLostNodeHandOff: a pod stuck terminating on a lost node is handed to fix for a force
// delete; one on a Ready node (held by a finalizer) is not.
func TestLostNodeHandOff(t *testing.T) {
	cases := map[string]string{"pod-stuck-terminating-lost-node": "node-1", "pod-stuck-terminating-finalizer": ""}
	for scenario, want := range cases {
		t.Run(scenario, func(t *testing.T) {
			snap, err := stuck.LoadFile(filepath.Join("..", "testdata", "stuck", scenario, "objects.yaml"), snapshottest.Now)
			if err != nil {
				t.Fatal(err)
			}
			findings := stuck.Diagnose(snap, stuck.DefaultOptions()).Findings
			if len(findings) != 1 || findings[0].Code != apiv1.PodStuckTerminating || findings[0].LostNode != want {
				t.Errorf("findings %+v, want one PodStuckTerminating with LostNode %q", findings, want)
			}
		})
	}
}
