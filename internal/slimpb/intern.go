package slimpb

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// interner makes the equal strings of the objects it is given share one copy: the generated
// Unmarshal allocates every string of every object apart, though most recur from object to
// object — a namespace, label keys, an owner's UID, images and image IDs, condition types, a
// template's environment. So do the equal owner references of objects and the equal (slim)
// containers of pods: the pods of a StatefulSet share one slice of its containers' names and
// images. It holds what it saw for as long as it is used (one LIST's page), so it dedupes within
// a page and never grows with the cluster. Strings are immutable, and cached objects are never
// written (client-go's rule for informers' objects; slices shared are capped, so that even an
// append copies), so sharing them changes nothing a reader sees.
type interner struct {
	seen       map[string]string
	containers map[string][]corev1.Container
	owners     map[string][]metav1.OwnerReference
}

func newInterner() *interner {
	return &interner{seen: map[string]string{}, containers: map[string][]corev1.Container{}, owners: map[string][]metav1.OwnerReference{}}
}

// item interns obj's strings (object), then shares its owner references and, for a pod, its
// containers with an earlier item's equal ones.
func (in *interner) item(obj any) {
	in.object(obj)
	if m, ok := obj.(metav1.Object); ok && len(m.GetOwnerReferences()) > 0 {
		m.SetOwnerReferences(shared(in.owners, m.GetOwnerReferences(), ownersKey))
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.Spec.Containers = shared(in.containers, pod.Spec.Containers, containersKey)
		pod.Spec.InitContainers = shared(in.containers, pod.Spec.InitContainers, containersKey)
	}
}

// shared returns an earlier slice equal to s when there is one (by its key, then compared
// whole), else s, capped, kept for the next.
func shared[T any](seen map[string][]T, s []T, key func([]T) string) []T {
	if len(s) == 0 {
		return s
	}
	k := key(s)
	if earlier, ok := seen[k]; ok && reflect.DeepEqual(earlier, s) {
		return earlier
	}
	s = slices.Clip(s)
	seen[k] = s
	return s
}

func containersKey(cs []corev1.Container) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Name)
		b.WriteByte(0)
		b.WriteString(c.Image)
		b.WriteByte(0)
		if c.RestartPolicy != nil {
			b.WriteString(string(*c.RestartPolicy))
		}
		b.WriteByte(1)
	}
	return b.String()
}

func ownersKey(refs []metav1.OwnerReference) string {
	var b strings.Builder
	for _, r := range refs {
		b.WriteString(string(r.UID))
		b.WriteByte(0)
		b.WriteString(r.Kind)
		b.WriteByte(0)
		b.WriteString(r.Name)
		b.WriteByte(1)
	}
	return b.String()
}

func (in *interner) str(s string) string {
	if s == "" {
		return s
	}
	if c, ok := in.seen[s]; ok {
		return c
	}
	in.seen[s] = s
	return s
}

// object interns every exported string of obj (a pointer), in place: in fields, slices, pointers
// and maps of strings to strings (rebuilt with their keys and values interned).
func (in *interner) object(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		in.value(v.Elem())
	}
}

func (in *interner) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(in.str(v.String()))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			in.value(v.Elem())
		}
	case reflect.Struct:
		for _, i := range stringFields(v.Type()) {
			in.value(v.Field(i))
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			in.value(v.Index(i))
		}
	case reflect.Map:
		// Maps of strings to strings (labels, annotations, selectors): rebuilt with their keys
		// and values interned. Others (resource lists, keyed by a short name) are left alone.
		t := v.Type()
		if v.IsNil() || !v.CanSet() || v.Len() == 0 || !stringMap(t) {
			return
		}
		m := reflect.MakeMapWithSize(t, v.Len())
		k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
		iter := v.MapRange()
		for iter.Next() {
			k.SetString(in.str(iter.Key().String()))
			e.SetString(in.str(iter.Value().String()))
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	}
}

func stringMap(t reflect.Type) bool {
	return t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String
}

// stringFields are the indexes of the exported fields of struct type t that may hold a string
// the interner sets.
var stringFieldsOf sync.Map // reflect.Type → []int

func stringFields(t reflect.Type) []int {
	if f, ok := stringFieldsOf.Load(t); ok {
		return f.([]int)
	}
	var out []int
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() && holdsStrings(f.Type, map[reflect.Type]bool{t: true}) {
			out = append(out, i)
		}
	}
	stringFieldsOf.Store(t, out)
	return out
}

// holdsStrings reports whether a value of type t may hold a string the interner sets (through
// exported fields, elements, pointers and maps with string keys); visiting guards recursion.
func holdsStrings(t reflect.Type, visiting map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.String:
		return true
	case reflect.Pointer, reflect.Slice:
		return holdsStrings(t.Elem(), visiting)
	case reflect.Map:
		return stringMap(t)
	case reflect.Struct:
		if visiting[t] {
			return true
		}
		visiting[t] = true
		defer delete(visiting, t)
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() && holdsStrings(f.Type, visiting) {
				return true
			}
		}
	}
	return false
}
