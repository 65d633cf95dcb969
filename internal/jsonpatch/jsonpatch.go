// Package jsonpatch builds the RFC 6902 JSON patches every guarded write of the command line
// sends: test operations that make the API server refuse the patch (422) when the object changed
// since it was read, then the change. (The public stuck.ImagePatch builds the image patch a
// remedy shows and fix sends.)
package jsonpatch

import (
	"encoding/json"
	"strings"
)

// Op is one operation.
type Op struct {
	Op    string
	Path  string
	Value any
}

// MarshalJSON writes the operation's members: a remove has no value, the others always have one
// (a test of 0 or "" is a test).
func (o Op) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}{o.Op, o.Path, o.Value})
}

// Test, Replace, Add and Remove are the operations of a guarded write.
func Test(path string, value any) Op    { return Op{Op: "test", Path: path, Value: value} }
func Replace(path string, value any) Op { return Op{Op: "replace", Path: path, Value: value} }
func Add(path string, value any) Op     { return Op{Op: "add", Path: path, Value: value} }
func Remove(path string) Op             { return Op{Op: "remove", Path: path} }

// Patch is a JSON patch.
type Patch []Op

// Marshal is the patch's body.
func (p Patch) Marshal() ([]byte, error) { return json.Marshal(p) }

// Annotation is the path of an annotation, its key escaped (RFC 6901: "~" as "~0", "/" as "~1").
func Annotation(key string) string {
	return "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
