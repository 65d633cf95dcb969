package stuck

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stsdiag/stsdiag/stuck/facts"
)

// TestTriggerFieldPaths ports the fieldPath cases of TestAnnotationsReactor (openshift/library-go
// pkg/image/trigger/annotations_test.go@LG), plus index selectors.
func TestTriggerFieldPaths(t *testing.T) {
	const src = "openshift/library-go pkg/image/trigger/annotations_test.go:"
	test := []corev1.Container{{Name: "test"}}
	cases := []struct {
		source     string
		containers []corev1.Container
		init       []corev1.Container
		fieldPath  string
		wantPath   string // JSON pointer of the container's image; "" = error
		wantReason string
	}{
		{src + "99", nil, nil, `spec.template.spec.containers[?(@.name=="test")].image`, "", facts.TriggerNoSuchContainer},
		{src + "111", test, nil, `spec.template.spec.containers[?(@.name=="test")]`, "", facts.TriggerInvalidFieldPath},
		{src + "122", test, nil, `spec.template.spec.containers[?(@.name=="test").image`, "", facts.TriggerInvalidFieldPath},
		{src + "133", test, nil, `spec.template.spec.containers[@.name=test].image`, "", facts.TriggerNoSuchContainer},
		{src + "155", test, nil, `spec.template.spec.containers[?(@.name=="test")].image`, "/spec/template/spec/containers/0/image", ""},
		{src + "173", nil, test, `spec.template.spec.initContainers[?(@.name=="test")].image`, "/spec/template/spec/initContainers/0/image", ""},
		{"index", []corev1.Container{{Name: "a"}, {Name: "b"}}, nil, `spec.template.spec.containers[1].image`, "/spec/template/spec/containers/1/image", ""},
		{"index out of range", test, nil, `spec.template.spec.containers[1].image`, "", facts.TriggerNoSuchContainer},
		{"init index", test, test, `spec.template.spec.initContainers[0].image`, "/spec/template/spec/initContainers/0/image", ""},
		{"name selector searches init containers first", test, test, `spec.template.spec.containers[?(@.name=="test")].image`, "/spec/template/spec/initContainers/0/image", ""},
		{"another field", test, nil, `spec.template.spec.containers[0].command`, "", facts.TriggerInvalidFieldPath},
		{"outside the pod spec", test, nil, `spec.containers[0].image`, "", facts.TriggerFieldPathNotInSpec},
		{"whitespace in the selector", test, nil, `spec.template.spec.containers[?(@.name == "test")].image`, "", facts.TriggerNoSuchContainer},
	}
	for _, c := range cases {
		spec := &corev1.PodSpec{Containers: c.containers, InitContainers: c.init}
		got, reason := containerForFieldPath(spec, c.fieldPath)
		switch {
		case reason != c.wantReason:
			t.Errorf("%s: %s: got %+v %q, want %q", c.source, c.fieldPath, got, reason, c.wantReason)
		case c.wantPath != "" && got.path() != c.wantPath:
			t.Errorf("%s: %s: got %v, want %s", c.source, c.fieldPath, got, c.wantPath)
		}
	}
}

// TestParseTriggers: what makes the controller ignore the whole annotation (annotations.go:18-48@LG).
func TestParseTriggers(t *testing.T) {
	cases := map[string]string{
		`[{"from":`: facts.TriggerInvalidJSON,
		`[{"from":{"kind":"ImageStreamTag","name":"a:1"},"fieldPath":"x","paused":"true"}]`: facts.TriggerPausedNotBoolean,
		`{"from":{}}`:                                   facts.TriggerInvalidType,
		`[{"fieldPath":"x"},{"fieldPath":"x"}]`:         facts.TriggerDuplicateFieldPath,
		`[{"fieldPath":"x"},{"fieldPath":"y"}]`:         "",
		`[{"fieldPath":"x","paused":true,"unknown":1}]`: "",
		`null`: "",
	}
	for value, want := range cases {
		_, reason, err := parseTriggers(value)
		if reason != want || (want == "") != (err == nil) {
			t.Errorf("%s: reason %q (%v), want %q", value, reason, err, want)
		}
	}
}
