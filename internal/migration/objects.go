package migration

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// Clean is the StatefulSet as an object to create: its name, namespace, labels, annotations,
// non-controller owner references, finalizers (but the garbage collector's) and spec; no UID,
// resourceVersion, generation, timestamps, managed fields or status.
func Clean(set *appsv1.StatefulSet) *appsv1.StatefulSet {
	c := &appsv1.StatefulSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: set.Name, Namespace: set.Namespace,
			Labels: maps.Clone(set.Labels), Annotations: maps.Clone(set.Annotations)},
		Spec: *set.Spec.DeepCopy(),
	}
	for _, ref := range set.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			c.OwnerReferences = append(c.OwnerReferences, *ref.DeepCopy())
		}
	}
	for _, f := range set.Finalizers {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			c.Finalizers = append(c.Finalizers, f)
		}
	}
	return c
}

// finalObject is the StatefulSet asked for, ready to create: the running one's metadata (labels
// and annotations included: the file's are not applied), the spec asked for.
func finalObject(run, want *appsv1.StatefulSet) *appsv1.StatefulSet {
	f := Clean(run)
	f.Spec = *want.Spec.DeepCopy()
	return f
}

// CreateObject is the StatefulSet migrate creates: final's metadata marked with the UID of the
// StatefulSet it replaces, the original's spec — its template above all, so the controller finds
// the existing revision and adopts the pods — with final's immutable fields, and updateStrategy
// OnDelete, under which the controller replaces no pod whatever revision it computes
// (stateful_set_control.go:727-730@v1.37.2) until the adoption is proven and the final spec
// applied.
func CreateObject(final, original *appsv1.StatefulSet, originalUID types.UID) *appsv1.StatefulSet {
	c := Clean(final)
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[apiv1.MigratedFromAnnotation] = string(originalUID)
	c.Spec = *original.Spec.DeepCopy()
	c.Spec.PodManagementPolicy = final.Spec.PodManagementPolicy
	c.Spec.ServiceName = final.Spec.ServiceName
	c.Spec.VolumeClaimTemplates = nil
	for i := range final.Spec.VolumeClaimTemplates {
		c.Spec.VolumeClaimTemplates = append(c.Spec.VolumeClaimTemplates, *final.Spec.VolumeClaimTemplates[i].DeepCopy())
	}
	c.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	return c
}

// Applied is the new StatefulSet once the final spec is applied to it: final's spec, the
// migration's annotation gone. The UID and resourceVersion stay: they are the update's
// preconditions.
func Applied(current, final *appsv1.StatefulSet) *appsv1.StatefulSet {
	a := current.DeepCopy()
	a.Spec = *final.Spec.DeepCopy()
	delete(a.Annotations, apiv1.MigratedFromAnnotation)
	return a
}

// NeedsApply reports whether the new StatefulSet still differs from the final spec or carries
// the migration's annotation.
func NeedsApply(current, final *appsv1.StatefulSet) bool {
	_, marked := current.Annotations[apiv1.MigratedFromAnnotation]
	return marked || !SpecEqual(current.Spec, final.Spec)
}

// SpecEqual compares specs as the API server stores them (JSON), so a nil and an empty value
// the server does not tell apart are equal.
func SpecEqual(a, b appsv1.StatefulSetSpec) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// jsonOf is v as JSON, for values printed whole.
func jsonOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// firstDifference is the first path (in key order) where a and b differ, as JSON, and their
// values there: "path=value" for each side ("path absent" where one side has nothing).
func firstDifference(a, b any) (string, string) {
	var x, y any
	ax, _ := json.Marshal(a)
	by, _ := json.Marshal(b)
	_ = json.Unmarshal(ax, &x)
	_ = json.Unmarshal(by, &y)
	path, from, to, ok := diff("", x, y)
	if !ok {
		return "", ""
	}
	return describe(path, from), describe(path, to)
}

func describe(path string, v any) string {
	if v == nil {
		return path + " absent"
	}
	return path + "=" + jsonOf(v)
}

// diff walks two JSON values and returns the first path where they differ. A list of objects
// with a "name" is indexed by name (containers, volumes, env), else by position.
func diff(path string, a, b any) (string, any, any, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path, a, b, true
		}
		keys := slices.Collect(maps.Keys(x))
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, f, t, ok := diff(join(path, k), x[k], y[k]); ok {
				return p, f, t, true
			}
		}
		return "", nil, nil, false
	case []any:
		y, ok := b.([]any)
		if !ok {
			return path, a, b, true
		}
		for i := 0; i < max(len(x), len(y)); i++ {
			var u, v any
			if i < len(x) {
				u = x[i]
			}
			if i < len(y) {
				v = y[i]
			}
			if p, f, t, ok := diff(fmt.Sprintf("%s[%s]", path, index(u, v, i)), u, v); ok {
				return p, f, t, true
			}
		}
		return "", nil, nil, false
	}
	if jsonOf(a) != jsonOf(b) {
		return path, a, b, true
	}
	return "", nil, nil, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// index names a list element by its "name" when it has one.
func index(u, v any, i int) string {
	for _, e := range []any{u, v} {
		if m, ok := e.(map[string]any); ok {
			if name, ok := m["name"].(string); ok && name != "" {
				return name
			}
		}
	}
	return fmt.Sprint(i)
}
