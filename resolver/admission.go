package resolver

import (
	"strings"

	imagev1 "github.com/openshift/api/image/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResolveNamesAnnotation forces lookup of every non-digest reference (oc set image-lookup sts/x).
const ResolveNamesAnnotation = "alpha.image.policy.openshift.io/resolve-names"

// Forced is ResolveAllNames (imagereferencemutators/meta.go:18-34@ALG): the annotation is exactly
// "*" on the pod template or on the object.
func Forced(objectAnnotations, templateAnnotations map[string]string) bool {
	return templateAnnotations[ResolveNamesAnnotation] == "*" || objectAnnotations[ResolveNamesAnnotation] == "*"
}

// Outcome says how admission treated one image reference.
type Outcome string

// Outcomes of Admission.Resolve.
const (
	// Unparsable: reference.Parse fails; the Attempt policy swallows the error (accept.go:54-59@ALG).
	Unparsable Outcome = "Unparsable"
	// ByDigest: a digest is looked up as an Image, never as a tag (imagepolicy.go:322-336@ALG).
	ByDigest Outcome = "ByDigest"
	// NotLocal: a registry or namespace, resolve-names not forced, not the integrated registry
	// (imagepolicy.go:347-349@ALG).
	NotLocal Outcome = "NotLocal"
	// RegistryOnly: a single segment with '.' or a "localhost" prefix parses as a registry with no
	// name; even forced, the ImageStreamTag ":tag" is a bad request (rest.go:87-93@OAS).
	RegistryOnly Outcome = "RegistryOnly"
	// InvalidName: forced on a name with '/', which no ImageStreamTag name can hold.
	InvalidName Outcome = "InvalidName"
	// NoStream: the ImageStreamTag lookup is NotFound for imagestreams, so no fallback
	// (rest.go:134-137@OAS, isImageStreamTagNotFound imagepolicy.go:430-443@ALG).
	NoStream Outcome = "NoStream"
	// LookupDisabled: a local name, not forced, and the stream's lookupPolicy.local is off
	// (imagepolicy.go:375,387-391@ALG).
	LookupDisabled Outcome = "LookupDisabled"
	// TagNotFound: status.tags[tag] has no items, or items[0].image is empty (rest.go:440-444@OAS);
	// Image is "<status.dockerImageRepository>:<tag>" when the stream qualifies (imagepolicy.go:374-383@ALG).
	TagNotFound Outcome = "TagNotFound"
	// BadPullSpec: the tag's pull spec does not parse (imagepolicy.go:394-397@ALG).
	BadPullSpec Outcome = "BadPullSpec"
	// Resolved: the tag has an image; Image is its pull spec with the digest (imagepolicy.go:394-399@ALG).
	Resolved Outcome = "Resolved"
)

// Result is what admission's resolver returns for one reference.
type Result struct {
	Outcome Outcome
	Ref     Ref
	// Image is the pull spec admission writes if it rewrites the reference ("" for none).
	Image string
	// LocalRewrite marks a local-name resolution, the only kind the default policy writes
	// (imagepolicy.go:380,392@ALG).
	LocalRewrite bool
	// Namespace and Tag of the ImageStreamTag looked up, and the stream if it exists.
	Namespace, Tag string
	Stream         *imagev1.ImageStream
	// Event is status.tags[Tag].items[0] when it exists.
	Event *imagev1.TagEvent
}

// Rule is one ImagePolicy resolution rule.
type Rule struct {
	Resource   schema.GroupResource // Resource "*" matches every resource of the group
	LocalNames bool
	// Rewrite is a RequiredRewrite or AttemptRewrite policy: every resolved reference is written.
	Rewrite bool
}

// DefaultRules are the plugin's defaults, what OpenShift 4 runs: local names only, for these
// resources (apis/imagepolicy/v1/defaults.go:24-52@ALG, no execution rules so DoNotAttempt).
func DefaultRules() []Rule {
	var out []Rule
	for _, gr := range []string{"pods", "replicationcontrollers", "apps.openshift.io/deploymentconfigs", "apps/daemonsets",
		"apps/deployments", "apps/statefulsets", "apps/replicasets", "build.openshift.io/builds", "batch/jobs", "batch/cronjobs",
		"extensions/daemonsets", "extensions/deployments", "extensions/replicasets"} {
		out = append(out, Rule{Resource: schema.ParseGroupResource(flip(gr)), LocalNames: true})
	}
	return out
}

// flip turns "group/resource" into "resource.group" for schema.ParseGroupResource.
func flip(gr string) string {
	for i := range gr {
		if gr[i] == '/' {
			return gr[i+1:] + "." + gr[:i]
		}
	}
	return gr
}

// Admission is the ImagePolicy plugin's image resolution (openshift/apiserver-library-go
// pkg/admission/imagepolicy), over ImageStreams held in memory. Image objects are assumed to
// exist for every tag event's image.
type Admission struct {
	// IntegratedRegistry is the internal registry hostname; "" when unknown (then only local names
	// resolve, which is all the default rules write anyway).
	IntegratedRegistry string
	// Rules are the resolution rules; nil means DefaultRules.
	Rules []Rule
	// Stream returns ImageStream namespace/name, or nil.
	Stream func(namespace, name string) *imagev1.ImageStream
}

// Resolve is resolveImageReference then resolveImageStreamTag (imagepolicy.go:320-407@ALG) for
// one image of an object in namespace; forced is resolve-names "*".
func (a *Admission) Resolve(image, namespace string, forced bool) Result {
	ref, err := Parse(image)
	if err != nil {
		return Result{Outcome: Unparsable}
	}
	res := Result{Ref: ref}
	if ref.ID != "" {
		res.Outcome, res.Image = ByDigest, ref.Exact() // written only under a rewrite policy
		return res
	}
	full := a.IntegratedRegistry != "" && ref.Registry == a.IntegratedRegistry // rules.go:29-36@ALG
	partial := forced || (ref.Registry == "" && ref.Namespace == "" && ref.Name != "")
	switch {
	case ref.Name == "":
		res.Outcome = RegistryOnly
		return res
	case !full && !partial:
		res.Outcome = NotLocal
		return res
	}
	res.Tag = ref.TagOrLatest()
	res.Namespace = ref.Namespace
	if res.Namespace == "" || forced { // L355-357: forced ignores the namespace written
		res.Namespace = namespace
	}
	if strings.Contains(ref.Name, "/") { // client-go refuses such a resource name
		res.Outcome = InvalidName
		return res
	}
	return a.lookup(res, ref.Name, partial, forced)
}

// ResolveTag is what admission writes for the local name name:tag in namespace, as if it were
// written that way (for names OpenShift cannot parse as one, like python3.9:v1).
func (a *Admission) ResolveTag(namespace, name, tag string, forced bool) Result {
	return a.lookup(Result{Ref: Ref{Name: name, Tag: tag}, Namespace: namespace, Tag: tag}, name, true, forced)
}

// lookup is resolveImageStreamTag (imagepolicy.go:364-407@ALG) with the REST semantics of
// ImageStreamTag Get (imagestreamtag/rest.go:128-145,440-447@OAS).
func (a *Admission) lookup(res Result, name string, partial, forced bool) Result {
	if a.Stream != nil {
		res.Stream = a.Stream(res.Namespace, name)
	}
	if res.Stream == nil {
		res.Outcome = NoStream
		return res
	}
	stream := res.Stream
	if partial && !forced && !stream.Spec.LookupPolicy.Local {
		// Found: L387-391; not found: the fallback needs forced or lookup (L375). Unchanged either way.
		res.Outcome = LookupDisabled
		return res
	}
	res.Event = LatestTaggedImage(stream, res.Tag)
	if res.Event == nil || res.Event.Image == "" {
		res.Outcome = TagNotFound
		repo := stream.Status.DockerImageRepository
		if (forced || stream.Spec.LookupPolicy.Local) && repo != "" {
			if r, err := Parse(repo); err == nil {
				r.Tag = res.Tag // L376-380: a tag, not a digest, and a local rewrite
				res.Image, res.LocalRewrite = r.Exact(), true
			}
		}
		return res
	}
	r, err := Parse(PullSpecForTagEvent(stream, res.Tag, res.Event))
	if err != nil {
		res.Outcome = BadPullSpec
		return res
	}
	r.Tag, r.ID = "", res.Event.Image
	res.Outcome, res.Image, res.LocalRewrite = Resolved, r.Exact(), partial
	return res
}

// Request is one container image of an object the plugin admits.
type Request struct {
	Namespace string
	Resource  schema.GroupResource
	Update    bool
	// ControllerOwned: metadata.ownerReferences has a controller.
	ControllerOwned bool
	Image           string
	Forced          bool
	// OldImage is the image of the old object's container of the same name (init containers
	// searched first), HasOld whether it has one; OldForced is resolve-names on the old object.
	OldImage  string
	HasOld    bool
	OldForced bool
}

// Admit returns the image the plugin leaves in the container: the rewritten pull spec, or
// req.Image unchanged.
func (a *Admission) Admit(req Request) string {
	rules := a.Rules
	if rules == nil {
		rules = DefaultRules()
	}
	covering := coveringRules(rules, req.Resource)
	switch {
	case len(covering) == 0: // imagepolicy.go:194-196@ALG
		return req.Image
	case req.ControllerOwned: // imagepolicy.go:198-205@ALG
		return req.Image
	case req.Update && req.Forced == req.OldForced && req.HasOld && req.OldImage == req.Image:
		return req.Image // unchanged images are not re-resolved (imagereferencemutators/pods.go:221-273@ALG)
	case req.Update && (req.Resource == schema.GroupResource{Group: "batch", Resource: "jobs"} ||
		req.Resource == schema.GroupResource{Group: "build.openshift.io", Resource: "builds"}):
		return req.Image // imagepolicy.go:478-494@ALG
	}
	res := a.Resolve(req.Image, req.Namespace, req.Forced)
	if res.Image == "" || !(res.Outcome == ByDigest || res.Outcome == TagNotFound || res.Outcome == Resolved) {
		return req.Image
	}
	for _, rule := range covering { // RewriteImagePullSpec, imagepolicy.go:495-510@ALG
		if (rule.LocalNames && res.LocalRewrite) || rule.Rewrite {
			return res.Image
		}
	}
	return req.Image
}

func coveringRules(rules []Rule, gr schema.GroupResource) []Rule {
	var out []Rule
	for _, r := range rules { // resolutionRuleCoversResource, imagepolicy.go:515-517@ALG
		if r.Resource.Group == gr.Group && (r.Resource.Resource == gr.Resource || r.Resource.Resource == "*") {
			out = append(out, r)
		}
	}
	return out
}

// LatestTaggedImage is status.tags[tag].items[0], or nil (LG pkg/image/imageutil/helpers.go:248-263@LG).
func LatestTaggedImage(stream *imagev1.ImageStream, tag string) *imagev1.TagEvent {
	for i := range stream.Status.Tags {
		if t := &stream.Status.Tags[i]; t.Tag == tag {
			if len(t.Items) == 0 {
				return nil
			}
			return &t.Items[0]
		}
	}
	return nil
}

// SpecTag is the stream's spec.tags[tag] (imageutil/helpers.go:226-233@LG).
func SpecTag(stream *imagev1.ImageStream, tag string) (imagev1.TagReference, bool) {
	for _, t := range stream.Spec.Tags {
		if t.Name == tag {
			return t, true
		}
	}
	return imagev1.TagReference{}, false
}

// PullSpecForTagEvent is ResolveReferenceForTagEvent (openshift-apiserver's
// pkg/image/apiserver/internal/imageutil/helpers.go:327-360@OAS, the same rule as LG
// imageutil/helpers.go:449-494@LG): referencePolicy Local gives
// "<status.dockerImageRepository>@<image>" when both are set and the repository parses; anything
// else the event's dockerImageReference verbatim.
func PullSpecForTagEvent(stream *imagev1.ImageStream, tag string, event *imagev1.TagEvent) string {
	ref, ok := SpecTag(stream, tag)
	if !ok || ref.ReferencePolicy.Type != imagev1.LocalTagReferencePolicy {
		return event.DockerImageReference
	}
	local := stream.Status.DockerImageRepository
	if local == "" || event.Image == "" {
		return event.DockerImageReference
	}
	r, err := Parse(local)
	if err != nil {
		return event.DockerImageReference
	}
	r.Tag, r.ID = "", event.Image
	return r.Exact()
}
