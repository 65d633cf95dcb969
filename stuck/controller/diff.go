package controller

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// TemplateDiff lists what changed between two pod templates, one line per changed field, as
// "path: from → to" (a container is named by its name: containers[app].image). Fields the two
// templates share are left out; "(none)" stands for a field only one side has.
func TemplateDiff(from, to *corev1.PodTemplateSpec) []string {
	a, b := flatten(from), flatten(to)
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, orNone(a[k]), orNone(b[k])))
		}
	}
	sort.Strings(out)
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// flatten maps each leaf of the template's JSON to its value; list items with a name are keyed
// by it.
func flatten(t *corev1.PodTemplateSpec) map[string]string {
	out := map[string]string{}
	if t == nil {
		return out
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return out
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return out
	}
	walk("", v, out)
	delete(out, "metadata.creationTimestamp")
	return out
}

func walk(path string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			walk(join(path, k), e, out)
		}
	case []any:
		for i, e := range v {
			key := fmt.Sprint(i)
			if m, ok := e.(map[string]any); ok {
				if name, ok := m["name"].(string); ok {
					key = name
				}
			}
			walk(path+"["+key+"]", e, out)
		}
	default:
		b, _ := json.Marshal(v)
		out[strings.TrimPrefix(path, "spec.")] = strings.Trim(string(b), `"`)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
