package model_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/stsdiag/stsdiag/stuck"
)

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
