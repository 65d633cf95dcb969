package jsonpatch

import "testing"

func TestPatch(t *testing.T) {
	body, err := Patch{Test("/metadata/uid", "u1"), Test("/metadata/generation", int64(3)), Test("/spec/p", int32(0)), Replace("/spec/x", map[string]int32{"partition": 2}),
		Add(Annotation("stsdiag.io/canary-step"), "1/2"), Remove(Annotation("a~b"))}.Marshal()
	want := `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/generation","value":3},` +
		`{"op":"test","path":"/spec/p","value":0},` +
		`{"op":"replace","path":"/spec/x","value":{"partition":2}},{"op":"add","path":"/metadata/annotations/stsdiag.io~1canary-step","value":"1/2"},` +
		`{"op":"remove","path":"/metadata/annotations/a~0b"}]`
	if err != nil || string(body) != want {
		t.Errorf("%s %v, want %s", body, err, want)
	}
}
