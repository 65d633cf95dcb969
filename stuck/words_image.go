package stuck

import (
	"fmt"
	"strings"
	"time"

	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// kind names a container or an init container.
func kind(init bool) string {
	if init {
		return "init container"
	}
	return "container"
}

func (w words) lookupOff(s facts.LookupOff) {
	f := w.f
	f.Message = fmt.Sprintf("%s %q uses %q; ImageStream %s exists in %s but its local lookup is off, so the name is pulled from docker.io as %q",
		kind(s.Init), f.Container, f.Image, s.Stream, f.Namespace, s.PulledAs)
	f.Short = fmt.Sprintf("ImageStream %s exists but lookupPolicy.local is false", s.Stream)
	f.Remedy = fmt.Sprintf("%s set image-lookup %s -n %s", w.cli, s.Stream, f.Namespace)
}

func (w words) tagMissing(s facts.TagMissing) {
	f := w.f
	f.Message = fmt.Sprintf("%s %q uses %q: ImageStream %s has lookup enabled but tag %q has no image yet (not pushed or imported)",
		kind(s.Init), f.Container, f.Image, s.Stream, s.Tag)
	if s.Registry {
		f.Message = fmt.Sprintf("%s %q uses %q, tag %q of ImageStream %s in the internal registry, which has no image yet (not pushed or imported): the registry has nothing to serve",
			kind(s.Init), f.Container, f.Image, s.Tag, s.Stream)
	}
	if s.NoImageID {
		f.Message = fmt.Sprintf("%s %q uses %q: ImageStream %s has lookup enabled but the latest event of tag %q has no image ID, so the ImageStreamTag is not found",
			kind(s.Init), f.Container, f.Image, s.Stream, s.Tag)
	}
	if s.Writes != "" && !differs(f.Details.Admission) {
		f.Message += fmt.Sprintf("; admission writes the tag pull spec %s (a tag, not a digest)", s.Writes)
	}
	f.Message += w.admissionNote()
	f.Short = fmt.Sprintf("ImageStream %s has no image for tag %s", s.Stream, s.Tag) + admissionShort(f.Details.Admission)
	f.Remedy = fmt.Sprintf("push or import %s:%s (%s import-image %s:%s -n %s or %s tag), then check again", s.Stream, s.Tag, w.cli, s.Stream, s.Tag, f.Namespace, w.cli)
}

func (w words) notRewritten(s facts.NotRewritten) {
	f := w.f
	if f.ResolvedImage == "" { // admission answered that it leaves the image as it is
		f.Message = fmt.Sprintf("%s %q uses the local name %q of ImageStream %s, which was not rewritten: pods pull %q. %s%s",
			kind(s.Init), f.Container, f.Image, s.Stream, s.PulledAs, notRewrittenWhy(s), w.admissionNote())
		f.Short = fmt.Sprintf("%s not resolved (%s)%s", f.Image, s.Cause, admissionShort(f.Details.Admission))
		f.Remedy = fmt.Sprintf("find out why admission does not resolve it: %s get imagestreamtag %s:%s -n %s -o yaml, and the ImagePolicy configuration",
			w.cli, s.Stream, s.Tag, f.Namespace)
		return
	}
	f.Message = fmt.Sprintf("%s %q uses the local name %q, which ImageStream %s resolves to %s, but it was not rewritten: pods pull %q. %s",
		kind(s.Init), f.Container, f.Image, s.Stream, f.ResolvedImage, s.PulledAs, notRewrittenWhy(s))
	if s.Unpinned {
		f.Message = fmt.Sprintf("%s %q uses %q, tag %q of ImageStream %s in the internal registry: admission writes this tag form for a local name while the tag has no image, "+
			"and never rewrites it afterwards, so it is not pinned: each recreated pod pulls whatever the tag points to then, while the same manifest applied now gets %s. %s",
			kind(s.Init), f.Container, f.Image, s.Tag, s.Stream, f.ResolvedImage, notRewrittenWhy(s))
	}
	if !s.Digest && !differs(f.Details.Admission) {
		f.Message += fmt.Sprintf("; %s is a tag, not a digest: exactly what admission writes for this image ID", f.ResolvedImage)
	}
	f.Message += w.admissionNote()
	f.Short = fmt.Sprintf("%s not resolved to %s (%s)%s", f.Image, f.ResolvedImage, s.Cause, admissionShort(f.Details.Admission))
	if s.Triggered {
		f.Message += "; an image trigger governs this container, so its repair is the trigger's (see ImageTriggerStale)"
		f.Remedy = fmt.Sprintf("let the image trigger set it: see ImageTriggerStale for %s", f.StatefulSet)
		return
	}
	f.Remedy = w.patchRemedy()
}

// notRewrittenWhy says why admission did not rewrite the image, from the ControllerRevision
// that set it.
func notRewrittenWhy(s facts.NotRewritten) string {
	const never = "admission resolves an image only when the object is created or that image changes, so it never will, and re-applying the same manifest does not help"
	switch {
	case s.Cause == facts.CauseStreamCreatedAfterTemplate:
		return fmt.Sprintf("ImageStream %s was created at %s, after revision %s set this image (%s): %s",
			s.Stream, stamp(s.Later), s.Revision, stamp(s.RevisionCreated), never)
	case s.Cause == facts.CauseTagCreatedAfterTemplate:
		return fmt.Sprintf("Tag %s got its first image at %s, after revision %s set this image (%s): %s",
			s.Tag, stamp(s.Later), s.Revision, stamp(s.RevisionCreated), never)
	case s.Revision == "":
		return "No ControllerRevision history tells when this image was set (none records it, or it came back with a rollback), so stsdiag cannot tell why admission left it"
	}
	return fmt.Sprintf("The stream and tag predate revision %s (%s), so admission should have resolved it: lookupPolicy.local may have been turned on later, "+
		"a mutating webhook may have set the image after admission, or the OpenShift release did not resolve StatefulSet updates (Bugzilla 1925180); "+
		"re-applying the same manifest does not re-resolve it", s.Revision, stamp(s.RevisionCreated))
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// patchRemedy is the JSON patch of the finding's image, then the delete of its failing pods.
func (w words) patchRemedy() string {
	f := w.f
	remedy := fmt.Sprintf("%s patch statefulset %s -n %s --type=json -p '%s'", w.cli, f.StatefulSet, f.Namespace, f.Patch.JSONPatch(""))
	if len(f.FailingPods) > 0 {
		remedy += fmt.Sprintf("; then delete the stuck pods: %s delete pod -n %s %s", w.cli, f.Namespace, strings.Join(f.FailingPods, " "))
	}
	return remedy + fmt.Sprintf(" (or: %s stsdiag fix %s -n %s)", w.cli, f.StatefulSet, f.Namespace)
}

func (w words) neverResolved(s facts.NeverResolved) {
	f := w.f
	why := neverResolvedWhy(s, f.Details.Reason, f.Namespace)
	f.Details.Skipped = why
	target := s.Target
	if target == "" {
		target = "the ImageStream's pull spec"
	}
	if f.Details.Reason == facts.SkipNameParsedAsRegistry {
		f.Message = fmt.Sprintf("%s %q uses %q: %s; pods pull from host %s", kind(s.Init), f.Container, f.Image, why, s.Host)
		f.Short = "never resolved: " + s.Host + " parses as a registry"
		f.Remedy = fmt.Sprintf("reference the image by its full pull spec %s", target)
		return
	}
	f.Message = fmt.Sprintf("%s %q uses the local name %q, which ImageStream %s resolves, but admission never resolves this StatefulSet: %s",
		kind(s.Init), f.Container, f.Image, s.Stream, why) + w.admissionNote()
	f.Short = "image lookup never runs here: " + why + admissionShort(f.Details.Admission)
	if s.OwnerKind != "" {
		f.Remedy = fmt.Sprintf("set the image to %s in the %s %s that manages this StatefulSet, or have it add the image.openshift.io/triggers annotation for %s:%s", target, s.OwnerKind, s.OwnerName, s.Stream, s.Tag)
	} else {
		f.Remedy = fmt.Sprintf("reference the image by its full pull spec %s, or run the workload in a namespace where image lookup applies", target)
	}
}

// neverResolvedWhy says why admission never resolves the name (details.skipped).
func neverResolvedWhy(s facts.NeverResolved, reason, namespace string) string {
	switch {
	case reason == facts.SkipNameParsedAsRegistry:
		return fmt.Sprintf("OpenShift parses the single segment %q as a registry host (it contains '.' or starts with localhost), so admission never looks up ImageStream %s", s.Host, s.Stream)
	case reason == facts.SkipControllerOwned:
		return fmt.Sprintf("it is managed by %s %s (a controller owner reference)", s.OwnerKind, s.OwnerName)
	case s.RunLevel != "":
		return fmt.Sprintf("namespace %s has run-level %s", namespace, s.RunLevel)
	}
	return fmt.Sprintf("namespace %s is excluded from image lookup", namespace)
}

func (w words) triggerBroken(s facts.TriggerBroken) {
	f := w.f
	f.Message = fmt.Sprintf("the %s annotation is not followed by the image trigger controller: %s", resolver.TriggerAnnotation, triggerError(s, f.Details.Reason))
	f.Short = "image trigger invalid: " + f.Details.Reason
	f.Remedy = fmt.Sprintf(`fix the annotation, e.g. %s set triggers statefulset/%s -n %s --from-image=<stream>:<tag> --containers=<container>`, w.cli, f.StatefulSet, f.Namespace)
}

// triggerError says why the controller cannot follow a trigger (or the whole annotation).
func triggerError(s facts.TriggerBroken, reason string) string {
	var msg string
	switch reason {
	case facts.TriggerDuplicateFieldPath:
		return fmt.Sprintf("duplicate triggers are not allowed (fieldPath %s)", s.FieldPath)
	case facts.TriggerUnsupportedFrom:
		msg = fmt.Sprintf("from must be an ImageStreamTag without apiVersion, not kind %q apiVersion %q", s.FromKind, s.FromAPIVersion)
	case facts.TriggerInvalidTagName:
		msg = fmt.Sprintf("from.name %q must be <stream>:<tag>", s.FromName)
	case facts.TriggerFieldPathNotInSpec:
		msg = fmt.Sprintf("fieldPath %q does not start with %q: the trigger controller ignores it", s.FieldPath, podSpecPath)
	case facts.TriggerInvalidFieldPath:
		msg = "field path is not valid: " + s.FieldPath
	case facts.TriggerNoSuchContainer:
		msg = "no such container: " + s.FieldPath
	case facts.TriggerStreamNotFound:
		msg = fmt.Sprintf("ImageStream %s/%s does not exist", s.StreamNamespace, s.Stream)
	case facts.TriggerTagNotFound:
		msg = fmt.Sprintf("ImageStream %s/%s has no tag %q", s.StreamNamespace, s.Stream, s.Tag)
	default:
		return s.ParseError
	}
	return fmt.Sprintf("trigger %d: %s", *s.Index, msg)
}

func (w words) triggerBehind(s facts.TriggerBehind) {
	f := w.f
	f.Short = fmt.Sprintf("trigger %s not applied: %s", s.From, f.Image)
	if s.Suffix != "" {
		f.Message = fmt.Sprintf("the image trigger on container %q follows ImageStreamTag %s, whose current image is <internal registry>%s, but the template still says %q: "+
			"openshift-controller-manager has not updated it; the stream has no status.dockerImageRepository, so the internal registry host is unknown here and fix cannot patch it",
			f.Container, s.From, s.Suffix, f.Image)
		f.Remedy = fmt.Sprintf("set container %s to <internal registry host>%s", f.Container, s.Suffix)
		return
	}
	f.Message = fmt.Sprintf("the image trigger on container %q follows ImageStreamTag %s, whose current image is %s, but the template still says %q: "+
		"openshift-controller-manager has not updated it (it may lack permission on StatefulSets, as before OpenShift 4.12)", f.Container, s.From, s.Want, f.Image)
	switch {
	case !s.Valid:
		f.Message += fmt.Sprintf("; %q is not a valid image reference, so nothing can be patched", s.Want)
		f.Remedy = fmt.Sprintf("fix the tag %s", s.From)
		return
	case !s.Digest:
		f.Message += fmt.Sprintf("; %s is a tag, not a digest: exactly what the trigger controller writes (referencePolicy Source keeps the tag's pull spec)", s.Want)
	}
	f.Remedy = w.patchRemedy()
}
