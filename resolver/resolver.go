package resolver

import (
	"fmt"
	"sort"
	"strings"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/snapshot"
)

// ResolveNamesAnnotation forces lookup of every non-digest reference (oc set image-lookup sts/x).
const ResolveNamesAnnotation = "alpha.image.policy.openshift.io/resolve-names"

// RunLevelLabel marks OpenShift's run-level namespaces; levels 0 and 1 are skipped by admission.
const RunLevelLabel = "openshift.io/run-level"

// skippedNamespaces are never resolved by the ImagePolicy admission plugin.
var skippedNamespaces = map[string]bool{
	"default": true, "kube-system": true, "kube-public": true,
	"openshift": true, "openshift-node": true, "openshift-infra": true,
}

// Resolution is what admission would have written for a reference.
type Resolution struct {
	// Image is the rewritten reference ("" when admission leaves it as is).
	Image string
	// TagMissing is true when the stream qualifies but the tag has no image.
	TagMissing bool
}

// Resolve computes what admission writes for a local name backed by the stream.
func Resolve(stream *imagev1.ImageStream, tag string) Resolution {
	repo := stream.Status.DockerImageRepository
	for _, st := range stream.Status.Tags {
		if st.Tag != tag || len(st.Items) == 0 {
			continue
		}
		item := st.Items[0]
		if localReferencePolicy(stream, tag) && repo != "" {
			return Resolution{Image: repo + "@" + item.Image}
		}
		if ref, err := Parse(item.DockerImageReference); err == nil && item.Image != "" {
			ref.Tag, ref.Digest = "", item.Image
			return Resolution{Image: ref.Exact()}
		}
		return Resolution{Image: item.DockerImageReference}
	}
	if repo != "" {
		return Resolution{Image: repo + ":" + tag, TagMissing: true}
	}
	return Resolution{TagMissing: true}
}

func localReferencePolicy(stream *imagev1.ImageStream, tag string) bool {
	for _, t := range stream.Spec.Tags {
		if t.Name == tag {
			return t.ReferencePolicy.Type == imagev1.LocalTagReferencePolicy
		}
	}
	return false
}

// Diagnose reports image references of StatefulSets (templates and pods) that image lookup should
// have resolved. It returns nothing off OpenShift. cli names the command in remedies.
func Diagnose(s *snapshot.Snapshot, cli string) []apiv1.Finding {
	if !s.OpenShift {
		return nil
	}
	if cli == "" {
		cli = "oc"
	}
	streams := map[string]*imagev1.ImageStream{}
	for i := range s.ImageStreams {
		is := &s.ImageStreams[i]
		streams[snapshot.Key(is.Namespace, is.Name)] = is
	}
	namespaces := map[string]*corev1.Namespace{}
	for i := range s.Namespaces {
		namespaces[s.Namespaces[i].Name] = &s.Namespaces[i]
	}
	pods := map[types.UID][]*corev1.Pod{}
	for i := range s.Pods {
		if ref := metav1.GetControllerOfNoCopy(&s.Pods[i]); ref != nil {
			pods[ref.UID] = append(pods[ref.UID], &s.Pods[i])
		}
	}
	var out []apiv1.Finding
	for i := range s.StatefulSets {
		set := &s.StatefulSets[i]
		if !s.InScope(set.Namespace, set.Name) || set.DeletionTimestamp != nil {
			continue
		}
		c := &checker{set: set, streams: streams, ns: namespaces[set.Namespace], pods: pods[set.UID], cli: cli}
		out = append(out, c.check()...)
	}
	return out
}

type checker struct {
	set     *appsv1.StatefulSet
	streams map[string]*imagev1.ImageStream
	ns      *corev1.Namespace
	pods    []*corev1.Pod
	cli     string
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

func (c *checker) forced(podAnnotations map[string]string) bool {
	return c.set.Annotations[ResolveNamesAnnotation] == "*" || c.set.Spec.Template.Annotations[ResolveNamesAnnotation] == "*" ||
		podAnnotations[ResolveNamesAnnotation] == "*"
}

func (c *checker) check() []apiv1.Finding {
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
		failing := pullFailures(pod)
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
	var out []apiv1.Finding
	forced := c.forced(nil)
	for _, key := range order {
		if f := c.checkUse(uses[key], forced); f != nil {
			out = append(out, *f)
		}
	}
	return out
}

func pullFailures(pod *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range statuses {
			if w := st.State.Waiting; w != nil {
				switch w.Reason {
				case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
					out[st.Name] = true
				}
			}
		}
	}
	return out
}

func (c *checker) checkUse(u *use, forced bool) *apiv1.Finding {
	ref, err := Parse(u.image)
	if err != nil || !ref.Local(forced) {
		return nil
	}
	tag := ref.TagOrLatest()
	stream := c.streams[snapshot.Key(c.set.Namespace, ref.Name)]
	if stream == nil {
		return nil
	}
	f := &apiv1.Finding{Namespace: c.set.Namespace, StatefulSet: c.set.Name, Container: u.container, Image: u.image,
		Details: map[string]any{"imageStream": stream.Name, "tag": tag}}
	if len(u.pods) > 0 {
		f.Details["pods"] = u.pods
	}
	if len(u.pulling) > 0 {
		f.Details["failingPods"] = u.pulling
		f.FailingPods = u.pulling
		f.Reason = "ImagePullFailing"
	}
	if u.init {
		f.Details["initContainer"] = true
	}
	if !u.inTemplate {
		f.Pod = u.pods[0]
		f.Details["templateImage"] = "changed since these pods were created"
	}
	severity := apiv1.SeverityWarning
	if len(u.pulling) > 0 {
		severity = apiv1.SeverityError
	}
	kind := "container"
	if u.init {
		kind = "init container"
	}

	if !stream.Spec.LookupPolicy.Local && !forced {
		f.Code, f.Severity = apiv1.ImageLookupDisabled, apiv1.SeverityWarning
		f.Message = fmt.Sprintf("%s %q uses %q; ImageStream %s exists in %s but its local lookup is off, so the name is pulled from docker.io as %q",
			kind, u.container, u.image, stream.Name, c.set.Namespace, dockerHub(ref))
		f.Short = fmt.Sprintf("ImageStream %s exists but lookupPolicy.local is false", stream.Name)
		f.Remedy = fmt.Sprintf("%s set image-lookup %s -n %s", c.cli, stream.Name, c.set.Namespace)
		return f
	}

	res := Resolve(stream, tag)
	f.ResolvedImage = res.Image
	if skip := c.skipReason(); skip != "" {
		f.Code, f.Severity = apiv1.ImageResolutionSkipped, apiv1.SeverityWarning
		f.Message = fmt.Sprintf("%s %q uses the local name %q, which ImageStream %s resolves, but admission never resolves this StatefulSet: %s",
			kind, u.container, u.image, stream.Name, skip)
		f.Short = "image lookup never runs here: " + skip
		f.Details["skipped"] = skip
		target := res.Image
		if target == "" {
			target = "the ImageStream's pull spec"
		}
		if owner := metav1.GetControllerOfNoCopy(c.set); owner != nil {
			f.Remedy = fmt.Sprintf("set the image to %s in the %s %s that manages this StatefulSet, or have it add the image.openshift.io/triggers annotation for %s:%s", target, owner.Kind, owner.Name, stream.Name, tag)
		} else {
			f.Remedy = fmt.Sprintf("reference the image by its full pull spec %s, or run the workload in a namespace where image lookup applies", target)
		}
		return f
	}
	if res.TagMissing {
		f.Code, f.Severity = apiv1.ImageStreamTagNotFound, severity
		f.Message = fmt.Sprintf("%s %q uses %q: ImageStream %s has lookup enabled but tag %q has no image yet (not pushed or imported)",
			kind, u.container, u.image, stream.Name, tag)
		f.Short = fmt.Sprintf("ImageStream %s has no image for tag %s", stream.Name, tag)
		f.Remedy = fmt.Sprintf("push or import %s:%s (%s import-image %s:%s -n %s or %s tag), then check again", stream.Name, tag, c.cli, stream.Name, tag, c.set.Namespace, c.cli)
		return f
	}
	if !u.inTemplate {
		// The template no longer uses it; the pods on it are a stale revision, reported by stuck.
		if len(u.pulling) == 0 {
			return nil
		}
	}
	f.Code, f.Severity = apiv1.UnresolvedImageReference, severity
	f.Message = fmt.Sprintf("%s %q uses the local name %q, which ImageStream %s (lookupPolicy.local) resolves to %s, but it was not rewritten: pods pull %q",
		kind, u.container, u.image, stream.Name, res.Image, dockerHub(ref))
	f.Short = fmt.Sprintf("%s not resolved to %s", u.image, res.Image)
	path := fmt.Sprintf("/spec/template/spec/%s/%d/image", map[bool]string{true: "initContainers", false: "containers"}[u.init], u.index)
	f.Patch = &apiv1.ImagePatch{Path: path, From: u.image, To: res.Image}
	f.Details["patch"] = map[string]any{"path": path, "from": u.image, "to": res.Image}
	patch := fmt.Sprintf(`[{"op":"test","path":"%s","value":"%s"},{"op":"replace","path":"%s","value":"%s"}]`, path, u.image, path, res.Image)
	f.Remedy = fmt.Sprintf("%s patch statefulset %s -n %s --type=json -p '%s'", c.cli, c.set.Name, c.set.Namespace, patch)
	if len(u.pulling) > 0 {
		f.Remedy += fmt.Sprintf("; then delete the stuck pods: %s delete pod -n %s %s", c.cli, c.set.Namespace, strings.Join(u.pulling, " "))
	}
	return f
}

// skipReason says why the ImagePolicy admission plugin never touches this StatefulSet.
func (c *checker) skipReason() string {
	if owner := metav1.GetControllerOfNoCopy(c.set); owner != nil {
		return fmt.Sprintf("it is managed by %s %s (a controller owner reference)", owner.Kind, owner.Name)
	}
	if skippedNamespaces[c.set.Namespace] {
		return fmt.Sprintf("namespace %s is excluded from image lookup", c.set.Namespace)
	}
	if c.ns != nil {
		if level := c.ns.Labels[RunLevelLabel]; level == "0" || level == "1" {
			return fmt.Sprintf("namespace %s has run-level %s", c.set.Namespace, level)
		}
	}
	return ""
}

func dockerHub(r Ref) string {
	ns := r.Namespace
	if ns == "" {
		ns = "library"
	}
	return "docker.io/" + ns + "/" + r.Name + ":" + r.TagOrLatest()
}
