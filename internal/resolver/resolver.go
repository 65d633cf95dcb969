package resolver

import (
	"fmt"
	"sort"
	"strings"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/statefulset"
)

// RunLevelLabel marks OpenShift's run-level namespaces; levels 0 and 1 are skipped by admission.
const RunLevelLabel = "openshift.io/run-level"

// skippedNamespaces are never resolved by the ImagePolicy admission plugin (openshift/kubernetes
// openshift-kube-apiserver/admission/namespaceconditions/decorator.go:13-18@893309864a2588830895620a48258e62fafbae8d).
var skippedNamespaces = map[string]bool{
	"default": true, "kube-system": true, "kube-public": true,
	"openshift": true, "openshift-node": true, "openshift-infra": true,
}

// Why admission never resolves a name (details.reason of ImageResolutionSkipped).
const (
	SkipControllerOwned      = "ControllerOwned"
	SkipExcludedNamespace    = "ExcludedNamespace"
	SkipNameParsedAsRegistry = "NameParsedAsRegistry"
)

// Diagnose reports image references of StatefulSets (templates and pods) that OpenShift's image
// lookup should have resolved, and image triggers that are invalid or not applied. It returns
// nothing off OpenShift. cli names the command in remedies.
func Diagnose(s *snapshot.Snapshot, cli string) []model.Finding {
	if !s.OpenShift {
		return nil
	}
	if cli == "" {
		cli = "oc"
	}
	streams := map[string]*imagev1.ImageStream{}
	streamNamespaces := map[string]bool{}
	for i := range s.ImageStreams {
		is := &s.ImageStreams[i]
		streams[snapshot.Key(is.Namespace, is.Name)] = is
		streamNamespaces[is.Namespace] = true
	}
	namespaces := map[string]*corev1.Namespace{}
	for i := range s.Namespaces {
		namespaces[s.Namespaces[i].Name] = &s.Namespaces[i]
	}
	owned := statefulset.ByController(s)
	adm := &Admission{Stream: func(ns, name string) *imagev1.ImageStream { return streams[snapshot.Key(ns, name)] }}
	var out []model.Finding
	for i := range s.StatefulSets {
		set := &s.StatefulSets[i]
		if !s.InScope(set.Namespace, set.Name) || set.DeletionTimestamp != nil {
			continue
		}
		c := &checker{set: set, adm: adm, ns: namespaces[set.Namespace], pods: owned.Pods[set.UID], revs: owned.Revisions[set.UID],
			streamNamespaces: streamNamespaces, cli: cli}
		out = append(out, c.check()...)
	}
	return out
}

type checker struct {
	set              *appsv1.StatefulSet
	adm              *Admission
	ns               *corev1.Namespace
	pods             []*corev1.Pod
	revs             []*appsv1.ControllerRevision
	decoded          []revision
	streamNamespaces map[string]bool
	cli              string
	// triggered are the template containers an active image trigger with a value governs: the
	// trigger's value, not admission's, is what they converge to.
	triggered map[string]bool
}

// use is one container image as written, in the template and/or in pods.
type use struct {
	container  string
	init       bool
	index      int
	image      string
	inTemplate bool
	pods       []string
	pulling    []string
}

func (c *checker) check() []model.Finding {
	out := c.checkTriggers()
	uses := map[string]*use{}
	var order []string
	add := func(container string, init bool, index int, image string) *use {
		key := container + "\x00" + image
		u := uses[key]
		if u == nil {
			u = &use{container: container, init: init, index: index, image: image}
			uses[key] = u
			order = append(order, key)
		}
		return u
	}
	tmpl := &c.set.Spec.Template.Spec
	for i, ctr := range tmpl.InitContainers {
		add(ctr.Name, true, i, ctr.Image).inTemplate = true
	}
	for i, ctr := range tmpl.Containers {
		add(ctr.Name, false, i, ctr.Image).inTemplate = true
	}
	sort.Slice(c.pods, func(i, j int) bool { return c.pods[i].Name < c.pods[j].Name })
	for _, pod := range c.pods {
		failing := waitingContainers(pod, statefulset.ImagePullReasons)
		for i, ctr := range pod.Spec.InitContainers {
			u := add(ctr.Name, true, i, ctr.Image)
			u.pods = append(u.pods, pod.Name)
			if failing[ctr.Name] {
				u.pulling = append(u.pulling, pod.Name)
			}
		}
		for i, ctr := range pod.Spec.Containers {
			u := add(ctr.Name, false, i, ctr.Image)
			u.pods = append(u.pods, pod.Name)
			if failing[ctr.Name] {
				u.pulling = append(u.pulling, pod.Name)
			}
		}
	}
	forced := Forced(c.set.Annotations, c.set.Spec.Template.Annotations)
	for _, key := range order {
		if f := c.checkUse(uses[key], forced); f != nil {
			out = append(out, *f)
		}
	}
	return out
}

// waitingContainers names the pod's containers waiting with one of reasons.
func waitingContainers(pod *corev1.Pod, reasons map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range statuses {
			if w := st.State.Waiting; w != nil && reasons[w.Reason] {
				out[st.Name] = true
			}
		}
	}
	return out
}

func (u *use) kind() string {
	if u.init {
		return "init container"
	}
	return "container"
}

func (u *use) path() string {
	return targetContainer{init: u.init, index: u.index}.path()
}

// checkUse asks what admission writes for the image (as if the template were admitted now) and
// reports it when that is not what the template says.
func (c *checker) checkUse(u *use, forced bool) *model.Finding {
	res := c.adm.Resolve(u.image, c.set.Namespace, forced)
	f := &model.Finding{Finding: apiv1.Finding{Namespace: c.set.Namespace, StatefulSet: c.set.Name, Container: u.container, Image: u.image}}
	if len(u.pods) > 0 {
		f.Details.Pods = u.pods
	}
	if len(u.pulling) > 0 {
		f.Details.FailingPods = u.pulling
		f.FailingPods = u.pulling
		f.Reason = "ImagePullFailing"
	}
	if u.init {
		f.Details.InitContainer = true
	}
	if !u.inTemplate {
		f.Pod = u.pods[0]
		f.Details.TemplateImage = "changed since these pods were created"
	}
	severity := apiv1.SeverityWarning
	if len(u.pulling) > 0 {
		severity = apiv1.SeverityError
	}

	switch res.Outcome {
	case RegistryOnly:
		return c.registryOnly(u, f, forced)
	case LookupDisabled:
		f.Details.ImageStream, f.Details.Tag = res.Stream.Name, res.Tag
		f.Code, f.Severity = apiv1.ImageLookupDisabled, apiv1.SeverityWarning
		f.Message = fmt.Sprintf("%s %q uses %q; ImageStream %s exists in %s but its local lookup is off, so the name is pulled from docker.io as %q",
			u.kind(), u.container, u.image, res.Stream.Name, c.set.Namespace, dockerHub(res.Ref))
		f.Short = fmt.Sprintf("ImageStream %s exists but lookupPolicy.local is false", res.Stream.Name)
		f.Remedy = fmt.Sprintf("%s set image-lookup %s -n %s", c.cli, res.Stream.Name, c.set.Namespace)
		return f
	case TagNotFound, Resolved:
	default:
		return nil
	}
	if !res.LocalRewrite && res.Outcome == Resolved {
		return nil // not a local name (a full internal-registry reference): admission leaves it
	}
	f.Details.ImageStream, f.Details.Tag = res.Stream.Name, res.Tag
	f.ResolvedImage = res.Image
	if code, why := c.skipReason(); code != "" {
		return c.skipped(u, f, res, code, why)
	}
	if res.Outcome == TagNotFound {
		f.Code, f.Severity = apiv1.ImageStreamTagNotFound, severity
		f.Message = fmt.Sprintf("%s %q uses %q: ImageStream %s has lookup enabled but tag %q has no image yet (not pushed or imported)",
			u.kind(), u.container, u.image, res.Stream.Name, res.Tag)
		if res.Event != nil {
			f.Message = fmt.Sprintf("%s %q uses %q: ImageStream %s has lookup enabled but the latest event of tag %q has no image ID, so the ImageStreamTag is not found",
				u.kind(), u.container, u.image, res.Stream.Name, res.Tag)
		}
		if res.Image != "" {
			f.Message += fmt.Sprintf("; admission writes the tag pull spec %s (a tag, not a digest)", res.Image)
		}
		f.Short = fmt.Sprintf("ImageStream %s has no image for tag %s", res.Stream.Name, res.Tag)
		f.Remedy = fmt.Sprintf("push or import %s:%s (%s import-image %s:%s -n %s or %s tag), then check again", res.Stream.Name, res.Tag, c.cli, res.Stream.Name, res.Tag, c.set.Namespace, c.cli)
		return f
	}
	if res.Image == "" || res.Image == u.image {
		return nil
	}
	if !u.inTemplate && len(u.pulling) == 0 {
		return nil // the template no longer uses it; pods on it are a stale revision, reported by stuck
	}
	cause, rev, why := c.cause(u, res)
	f.Code, f.Severity = apiv1.UnresolvedImageReference, severity
	f.Details.Cause = cause
	if rev != nil {
		f.Details.Revision = rev.Name
	}
	f.Message = fmt.Sprintf("%s %q uses the local name %q, which ImageStream %s resolves to %s, but it was not rewritten: pods pull %q. %s",
		u.kind(), u.container, u.image, res.Stream.Name, res.Image, pulledAs(res.Ref), why)
	if !strings.Contains(res.Image, "@") {
		f.Message += fmt.Sprintf("; %s is a tag, not a digest: exactly what admission writes for this image ID", res.Image)
	}
	f.Short = fmt.Sprintf("%s not resolved to %s (%s)", u.image, res.Image, cause)
	if u.inTemplate && c.triggered[u.container] {
		f.Message += "; an image trigger governs this container, so its repair is the trigger's (see ImageTriggerStale)"
		f.Remedy = fmt.Sprintf("let the image trigger set it: see ImageTriggerStale for %s", c.set.Name)
		return f
	}
	c.setPatch(f, u.path(), u.image, res.Image, u.pulling)
	return f
}

// setPatch fills the typed hand-off, details.patch and the remedy for an image patch.
func (c *checker) setPatch(f *model.Finding, path, from, to string, failing []string) {
	f.Patch = &model.ImagePatch{Path: path, From: from, To: to}
	f.Details.Patch = &apiv1.ImagePatchDetails{Path: path, From: from, To: to}
	patch := fmt.Sprintf(`[{"op":"test","path":"%s","value":"%s"},{"op":"replace","path":"%s","value":"%s"}]`, path, from, path, to)
	f.Remedy = fmt.Sprintf("%s patch statefulset %s -n %s --type=json -p '%s'", c.cli, c.set.Name, c.set.Namespace, patch)
	if len(failing) > 0 {
		f.Remedy += fmt.Sprintf("; then delete the stuck pods: %s delete pod -n %s %s", c.cli, c.set.Namespace, strings.Join(failing, " "))
	}
	f.Remedy += fmt.Sprintf(" (or: %s stsdiag fix %s -n %s)", c.cli, c.set.Name, c.set.Namespace)
}

// cause says why admission did not rewrite the image, from the ControllerRevision that set it.
func (c *checker) cause(u *use, res Result) (string, *appsv1.ControllerRevision, string) {
	if c.decoded == nil {
		c.decoded = decodeRevisions(c.revs)
	}
	rev := introducedBy(c.decoded, u.container, u.image)
	cause, later := causeOf(rev, res.Stream, res.Tag)
	const never = "admission resolves an image only when the object is created or that image changes, so it never will, and re-applying the same manifest does not help"
	switch cause {
	case CauseStreamCreatedAfterTemplate:
		return cause, rev, fmt.Sprintf("ImageStream %s was created at %s, after revision %s set this image (%s): %s",
			res.Stream.Name, stamp(later), rev.Name, stamp(rev.CreationTimestamp), never)
	case CauseTagCreatedAfterTemplate:
		return cause, rev, fmt.Sprintf("Tag %s got its first image at %s, after revision %s set this image (%s): %s",
			res.Tag, stamp(later), rev.Name, stamp(rev.CreationTimestamp), never)
	}
	if rev == nil {
		return cause, nil, "No ControllerRevision history tells when this image was set (none records it, or it came back with a rollback), so stsdiag cannot tell why admission left it"
	}
	return cause, rev, fmt.Sprintf("The stream and tag predate revision %s (%s), so admission should have resolved it: lookupPolicy.local may have been turned on later, "+
		"a mutating webhook may have set the image after admission, or the OpenShift release did not resolve StatefulSet updates (Bugzilla 1925180); "+
		"re-applying the same manifest does not re-resolve it", rev.Name, stamp(rev.CreationTimestamp))
}

func stamp(t metav1.Time) string { return t.UTC().Format(time.RFC3339) }

// registryOnly reports a single-segment name that OpenShift parses as a registry host
// (reference.go:44,52-53@LG) while a lookup-enabled ImageStream of that name exists.
func (c *checker) registryOnly(u *use, f *model.Finding, forced bool) *model.Finding {
	name, tag, _ := RegistryOnlyName(u.image)
	stream := c.adm.Stream(c.set.Namespace, name)
	if stream == nil || !(stream.Spec.LookupPolicy.Local || forced) {
		return nil
	}
	if tag == "" {
		tag = "latest"
	}
	f.Code, f.Severity = apiv1.ImageResolutionSkipped, apiv1.SeverityWarning
	f.Details.ImageStream, f.Details.Tag = stream.Name, tag
	f.Details.Reason = SkipNameParsedAsRegistry
	why := fmt.Sprintf("OpenShift parses the single segment %q as a registry host (it contains '.' or starts with localhost), so admission never looks up ImageStream %s", name, stream.Name)
	f.Details.Skipped = why
	f.Message = fmt.Sprintf("%s %q uses %q: %s; pods pull from host %s", u.kind(), u.container, u.image, why, name)
	f.Short = "never resolved: " + name + " parses as a registry"
	target := "the ImageStream's pull spec"
	if r := c.adm.ResolveTag(c.set.Namespace, stream.Name, tag, forced); r.Image != "" && (r.Outcome == Resolved || r.Outcome == TagNotFound) {
		target = r.Image
	}
	f.Remedy = fmt.Sprintf("reference the image by its full pull spec %s", target)
	return f
}

// skipped reports a name admission would resolve, were the StatefulSet not skipped.
func (c *checker) skipped(u *use, f *model.Finding, res Result, code, why string) *model.Finding {
	f.Code, f.Severity = apiv1.ImageResolutionSkipped, apiv1.SeverityWarning
	f.Details.Reason, f.Details.Skipped = code, why
	f.Message = fmt.Sprintf("%s %q uses the local name %q, which ImageStream %s resolves, but admission never resolves this StatefulSet: %s",
		u.kind(), u.container, u.image, res.Stream.Name, why)
	f.Short = "image lookup never runs here: " + why
	target := res.Image
	if target == "" {
		target = "the ImageStream's pull spec"
	}
	if owner := metav1.GetControllerOfNoCopy(c.set); owner != nil {
		f.Remedy = fmt.Sprintf("set the image to %s in the %s %s that manages this StatefulSet, or have it add the image.openshift.io/triggers annotation for %s:%s", target, owner.Kind, owner.Name, res.Stream.Name, res.Tag)
	} else {
		f.Remedy = fmt.Sprintf("reference the image by its full pull spec %s, or run the workload in a namespace where image lookup applies", target)
	}
	return f
}

// skipReason says why the ImagePolicy admission plugin never touches this StatefulSet: a
// controller owner (imagepolicy.go:198-205@ALG), an excluded namespace, or run level 0/1
// (namespaceconditions labelcondition.go:17-31@893309864a2588830895620a48258e62fafbae8d).
func (c *checker) skipReason() (string, string) {
	if owner := metav1.GetControllerOfNoCopy(c.set); owner != nil {
		return SkipControllerOwned, fmt.Sprintf("it is managed by %s %s (a controller owner reference)", owner.Kind, owner.Name)
	}
	if skippedNamespaces[c.set.Namespace] {
		return SkipExcludedNamespace, fmt.Sprintf("namespace %s is excluded from image lookup", c.set.Namespace)
	}
	if c.ns != nil {
		if level := c.ns.Labels[RunLevelLabel]; level == "0" || level == "1" {
			return SkipExcludedNamespace, fmt.Sprintf("namespace %s has run-level %s", c.set.Namespace, level)
		}
	}
	return "", ""
}

// pulledAs is what a container runtime pulls for a name without registry (docker.io).
func pulledAs(r Ref) string {
	if r.Registry != "" {
		return r.Exact()
	}
	return dockerHub(r)
}

func dockerHub(r Ref) string {
	ns := r.Namespace
	if ns == "" {
		ns = "library"
	}
	return "docker.io/" + ns + "/" + r.Name + ":" + r.TagOrLatest()
}
