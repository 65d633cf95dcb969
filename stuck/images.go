package stuck

import (
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// Questions are the images whose rewrite a diagnosis of s predicts, to ask admission about
// (--confirm-with-admission), each once: the image of an UnresolvedImageReference, of an
// ImageStreamTagNotFound with a tag pull spec, or of an ImageResolutionSkipped of a
// controller-owned StatefulSet (what admission writes were it not owned). Sorted. An
// internal-registry tag (internalTag) is not asked about: admission leaves it as it is, and its
// patch is the tag's current image, not a rewrite.
func Questions(s *Objects) []AdmissionQuestion {
	seen := map[AdmissionQuestion]bool{}
	imageFindings(s, func(q AdmissionQuestion) { seen[q] = true })
	out := make([]AdmissionQuestion, 0, len(seen))
	for q := range seen {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Forced != b.Forced {
			return !a.Forced
		}
		return a.Image < b.Image
	})
	return out
}

// imageFindings reports image references of StatefulSets (templates and pods) that OpenShift's
// image lookup should have resolved, and image triggers that are invalid or not applied, with
// their facts. It returns nothing off OpenShift.
//
// With admission's answers in the snapshot (s.Admission), each predicted rewrite says whether
// admission confirmed it (details.admission), and where admission wrote another image the
// finding's resolved image and patch are what admission wrote. ask, if set, is told every prediction admission could confirm.
func imageFindings(s *Objects, ask func(AdmissionQuestion)) []Finding {
	if !s.OpenShift {
		return nil
	}
	shared := s.Indexed()
	owned := controller.ByController(s.Pods, s.Revisions)
	adm := &resolver.Admission{Stream: shared.Streams.Stream}
	var out []Finding
	for i := range s.StatefulSets {
		set := &s.StatefulSets[i]
		if !s.InScope(set.Namespace, set.Name) || set.DeletionTimestamp != nil {
			continue
		}
		c := &checker{set: set, adm: adm, ns: shared.Namespaces[set.Namespace], pods: owned.Pods[set.UID], revs: owned.Revisions[set.UID],
			hasStreams: shared.Streams.HasStreams, answers: s.Admission, ask: ask}
		out = append(out, c.check()...)
	}
	return out
}

type checker struct {
	set        *appsv1.StatefulSet
	adm        *resolver.Admission
	ns         *corev1.Namespace
	pods       []*corev1.Pod
	revs       []*appsv1.ControllerRevision
	decoded    []revision
	hasStreams func(namespace string) bool
	// answers are admission's answers (nil: not asked); ask is told each question.
	answers map[AdmissionQuestion]AdmissionAnswer
	ask     func(AdmissionQuestion)
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

// check reports the triggers first: the containers they govern converge to the trigger's value,
// not admission's, which changes what the images are checked against.
func (c *checker) check() []Finding {
	out, triggered := c.checkTriggers()
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
		failing := waitingContainers(pod, imagePullReasons)
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
	forced := resolver.Forced(c.set.Annotations, c.set.Spec.Template.Annotations)
	for _, key := range order {
		if f := c.checkUse(uses[key], forced, triggered); f != nil {
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

func (u *use) path() string {
	return targetContainer{init: u.init, index: u.index}.path()
}

// checkUse asks what admission writes for the image (as if the template were admitted now) and
// reports it when that is not what the template says. triggered are the template containers an
// active image trigger with a value governs.
func (c *checker) checkUse(u *use, forced bool, triggered map[string]bool) *Finding {
	res := c.adm.Resolve(u.image, c.set.Namespace, forced)
	f := c.useFinding(u)
	switch res.Outcome {
	case resolver.RegistryOnly:
		return c.registryOnly(u, f, forced)
	case resolver.LookupDisabled:
		f.Details.ImageStream, f.Details.Tag = res.Stream.Name, res.Tag
		f.Code, f.Severity = apiv1.ImageLookupDisabled, apiv1.SeverityWarning
		f.Facts = facts.LookupOff{Init: u.init, Stream: res.Stream.Name, PulledAs: dockerHub(res.Ref)}
		return f
	case resolver.NotLocal:
		return c.internalTag(u, f, res.Ref)
	case resolver.TagNotFound, resolver.Resolved:
	default:
		return nil
	}
	if !res.LocalRewrite && res.Outcome == resolver.Resolved {
		return nil // not a local name (a full internal-registry reference): admission leaves it
	}
	f.Details.ImageStream, f.Details.Tag = res.Stream.Name, res.Tag
	code, why := c.skipReason()
	switch {
	case code != "" || res.Outcome == resolver.TagNotFound:
		// A controller-owned set is asked too: the probe pod has no owner, so admission says
		// what it would write for the set were it not owned.
		if res.Image != "" && (code == "" || code == facts.SkipControllerOwned) {
			res.Image = c.confirm(f, u.image, forced, res.Image)
		}
	case res.Image == "" || res.Image == u.image:
		return nil
	case !u.inTemplate && len(u.pulling) == 0:
		return nil // the template no longer uses it; pods on it are a stale revision, reported by stuck
	default:
		res.Image = c.confirm(f, u.image, forced, res.Image)
	}
	f.ResolvedImage = res.Image
	if code != "" {
		return c.skipped(u, f, res, code, why)
	}
	if res.Outcome == resolver.TagNotFound {
		f.Code, f.Severity = apiv1.ImageStreamTagNotFound, useSeverity(u)
		f.Facts = facts.TagMissing{Init: u.init, Stream: res.Stream.Name, Tag: res.Tag, NoImageID: res.Event != nil, Writes: res.Image}
		return f
	}
	return c.notRewritten(u, f, res, u.inTemplate && triggered[u.container])
}

// confirm asks for admission's answer about an image whose rewrite to predicted the rules
// predict, records it in details.admission, and returns the image to trust: what admission
// wrote when it answered ("" when it leaves the image as it is), else the prediction.
func (c *checker) confirm(f *Finding, image string, forced bool, predicted string) string {
	q := AdmissionQuestion{Namespace: c.set.Namespace, Forced: forced, Image: image}
	if c.ask != nil {
		c.ask(q)
	}
	a, asked := c.answers[q]
	if !asked {
		return predicted
	}
	check := &apiv1.AdmissionCheck{Predicted: predicted, Written: a.Written, Result: apiv1.AdmissionDiffers}
	f.Details.Admission = check
	switch {
	case a.Error != "" || a.Written == "":
		check.Result, check.Written, check.Error = apiv1.AdmissionUnconfirmed, "", a.Error
		return predicted
	case a.Written == predicted:
		check.Result = apiv1.AdmissionConfirmed
	case a.Written == image:
		return ""
	}
	return a.Written
}

// internalTag reports a reference to an ImageStream's own repository by tag
// (<status.dockerImageRepository>:<tag>), the form admission writes for a local name whose tag has
// no image yet (imagepolicy.go:374-383@ALG). Admission leaves such a reference alone from then on:
// naming the integrated registry it is a full reference, not a partial one (imagepolicy.go:340-347@ALG),
// so no LocalRewrite (387-392) and, under the default rules, no rewrite (RewriteImagePullSpec
// 489-510@ALG); verified on openshift-apiserver (e2e/openshift). Pulled by tag, it is not
// pinned: once the tag gets an image, each recreated pod may run another image than its siblings,
// while the same manifest applied now would get the digest. Reported when the tag has no image
// (ImageStreamTagNotFound: the registry has nothing to serve) or got its first image after the
// revision that set the reference (UnresolvedImageReference with cause TagCreatedAfterTemplate or
// StreamCreatedAfterTemplate); a tag that had its image before was written so on purpose.
func (c *checker) internalTag(u *use, f *Finding, ref resolver.Ref) *Finding {
	stream := resolver.InternalTagStream(c.adm, ref)
	if stream == nil {
		return nil
	}
	tag := ref.TagOrLatest()
	f.Details.ImageStream, f.Details.Tag = stream.Name, tag
	res := c.adm.ResolveTag(ref.Namespace, ref.Name, tag, true)
	if res.Outcome == resolver.TagNotFound {
		f.Code, f.Severity = apiv1.ImageStreamTagNotFound, useSeverity(u)
		f.Facts = facts.TagMissing{Init: u.init, Stream: stream.Name, Tag: tag, NoImageID: res.Event != nil, Registry: true}
		return f
	}
	if res.Outcome != resolver.Resolved || res.Image == u.image || (!u.inTemplate && len(u.pulling) == 0) {
		return nil
	}
	if c.decoded == nil {
		c.decoded = decodeRevisions(c.revs)
	}
	rev := introducedBy(c.decoded, u.container, u.image)
	cause, later := causeOf(rev, stream, tag)
	if cause == facts.CauseUnknown {
		return nil
	}
	f.ResolvedImage = res.Image
	f.Code, f.Severity = apiv1.UnresolvedImageReference, useSeverity(u)
	f.Details.Cause, f.Details.Revision = cause, rev.Name
	f.Facts = facts.NotRewritten{Init: u.init, Stream: stream.Name, Tag: tag, PulledAs: u.image, Cause: cause, Later: later.UTC(),
		Revision: rev.Name, RevisionCreated: rev.CreationTimestamp.UTC(), Digest: strings.Contains(res.Image, "@"), Unpinned: true}
	setPatch(f, u.path(), u.image, res.Image)
	return f
}

// useFinding starts the finding of an image use: what every image finding says of it.
func (c *checker) useFinding(u *use) *Finding {
	f := &Finding{Finding: apiv1.Finding{Namespace: c.set.Namespace, StatefulSet: c.set.Name, Container: u.container, Image: u.image}}
	f.Details.Pods = u.pods
	if len(u.pulling) > 0 {
		f.Details.FailingPods = u.pulling
		f.FailingPods = u.pulling
		f.Reason = "ImagePullFailing"
	}
	f.Details.InitContainer = u.init
	if !u.inTemplate {
		f.Pod = u.pods[0]
		f.Details.TemplateImage = templateImageChanged
	}
	return f
}

// templateImageChanged is details.templateImage of a finding about an image only pods use.
const templateImageChanged = "changed since these pods were created"

// useSeverity is error when pods fail to pull the image, else warning.
func useSeverity(u *use) apiv1.Severity {
	if len(u.pulling) > 0 {
		return apiv1.SeverityError
	}
	return apiv1.SeverityWarning
}

// notRewritten reports a local name admission resolves but did not rewrite.
func (c *checker) notRewritten(u *use, f *Finding, res resolver.Result, triggered bool) *Finding {
	if c.decoded == nil {
		c.decoded = decodeRevisions(c.revs)
	}
	rev := introducedBy(c.decoded, u.container, u.image)
	cause, later := causeOf(rev, res.Stream, res.Tag)
	fx := facts.NotRewritten{Init: u.init, Stream: res.Stream.Name, Tag: res.Tag, PulledAs: pulledAs(res.Ref), Cause: cause,
		Later: later.UTC(), Digest: strings.Contains(res.Image, "@"), Triggered: triggered}
	f.Code, f.Severity = apiv1.UnresolvedImageReference, useSeverity(u)
	f.Details.Cause = cause
	if rev != nil {
		fx.Revision, fx.RevisionCreated = rev.Name, rev.CreationTimestamp.UTC()
		f.Details.Revision = rev.Name
	}
	f.Facts = fx
	if !triggered && res.Image != "" {
		setPatch(f, u.path(), u.image, res.Image)
		f.Patch.Admission = f.Details.Admission
	}
	return f
}

// setPatch fills the typed hand-off and details.patch of an image patch.
func setPatch(f *Finding, path, from, to string) {
	f.Patch = &ImagePatch{Path: path, From: from, To: to}
	f.Details.Patch = &apiv1.ImagePatchDetails{Path: path, From: from, To: to}
}

// registryOnly reports a single-segment name that OpenShift parses as a registry host
// (reference.go:44,52-53@LG) while a lookup-enabled ImageStream of that name exists.
func (c *checker) registryOnly(u *use, f *Finding, forced bool) *Finding {
	name, tag, _ := resolver.RegistryOnlyName(u.image)
	stream := c.adm.Stream(c.set.Namespace, name)
	if stream == nil || !(stream.Spec.LookupPolicy.Local || forced) {
		return nil
	}
	if tag == "" {
		tag = "latest"
	}
	f.Code, f.Severity = apiv1.ImageResolutionSkipped, apiv1.SeverityWarning
	f.Details.ImageStream, f.Details.Tag = stream.Name, tag
	f.Details.Reason = facts.SkipNameParsedAsRegistry
	fx := facts.NeverResolved{Init: u.init, Stream: stream.Name, Tag: tag, Host: name}
	if r := c.adm.ResolveTag(c.set.Namespace, stream.Name, tag, forced); r.Image != "" && (r.Outcome == resolver.Resolved || r.Outcome == resolver.TagNotFound) {
		fx.Target = r.Image
	}
	f.Facts = fx
	return f
}

// skipped reports a name admission would resolve, were the StatefulSet not skipped (why holds
// the owner or run level behind the reason code).
func (c *checker) skipped(u *use, f *Finding, res resolver.Result, code string, why facts.NeverResolved) *Finding {
	f.Code, f.Severity = apiv1.ImageResolutionSkipped, apiv1.SeverityWarning
	f.Details.Reason = code
	why.Init, why.Stream, why.Tag, why.Target = u.init, res.Stream.Name, res.Tag, res.Image
	f.Facts = why
	return f
}

// skipReason says why the ImagePolicy admission plugin never touches this StatefulSet: a
// controller owner (imagepolicy.go:198-205@ALG), an excluded namespace, or run level 0/1
// (namespaceconditions labelcondition.go:17-31@893309864a2588830895620a48258e62fafbae8d).
// It returns the reason code and, in facts, the owner or run level behind it.
func (c *checker) skipReason() (string, facts.NeverResolved) {
	if owner := metav1.GetControllerOfNoCopy(c.set); owner != nil {
		return facts.SkipControllerOwned, facts.NeverResolved{OwnerKind: owner.Kind, OwnerName: owner.Name}
	}
	var labels map[string]string
	if c.ns != nil {
		labels = c.ns.Labels
	}
	if skipped, level := resolver.NamespaceSkipped(c.set.Namespace, labels); skipped {
		return facts.SkipExcludedNamespace, facts.NeverResolved{RunLevel: level}
	}
	return "", facts.NeverResolved{}
}

// pulledAs is what a container runtime pulls for a name without registry (docker.io).
func pulledAs(r resolver.Ref) string {
	if r.Registry != "" {
		return r.Exact()
	}
	return dockerHub(r)
}

func dockerHub(r resolver.Ref) string {
	ns := r.Namespace
	if ns == "" {
		ns = "library"
	}
	return "docker.io/" + ns + "/" + r.Name + ":" + r.TagOrLatest()
}
