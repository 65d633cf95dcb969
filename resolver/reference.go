// Package resolver finds container images that OpenShift's image lookup (the ImagePolicy
// admission plugin) should have rewritten to an ImageStream's image, and computes what it would
// have written. It is pure: it reads a snapshot and returns findings.
package resolver

import (
	"strings"

	"github.com/distribution/reference"
)

// Ref is an image reference split the way OpenShift splits it.
type Ref struct {
	Registry  string
	Namespace string
	Name      string
	Tag       string
	Digest    string
}

// Parse parses an image reference as written in a pod spec.
//
// github.com/distribution/reference validates the grammar and separates tag and digest, but its
// Parse takes any first path segment for a registry and ParseNormalizedNamed rewrites "myapp" to
// "docker.io/library/myapp" — both hide whether the name was local. So the registry is decided here
// by OpenShift's rule (library-go's image reference): the first of several segments is a registry
// when it contains '.' or ':' or is "localhost".
func Parse(s string) (Ref, error) {
	parsed, err := reference.Parse(s)
	if err != nil {
		return Ref{}, err
	}
	var r Ref
	name := s
	if named, ok := parsed.(reference.Named); ok {
		name = named.Name()
	}
	if tagged, ok := parsed.(reference.Tagged); ok {
		r.Tag = tagged.Tag()
	}
	if digested, ok := parsed.(reference.Digested); ok {
		r.Digest = digested.Digest().String()
	}
	segments := strings.Split(name, "/")
	if len(segments) > 1 && (strings.ContainsAny(segments[0], ".:") || segments[0] == "localhost") {
		r.Registry = segments[0]
		segments = segments[1:]
	}
	r.Name = segments[len(segments)-1]
	r.Namespace = strings.Join(segments[:len(segments)-1], "/")
	return r, nil
}

// Exact formats the reference back.
func (r Ref) Exact() string {
	var b strings.Builder
	if r.Registry != "" {
		b.WriteString(r.Registry + "/")
	}
	if r.Namespace != "" {
		b.WriteString(r.Namespace + "/")
	}
	b.WriteString(r.Name)
	if r.Tag != "" {
		b.WriteString(":" + r.Tag)
	}
	if r.Digest != "" {
		b.WriteString("@" + r.Digest)
	}
	return b.String()
}

// Local reports whether admission treats the reference as a name to look up in an ImageStream of
// the object's namespace. Digests are never rewritten; a registry-qualified name never is. A
// namespaced name (ns/name) counts only when resolve-names is forced by the annotation.
func (r Ref) Local(forced bool) bool {
	if r.Digest != "" || r.Registry != "" {
		return false
	}
	if r.Namespace == "" {
		return true
	}
	return forced && !strings.Contains(r.Namespace, "/")
}

// TagOrLatest is the ImageStream tag a local name refers to.
func (r Ref) TagOrLatest() string {
	if r.Tag == "" {
		return "latest"
	}
	return r.Tag
}
