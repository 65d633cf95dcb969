package v1

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// fill sets every field reachable from v to a non-zero value: each pointer allocated, each slice
// and map given one element, recursively (depth-bounded).
func fill(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type() == reflect.TypeFor[*metav1.Time]() {
			v.Set(reflect.ValueOf(&metav1.Time{}))
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[metav1.Time]() {
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fill(f, depth+1)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("a")
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Interface:
	}
}

// mutate changes every string, number and bool reachable from v in place, through pointers,
// slices and maps: anything a copy shares with its original changes in the original too.
func mutate(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			mutate(v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				mutate(f, depth+1)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			mutate(v.Index(i), depth+1)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			mutate(e, depth+1)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString(v.String() + "-changed")
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 7)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	}
}

// TestDeepCopyObjectIsDeep: every document's DeepCopyObject shares nothing with its original:
// changing every value reachable from the copy leaves the original's JSON as it was.
func TestDeepCopyObjectIsDeep(t *testing.T) {
	for _, obj := range []runtime.Object{&Report{}, &FixResult{}, &WaitResult{}, &CanaryResult{}, &Explanation{}, &Version{}, &MigrationResult{}, &Preflight{}} {
		fill(reflect.ValueOf(obj).Elem(), 0)
		before, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		c := obj.DeepCopyObject()
		mutate(reflect.ValueOf(c).Elem(), 0)
		after, _ := json.Marshal(obj)
		if string(before) != string(after) {
			t.Errorf("%T: changing the copy changed the original:\nbefore %s\nafter  %s", obj, before, after)
		}
		if copied, _ := json.Marshal(c); string(copied) == string(before) {
			t.Errorf("%T: the mutation changed nothing: the test cannot fail", obj)
		}
	}
}
