package stuck

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	imagev1 "github.com/openshift/api/image/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// objectFieldTrigger is one trigger (LG pkg/image/trigger/types.go:9-29@LG).
type objectFieldTrigger struct {
	From struct {
		Kind       string `json:"kind"`
		Name       string `json:"name"`
		Namespace  string `json:"namespace,omitempty"`
		APIVersion string `json:"apiVersion,omitempty"`
	} `json:"from"`
	FieldPath string `json:"fieldPath"`
	Paused    bool   `json:"paused,omitempty"`
}

// podSpecPath is where a StatefulSet's pod spec is (referencemutator/pods.go:92-93@LG): a
// trigger's fieldPath starts with it.
const podSpecPath = "spec.template.spec."

// parseTriggers is CalculateAnnotationTriggers (trigger/annotations.go:18-37@LG): invalid JSON
// or a duplicate fieldPath makes the controller ignore every trigger of the object.
func parseTriggers(value string) ([]objectFieldTrigger, string, error) {
	var triggers []objectFieldTrigger
	if err := json.Unmarshal([]byte(value), &triggers); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case !json.Valid([]byte(value)):
			return nil, facts.TriggerInvalidJSON, err
		case errors.As(err, &typeErr) && strings.HasSuffix(strings.ToLower(typeErr.Field), "paused"):
			return nil, facts.TriggerPausedNotBoolean, err
		}
		return nil, facts.TriggerInvalidType, err
	}
	for i := range triggers { // hasDuplicateTriggers, L39-48
		for j := i + 1; j < len(triggers); j++ {
			if triggers[i].FieldPath == triggers[j].FieldPath {
				return nil, facts.TriggerDuplicateFieldPath, duplicatePathError{path: triggers[i].FieldPath}
			}
		}
	}
	return triggers, "", nil
}

// duplicatePathError is hasDuplicateTriggers' refusal: two triggers with one fieldPath.
type duplicatePathError struct{ path string }

func (e duplicatePathError) Error() string { return "duplicate fieldPath " + e.path }

// targetContainer is the container a fieldPath names.
type targetContainer struct {
	init  bool
	index int
	c     *corev1.Container
}

func (t targetContainer) path() string {
	list := "containers"
	if t.init {
		list = "initContainers"
	}
	return fmt.Sprintf("/spec/template/spec/%s/%d/image", list, t.index)
}

// containerForFieldPath follows UpdateObjectFromImages (annotations.go:131-156@LG):
// "spec.template.spec." then containers[SEL] or initContainers[SEL], then exactly "image"; SEL is
// an index, or ?(@.name=="NAME") looked up in init containers first, then containers. It
// returns why the controller cannot follow the fieldPath, "" when it can.
func containerForFieldPath(spec *corev1.PodSpec, fieldPath string) (targetContainer, string) {
	if !strings.HasPrefix(fieldPath, podSpecPath) {
		return targetContainer{}, facts.TriggerFieldPathNotInSpec
	}
	init, selector, remainder, ok := parseContainerReference(strings.TrimPrefix(fieldPath, podSpecPath))
	if !ok || remainder != "image" {
		return targetContainer{}, facts.TriggerInvalidFieldPath
	}
	if i, err := strconv.Atoi(selector); err == nil { // findContainerBySelector, L72-81
		list := spec.Containers
		if init {
			list = spec.InitContainers
		}
		if i >= 0 && i < len(list) {
			return targetContainer{init: init, index: i, c: &list[i]}, ""
		}
	} else if name := strings.TrimSuffix(strings.TrimPrefix(selector, `?(@.name=="`), `")`); name != selector {
		for k, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range list {
				if list[i].Name == name {
					return targetContainer{init: k == 0, index: i, c: &list[i]}, ""
				}
			}
		}
	}
	return targetContainer{}, facts.TriggerNoSuchContainer
}

// parseContainerReference is annotations.go:50-70@LG.
func parseContainerReference(path string) (init bool, selector, remainder string, ok bool) {
	switch {
	case strings.HasPrefix(path, "containers["):
		remainder = strings.TrimPrefix(path, "containers[")
	case strings.HasPrefix(path, "initContainers["):
		init = true
		remainder = strings.TrimPrefix(path, "initContainers[")
	default:
		return false, "", "", false
	}
	end := strings.Index(remainder, "]")
	if end == -1 {
		return false, "", "", false
	}
	selector, remainder = remainder[:end], remainder[end+1:]
	if len(remainder) > 0 && remainder[0] == '.' {
		remainder = remainder[1:]
	}
	return init, selector, remainder, true
}

// splitImageStreamTag is imageutil.SplitImageStreamTag (imageutil/helpers.go:27-37@LG).
func splitImageStreamTag(nameAndTag string) (name, tag string, ok bool) {
	parts := strings.SplitN(nameAndTag, ":", 2)
	name = parts[0]
	if len(parts) > 1 {
		tag = parts[1]
	}
	if tag == "" {
		tag = "latest"
	}
	return name, tag, len(parts) == 2
}

// triggerValue is what the trigger controller writes for a tag (tagRetriever.ImageStreamTag,
// image_trigger_controller.go:75-98@OCM, then ResolveLatestTaggedImage, imageutil/helpers.go:442-494@LG):
// nothing without status.tags[tag].items[0]; with referencePolicy Local
// "<status.dockerImageRepository>@<image>"; otherwise items[0].dockerImageReference verbatim, a tag
// if that is what it is. When the stream has no status.dockerImageRepository the controller uses
// its own internal registry hostname, unknown here: then only suffix ("/<ns>/<name>@<image>") is
// known.
func triggerValue(stream *imagev1.ImageStream, namespace, tag string) (value, suffix string, ok bool) {
	event := resolver.LatestTaggedImage(stream, tag)
	if event == nil {
		return "", "", false
	}
	if stream.Status.DockerImageRepository == "" && event.Image != "" {
		if ref, found := resolver.SpecTag(stream, tag); found && ref.ReferencePolicy.Type == imagev1.LocalTagReferencePolicy {
			return "", "/" + resolver.Ref{Namespace: namespace, Name: stream.Name, ID: event.Image}.Exact(), true
		}
	}
	return resolver.PullSpecForTagEvent(stream, tag, event), "", true
}

// checkTriggers reports an image trigger annotation the controller cannot follow
// (ImageTriggerInvalid) and triggers whose tag's current image the template does not have
// (ImageTriggerStale). It returns, too, the template containers an active trigger with a value
// governs: they converge to the trigger's value, not admission's.
func (c *checker) checkTriggers() ([]Finding, map[string]bool) {
	triggered := map[string]bool{}
	value, ok := c.set.Annotations[resolver.TriggerAnnotation]
	if !ok {
		return nil, triggered
	}
	triggers, reason, err := parseTriggers(value)
	if err != nil {
		fx := facts.TriggerBroken{ParseError: err.Error()}
		var dup duplicatePathError
		if errors.As(err, &dup) {
			fx = facts.TriggerBroken{FieldPath: dup.path}
		}
		return []Finding{c.invalidTrigger(c.triggerFinding(), reason, fx)}, triggered
	}
	var out []Finding
	for i, t := range triggers {
		if t.Paused { // the controller skips paused triggers (annotations.go:128-130@LG)
			continue
		}
		f, governs := c.checkTrigger(i, t)
		if f != nil {
			out = append(out, *f)
		}
		if governs != "" {
			triggered[governs] = true
		}
	}
	return out, triggered
}

func (c *checker) triggerFinding() Finding {
	return Finding{Finding: apiv1.Finding{Namespace: c.set.Namespace, StatefulSet: c.set.Name}}
}

func (c *checker) invalidTrigger(f Finding, reason string, fx facts.TriggerBroken) Finding {
	f.Code, f.Severity = apiv1.ImageTriggerInvalid, apiv1.SeverityWarning
	f.Details.Reason = reason
	f.Facts = fx
	return f
}

// checkTrigger checks trigger i. It returns its finding, if any, and the container it governs
// when the controller has a valid value to write ("" otherwise).
func (c *checker) checkTrigger(i int, t objectFieldTrigger) (*Finding, string) {
	f := c.triggerFinding()
	f.Details.Trigger = ptr.To(i)
	f.Details.FieldPath = ptr.To(t.FieldPath)
	f.Details.From = ptr.To(t.From.Name)
	fx := facts.TriggerBroken{Index: ptr.To(i), FieldPath: t.FieldPath, FromKind: t.From.Kind, FromAPIVersion: t.From.APIVersion, FromName: t.From.Name}
	target, reason := containerForFieldPath(&c.set.Spec.Template.Spec, t.FieldPath)
	if reason == "" {
		f.Container, f.Image = target.c.Name, target.c.Image
	}
	// The controller indexes only ImageStreamTag triggers without apiVersion whose name has
	// a ':' (trigger/cache.go:32-39@OCM).
	name, tag, okTag := splitImageStreamTag(t.From.Name)
	switch {
	case t.From.Kind != "ImageStreamTag" || t.From.APIVersion != "":
		reason = facts.TriggerUnsupportedFrom
	case !okTag:
		reason = facts.TriggerInvalidTagName
	}
	if reason != "" {
		return ptr.To(c.invalidTrigger(f, reason, fx)), ""
	}
	ns := t.From.Namespace
	if ns == "" {
		ns = c.set.Namespace
	}
	fx.StreamNamespace, fx.Stream, fx.Tag = ns, name, tag
	stream := c.adm.Stream(ns, name)
	switch {
	case stream == nil && (ns == c.set.Namespace || c.hasStreams(ns)):
		return ptr.To(c.invalidTrigger(f, facts.TriggerStreamNotFound, fx)), ""
	case stream == nil:
		return nil, "" // ImageStreams of namespace ns were not read: nothing to judge
	}
	if _, inSpec := resolver.SpecTag(stream, tag); !inSpec && !statusHasTag(stream, tag) {
		return ptr.To(c.invalidTrigger(f, facts.TriggerTagNotFound, fx)), ""
	}
	want, suffix, ok := triggerValue(stream, ns, tag)
	if !ok {
		return nil, "" // no image yet: the controller waits
	}
	governs := ""
	if r, err := resolver.Parse(want); suffix != "" || (err == nil && r.Name != "") {
		governs = target.c.Name // the controller has a valid value to write
	}
	return c.stale(f, target, want, suffix, ns+"/"+name+":"+tag), governs
}

func statusHasTag(stream *imagev1.ImageStream, tag string) bool {
	for _, t := range stream.Status.Tags {
		if t.Tag == tag {
			return true
		}
	}
	return false
}

// stale reports a container whose image is not what the trigger controller writes. The
// controller writes only when the image differs (annotations.go:158-166@LG); the update then
// passes admission, which may rewrite it again when resolve-names is forced, so that result
// counts as current too.
func (c *checker) stale(f Finding, target targetContainer, want, suffix, from string) *Finding {
	image := target.c.Image
	forced := resolver.Forced(c.set.Annotations, c.set.Spec.Template.Annotations)
	switch {
	case suffix != "":
		if r, err := resolver.Parse(image); err == nil && r.Registry != "" && strings.HasSuffix(image, suffix) {
			return nil
		}
	case want == "" || want == image:
		return nil
	default:
		if res := c.adm.Resolve(want, c.set.Namespace, forced); res.LocalRewrite && res.Image == image {
			return nil
		}
	}
	var failing []string
	for _, pod := range c.pods {
		if got, ok := containerImage(&pod.Spec, target.c.Name); ok && got == image && waitingContainers(pod, startupReasons)[target.c.Name] {
			failing = append(failing, pod.Name)
		}
	}
	f.Code, f.Severity = apiv1.ImageTriggerStale, apiv1.SeverityWarning
	if len(failing) > 0 {
		f.Severity, f.Reason, f.FailingPods = apiv1.SeverityError, "ContainerNotStarting", failing
		f.Details.FailingPods = failing
	}
	f.ResolvedImage = want
	fx := facts.TriggerBehind{From: from, Want: want, Suffix: suffix}
	if r, err := resolver.Parse(want); err == nil && r.Name != "" {
		fx.Valid, fx.Digest = true, r.HasDigest()
	}
	f.Facts = fx
	if suffix == "" && fx.Valid {
		setPatch(&f, target.path(), image, want)
	}
	return &f
}
