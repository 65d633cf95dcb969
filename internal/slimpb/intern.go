package slimpb

import (
	"reflect"
	"sync"
)

// interner makes the equal strings of the objects it is given share one copy: the generated
// Unmarshal allocates every string of every object apart, though most recur from object to
// object — a namespace, label keys, an owner's UID, images and image IDs, condition types, a
// template's environment. It holds what it saw for as long as it is used (one LIST's page), so
// it dedupes within a page and never grows with the cluster; strings are immutable, so sharing
// them changes nothing a reader sees.
type interner struct{ seen map[string]string }

func newInterner() *interner { return &interner{seen: map[string]string{}} }

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
