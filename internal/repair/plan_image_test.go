package repair_test

import (
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/stuck"
)

const (
	digest   = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	appImage = "image-registry.openshift-image-registry.svc:5000/shop/app@" + digest
)

// TestPlanImageFindings plans from what the resolver really produces for image triggers and tag
// events: a stale trigger is patched like an unresolved name (with the delete of its failing pod
// after the patch), one patch per image field, and never a patch for a tag without image.
func TestPlanImageFindings(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		scenario string
		want     []model.Action
	}{
		{"resolver/triggers-stale", []model.Action{
			{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "stalefail", Container: "app", From: "nginx:1.27-typo", To: appImage, UID: "stalefail-uid"}, Cause: apiv1.ImageTriggerStale, Path: "/spec/template/spec/containers/0/image"},
			{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "governed", Container: "app", From: "app:1", To: appImage, UID: "governed-uid"}, Cause: apiv1.ImageTriggerStale, Path: "/spec/template/spec/containers/0/image"},
			{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "init", Container: "init", From: "registry.k8s.io/app:0", To: appImage, UID: "init-uid"}, Cause: apiv1.ImageTriggerStale, Path: "/spec/template/spec/initContainers/0/image"},
			{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "source", Container: "app", From: "registry.k8s.io/app:1", To: "quay.io/upstream/src:1", UID: "source-uid"}, Cause: apiv1.ImageTriggerStale, Path: "/spec/template/spec/containers/0/image"},
			{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "stale", Container: "app", From: "registry.k8s.io/app:1", To: appImage, UID: "stale-uid"}, Cause: apiv1.ImageTriggerStale, Path: "/spec/template/spec/containers/0/image"},
			{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "stalefail", Pod: "stalefail-0"}, Cause: apiv1.ImageTriggerStale, AfterPatch: true},
		}},
		{"resolver/tag-events", []model.Action{
			{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "legacy", Container: "app", From: "bare:3", To: "quay.io/upstream/bare:legacyid", UID: "legacy-uid"}, Cause: apiv1.UnresolvedImageReference, Path: "/spec/template/spec/containers/0/image"},
			{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "localnorepo", Container: "app", From: "bare:2", To: "quay.io/upstream/bare@" + digest, UID: "localnorepo-uid"}, Cause: apiv1.UnresolvedImageReference, Path: "/spec/template/spec/containers/0/image"},
		}},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", c.scenario, "objects.yaml"), now)
			if err != nil {
				t.Fatal(err)
			}
			actions, _ := planOf(plan.Policy{}, diagnose.Report(snap, stuck.DefaultOptions()), snap)
			if len(actions) != len(c.want) {
				t.Fatalf("planned %+v, want %+v", actions, c.want)
			}
			for i := range c.want {
				if actions[i] != c.want[i] {
					t.Errorf("action %d:\n got %+v\nwant %+v", i, actions[i], c.want[i])
				}
			}
		})
	}
}

// TestPlanPatchGuards: fix never sends an empty, malformed or no-op image, nor two patches of one
// field, and an ImageTriggerStale error it cannot patch stays unrepaired.
func TestPlanPatchGuards(t *testing.T) {
	snap := &stuck.Objects{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		set := snapshotSet("shop", name)
		snap.StatefulSets = append(snap.StatefulSets, set)
	}
	const path = "/spec/template/spec/containers/0/image"
	finding := func(code apiv1.Code, set, to string) stuck.Finding {
		return stuck.Finding{Finding: apiv1.Finding{Code: code, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: set, Container: "app", Image: "app:1"}, Patch: &stuck.ImagePatch{Path: path, From: "app:1", To: to}}
	}
	noPatch := finding(apiv1.ImageTriggerStale, "g", "")
	noPatch.Patch = nil
	onPod := finding(apiv1.UnresolvedImageReference, "h", appImage)
	onPod.Pod = "h-0"
	rep := &model.Report{Findings: []stuck.Finding{
		finding(apiv1.UnresolvedImageReference, "a", ""),                                                           // empty
		finding(apiv1.UnresolvedImageReference, "b", "image-registry.openshift-image-registry.svc:5000/shop/app@"), // empty digest
		finding(apiv1.ImageTriggerStale, "c", "Not A Reference"),                                                   // malformed
		finding(apiv1.ImageTriggerStale, "d", "app:1"),                                                             // no change
		finding(apiv1.ImageTriggerStale, "e", "quay.io/upstream/app:1"),                                            // a tag, as the trigger writes it
		finding(apiv1.ImageTriggerStale, "f", appImage),
		finding(apiv1.UnresolvedImageReference, "f", "quay.io/other/app@"+digest), // the same field again
		noPatch,
		onPod,
	}}
	actions, unrepaired := planOf(plan.Policy{}, rep, snap)
	if len(actions) != 2 || actions[0].StatefulSet != "e" || actions[0].To != "quay.io/upstream/app:1" || actions[1].StatefulSet != "f" || actions[1].To != appImage {
		t.Fatalf("planned %+v, want the patches of e and f only", actions)
	}
	var left []string
	for _, f := range unrepaired {
		left = append(left, string(f.Code)+"/"+f.StatefulSet)
	}
	want := []string{"UnresolvedImageReference/a", "UnresolvedImageReference/b", "ImageTriggerStale/c", "ImageTriggerStale/d", "ImageTriggerStale/g"}
	if len(left) != len(want) {
		t.Fatalf("unrepaired %v, want %v", left, want)
	}
	for i := range want {
		if left[i] != want[i] {
			t.Errorf("unrepaired %v, want %v", left, want)
		}
	}
}

func snapshotSet(ns, name string) appsv1.StatefulSet {
	return appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid")}}
}
