package model_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestSummaries: the status is decided from every analyzer's findings at once.
func TestSummaries(t *testing.T) {
	set := func(name string, terminating, complete bool) stuck.Rollout {
		return stuck.Rollout{Summary: apiv1.StatefulSetSummary{Namespace: "shop", Name: name}, Terminating: terminating, Complete: complete}
	}
	finding := func(name string, sev apiv1.Severity) stuck.Finding {
		return stuck.Finding{Finding: apiv1.Finding{Namespace: "shop", StatefulSet: name, Severity: sev}}
	}
	sets := []stuck.Rollout{set("done", false, true), set("going", false, false), set("erring", false, true), set("warned", false, true), set("gone", true, false)}
	findings := []stuck.Finding{finding("erring", apiv1.SeverityError), finding("warned", apiv1.SeverityWarning), finding("gone", apiv1.SeverityError)}
	want := []apiv1.RolloutStatus{apiv1.StatusComplete, apiv1.StatusProgressing, apiv1.StatusStuck, apiv1.StatusComplete, apiv1.StatusTerminating}
	got := model.Summaries(sets, findings)
	for i, s := range got {
		if s.Status != want[i] {
			t.Errorf("%s: %s, want %s", s.Name, s.Status, want[i])
		}
	}
	if len(got) != len(want) || model.Summaries(nil, findings) != nil {
		t.Errorf("got %d summaries, want %d (and none of no sets)", len(got), len(want))
	}
}

func TestJSONPatch(t *testing.T) {
	p := stuck.ImagePatch{Path: "/spec/template/spec/containers/0/image", From: `app:"1"`, To: "registry/app@sha256:1"}
	cases := map[string]string{
		"": `[{"op":"test","path":"/spec/template/spec/containers/0/image","value":"app:\"1\""},` +
			`{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"registry/app@sha256:1"}]`,
		"uid-1": `[{"op":"test","path":"/metadata/uid","value":"uid-1"},{"op":"test","path":"/spec/template/spec/containers/0/image","value":"app:\"1\""},` +
			`{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"registry/app@sha256:1"}]`,
	}
	for uid, want := range cases {
		t.Run("uid="+uid, func(t *testing.T) {
			got := p.JSONPatch(types.UID(uid))
			if got != want || !json.Valid([]byte(got)) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}
