// Package resolver predicts what OpenShift writes into a StatefulSet's images — the ImagePolicy
// admission plugin (local ImageStream names) and the image trigger controller
// (image.openshift.io/triggers) — and reports where the template does not say it. It is pure: it
// reads stuck.Objects (with their ImageStreams) and returns findings with typed facts (NotRewritten,
// TagMissing, LookupOff, TriggerBehind, …), each UnresolvedImageReference with the JSON patch that
// pins the digest. Resolve answers for one image; Admission models the plugin's rewrite. Every
// rule cites the upstream line it follows; the commits are listed in docs/findings.md ("What is
// predicted is exactly what OpenShift writes"). Package openshift reads the objects from a
// cluster and applies the patch.
package resolver

import (
	"errors"
	"regexp"
	"strings"
)

// The upstream commits this package's rules were read from, as its comments cite them (@LG ...):
//
//	LG  openshift/library-go                    93ac9206ae34e602d6acf346826e3e99c22b1787
//	ALG openshift/apiserver-library-go          a8019f39f6708878cbb42101693940ed4817ab82
//	OAS openshift/openshift-apiserver           56aa2d96edd725e44ddd7ff13f23e53e6c509828
//	OCM openshift/openshift-controller-manager  26d20feae8892f648f5b06ed3f5492fe6ffb4532

// Ref is an image reference split the way OpenShift splits it (library-go's
// DockerImageReference): no docker.io or library/ defaulting.
type Ref struct {
	Registry  string
	Namespace string
	// Name is everything after the namespace; it may contain '/' (bar/foo/baz: ns bar, name foo/baz).
	Name string
	Tag  string
	// ID is the digest, or a legacy image ID when set by a caller.
	ID string
}

// The grammar of LG pkg/image/internal/reference/regexp.go@LG, built the same way.
var (
	alphaNumeric      = `[a-z0-9]+`
	separator         = `(?:[._]|__|[-]*)`
	nameComponent     = alphaNumeric + `(?:(?:` + separator + alphaNumeric + `)+)?`
	hostnameComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	hostname          = hostnameComponent + `(?:(?:\.` + hostnameComponent + `)+)?` + `(?::[0-9]+)?`
	tagPattern        = `[\w][\w.-]{0,127}`
	digestPattern     = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
	namePattern       = `(?:` + hostname + `/)?` + nameComponent + `(?:(?:/` + nameComponent + `)+)?`

	referenceRegexp = regexp.MustCompile(`^(` + namePattern + `)(?::(` + tagPattern + `))?(?:@(` + digestPattern + `))?$`)
	// LG pkg/image/internal/digest/digest.go:48-51@LG
	digestAnchored = regexp.MustCompile(`^[a-zA-Z0-9-_+.]+:[a-fA-F0-9]+$`)
)

// nameTotalLengthMax bounds the whole name, registry included (internal/reference/reference.go:35,163@LG).
const nameTotalLengthMax = 255

// Parse errors, worded as upstream's.
var (
	ErrNameEmpty             = errors.New("repository name must have at least one component")
	ErrNameContainsUppercase = errors.New("repository name must be lowercase")
	ErrReferenceInvalid      = errors.New("invalid reference format")
	ErrNameTooLong           = errors.New("repository name must not be more than 255 characters")
	ErrDigestInvalidFormat   = errors.New("invalid checksum digest format")
	ErrDigestInvalidLength   = errors.New("invalid checksum digest length")
	ErrDigestUnsupported     = errors.New("unsupported digest algorithm")
)

// split matches s against the grammar: name, tag, digest (internal/reference/reference.go:151-185@LG).
func split(s string) (name, tag, digest string, err error) {
	m := referenceRegexp.FindStringSubmatch(s)
	if m == nil {
		switch {
		case s == "":
			return "", "", "", ErrNameEmpty
		case referenceRegexp.MatchString(strings.ToLower(s)):
			return "", "", "", ErrNameContainsUppercase
		}
		return "", "", "", ErrReferenceInvalid
	}
	if len(m[1]) > nameTotalLengthMax {
		return "", "", "", ErrNameTooLong
	}
	if m[3] != "" {
		if err := validateDigest(m[3]); err != nil {
			return "", "", "", err
		}
	}
	return m[1], m[2], m[3], nil
}

// validateDigest is digest.Validate (internal/digest/digest.go:85-112@LG): sha256, sha384 or
// sha512 with exactly as many hex digits as the hash has.
func validateDigest(s string) error {
	if !digestAnchored.MatchString(s) {
		return ErrDigestInvalidFormat
	}
	i := strings.Index(s, ":")
	if i+1 == len(s) {
		return ErrDigestInvalidFormat
	}
	size := map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}[s[:i]]
	switch {
	case size == 0:
		return ErrDigestUnsupported
	case len(s[i+1:]) != size:
		return ErrDigestInvalidLength
	}
	return nil
}

// isDigest reports whether id is a valid digest.
func isDigest(id string) bool { return validateDigest(id) == nil }

// Parse is library-go's reference.Parse (pkg/image/reference/reference.go:32-75@LG).
//
// Without '/', a name containing '.' or starting with "localhost" is a registry with no name
// (python3.9:v1, localhost-app): Registry is the whole input and Name is empty (L44, L52-53),
// and the tag is dropped (L60). Otherwise the first of several segments is a registry when it
// contains '.' or ':' or is "localhost" (L47-50); then the next segment is the namespace and the
// rest the name (L70-72). The 255-character limit counts the registry.
func Parse(s string) (Ref, error) {
	name, tag, digest, err := split(s)
	if err != nil {
		return Ref{}, err
	}
	var r Ref
	i := strings.IndexRune(name, '/')
	registryOnly := i == -1 && (strings.Contains(name, ".") || strings.HasPrefix(name, "localhost"))
	nameOnly := (i == -1 && !registryOnly) || (i > -1 && !strings.ContainsAny(name[:i], ":.") && name[:i] != "localhost")
	switch {
	case registryOnly:
		r.Registry = s // namedRef.String(): the input, tag and digest included
	case nameOnly:
		r.Name = name
	default:
		r.Registry, r.Name = name[:i], name[i+1:]
	}
	if !registryOnly {
		r.Tag = tag
	}
	r.ID = digest
	if i := strings.IndexRune(r.Name, '/'); i != -1 {
		r.Namespace, r.Name = r.Name[:i], r.Name[i+1:]
	}
	return r, nil
}

// RegistryOnlyName returns, for a reference Parse reads as a registry with no name (python3.9:v1),
// the name and tag a user meant ("python3.9", "v1"); ok is false for any other reference.
func RegistryOnlyName(s string) (name, tag string, ok bool) {
	r, err := Parse(s)
	if err != nil || r.Name != "" || r.Registry == "" {
		return "", "", false
	}
	name, tag, _, _ = split(s)
	return name, tag, true
}

// Exact formats the reference as admission writes it (reference.go:185-221@LG): "" without a
// name; the ID wins over the tag, written "@id" when it is a digest and ":id" otherwise.
func (r Ref) Exact() string {
	if r.Name == "" {
		return ""
	}
	s := r.Name
	switch {
	case r.ID != "" && isDigest(r.ID):
		s += "@" + r.ID
	case r.ID != "":
		s += ":" + r.ID
	case r.Tag != "":
		s += ":" + r.Tag
	}
	if r.Namespace != "" {
		s = r.Namespace + "/" + s
	}
	if r.Registry != "" {
		s = r.Registry + "/" + s
	}
	return s
}

// Local reports whether admission looks the reference up as an ImageStreamTag of the object's
// namespace: no digest, and either resolve-names is forced or there is no registry and no
// namespace (imagepolicy.go:322,343@ALG). A reference without a name (a registry only) or whose
// name has a '/' is attempted too, but that request fails before it reaches the server (an empty
// or '/'-containing ImageStreamTag name), so it never resolves: Local is false for them.
func (r Ref) Local(forced bool) bool {
	if r.ID != "" || r.Name == "" || strings.Contains(r.Name, "/") {
		return false
	}
	return forced || (r.Registry == "" && r.Namespace == "")
}

// TagOrLatest is the ImageStream tag a local name refers to (imagepolicy.go:351-354@ALG).
func (r Ref) TagOrLatest() string {
	if r.Tag == "" {
		return "latest"
	}
	return r.Tag
}

// HasDigest reports whether the reference names an image by a valid digest.
func (r Ref) HasDigest() bool { return isDigest(r.ID) }
