package openshift

// The ways users hit OpenShift's image lookup, produced by the real image API and the real
// ImagePolicy plugin: every stored image below is what admission wrote, read back from the API and
// compared with a literal; every stuck rollout is proven on the real StatefulSet controller for
// 30 s; then stsdiag's verdict through the built binary, and fix where the state is repairable.
// kwok plays the node: an image exists when it matches e2e/internal/cluster/registry.yaml (the
// internal registry by digest, quay.io/stsdiag/...), anything else fails to pull.

import (
	"context"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// stuck proves the rollout of ns/web does not move for 30 s on the real controller.
func stuck(t *testing.T, ns string) {
	t.Helper()
	harness.ProvenStuck(context.Background(), t, cs, ns, "web", 30*time.Second)
}

// fixed runs fix --yes --wait and wants a patch from → to, the delete of web-0, a complete
// rollout with every claim kept, and a clean check afterwards.
func fixed(t *testing.T, ns, from, to string) {
	t.Helper()
	ctx := context.Background()
	before := harness.MarkClaims(ctx, t, cs, ns)
	r := stsdiagRun(t, "fix", "-n", ns, "--yes", "--wait=2m", "-o", "json")
	res := harness.DecodeFix(t, r.Stdout)
	if r.Code != 0 || len(res.Actions) != 2 || res.Rollout != "complete" {
		t.Fatalf("fix: exit %d %+v\n%s", r.Code, res, r.Stderr)
	}
	patch, del := res.Actions[0], res.Actions[1]
	if patch.Action != apiv1.PatchImage || patch.Result != apiv1.ResultDone || patch.From != from || patch.To != to {
		t.Errorf("patch %+v", patch)
	}
	if del.Action != apiv1.DeletePod || del.Pod != "web-0" || del.Result != apiv1.ResultDone {
		t.Errorf("delete %+v", del)
	}
	// The patch went through admission too (an UPDATE changing the image): a digest stays.
	want(t, "template image after fix", storedImage(t, ns, "web"), to)
	harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, "web")
	harness.ClaimsKept(ctx, t, cs, ns, before)
	only(t, check(t, ns, 0))
}

// TestSeedAppliedBeforeStream: the manifest (local name myapp:1.0.1) is applied before the
// ImageStream exists. Admission finds no stream and leaves the local name, so pods pull
// docker.io/library/myapp:1.0.1; the stream and its tag arrive later, and nothing re-resolves the
// template: the seed report's symptom.
func TestSeedAppliedBeforeStream(t *testing.T) {
	t.Parallel()
	const ns = "os-seed-nostream"
	ctx := context.Background()
	namespace(t, ns, nil)
	if err := scenario.Volumes(ctx, cs, ns, 3); err != nil {
		t.Fatal(err)
	}
	set := createSet(t, scenario.StatefulSet(ns, "web", "myapp:1.0.1", 3, true))
	want(t, "stored image (no stream)", set.Spec.Template.Spec.Containers[0].Image, "myapp:1.0.1")
	waitReason(t, ns, "web-0", "ImagePullBackOff")

	// Later (in a later second than the revision: timestamps have whole seconds) the stream is
	// created with lookup and the tag pushed.
	time.Sleep(1100 * time.Millisecond)
	is := stream(t, ns, "myapp", true)
	want(t, "status.dockerImageRepository", is.Status.DockerImageRepository, "image-registry.openshift-image-registry.svc:5000/os-seed-nostream/myapp")
	push(t, ns, "myapp", "1.0.1", d1, "image-registry.openshift-image-registry.svc:5000/os-seed-nostream/myapp@"+d1)
	want(t, "stored image after the push", storedImage(t, ns, "web"), "myapp:1.0.1")
	want(t, "what admission writes for the same manifest now", dryRunImage(t, set),
		"image-registry.openshift-image-registry.svc:5000/os-seed-nostream/myapp@"+d1)
	stuck(t, ns)

	rep := check(t, ns, 1)
	only(t, rep, "UnresolvedImageReference/", "CurrentRevisionFailing/web-0")
	f := harness.ByCode(rep, apiv1.UnresolvedImageReference)[0]
	if f.Severity != apiv1.SeverityError || f.Image != "myapp:1.0.1" ||
		f.ResolvedImage != "image-registry.openshift-image-registry.svc:5000/os-seed-nostream/myapp@"+d1 ||
		harness.Detail(f, "cause") != "StreamCreatedAfterTemplate" || !strings.Contains(f.Message, `pods pull "docker.io/library/myapp:1.0.1"`) {
		t.Errorf("finding %+v", f)
	}
	fixed(t, ns, "myapp:1.0.1", "image-registry.openshift-image-registry.svc:5000/os-seed-nostream/myapp@"+d1)
}

// TestSeedAppliedBeforeTag: the stream exists (lookup on) but tag 1.0.1 has no image yet. Admission
// writes the stream's internal-registry tag, not a digest; once the tag is pushed, the template
// keeps the unpinned tag while admission would now write the digest for the same manifest.
// kwok's registry has no internal-registry tags, so the pods stay failing after the push; on a
// real registry they may start, each pulling whatever the tag points to then.
func TestSeedAppliedBeforeTag(t *testing.T) {
	t.Parallel()
	const ns = "os-seed-notag"
	ctx := context.Background()
	namespace(t, ns, nil)
	if err := scenario.Volumes(ctx, cs, ns, 1); err != nil {
		t.Fatal(err)
	}
	stream(t, ns, "myapp", true)
	time.Sleep(1100 * time.Millisecond)
	set := createSet(t, scenario.StatefulSet(ns, "web", "myapp:1.0.1", 1, true))
	want(t, "stored image (tag missing)", set.Spec.Template.Spec.Containers[0].Image,
		"image-registry.openshift-image-registry.svc:5000/os-seed-notag/myapp:1.0.1")
	waitReason(t, ns, "web-0", "ImagePullBackOff")

	// Before the push: the tag has no image, the registry nothing to serve.
	rep := check(t, ns, 1)
	only(t, rep, "ImageStreamTagNotFound/", "CurrentRevisionFailing/web-0")
	if f := harness.ByCode(rep, apiv1.ImageStreamTagNotFound)[0]; f.Severity != apiv1.SeverityError ||
		f.Image != "image-registry.openshift-image-registry.svc:5000/os-seed-notag/myapp:1.0.1" || harness.Detail(f, "tag") != "1.0.1" {
		t.Errorf("finding %+v", f)
	}

	time.Sleep(1100 * time.Millisecond)
	push(t, ns, "myapp", "1.0.1", d1, "image-registry.openshift-image-registry.svc:5000/os-seed-notag/myapp@"+d1)
	want(t, "stored image after the push", storedImage(t, ns, "web"), "image-registry.openshift-image-registry.svc:5000/os-seed-notag/myapp:1.0.1")
	want(t, "what admission writes for the same manifest now", dryRunImage(t, scenario.StatefulSet(ns, "web", "myapp:1.0.1", 1, true)),
		"image-registry.openshift-image-registry.svc:5000/os-seed-notag/myapp@"+d1)
	// An UPDATE that keeps the image is not re-resolved.
	if _, err := cs.AppsV1().StatefulSets(ns).Update(ctx, setWithLabel(t, ns, "web"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, "stored image after an update keeping it", storedImage(t, ns, "web"), "image-registry.openshift-image-registry.svc:5000/os-seed-notag/myapp:1.0.1")
	stuck(t, ns)

	rep = check(t, ns, 1)
	only(t, rep, "UnresolvedImageReference/", "CurrentRevisionFailing/web-0")
	f := harness.ByCode(rep, apiv1.UnresolvedImageReference)[0]
	if f.Severity != apiv1.SeverityError || f.Image != "image-registry.openshift-image-registry.svc:5000/os-seed-notag/myapp:1.0.1" ||
		f.ResolvedImage != "image-registry.openshift-image-registry.svc:5000/os-seed-notag/myapp@"+d1 ||
		harness.Detail(f, "cause") != "TagCreatedAfterTemplate" || !strings.Contains(f.Message, "not pinned") {
		t.Errorf("finding %+v", f)
	}
	fixed(t, ns, "image-registry.openshift-image-registry.svc:5000/os-seed-notag/myapp:1.0.1",
		"image-registry.openshift-image-registry.svc:5000/os-seed-notag/myapp@"+d1)
}

// setWithLabel returns the stored StatefulSet with a new label: an update that keeps the image.
func setWithLabel(t *testing.T, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	set, err := cs.AppsV1().StatefulSets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	set.Labels["touched"] = "yes"
	return set
}

// TestOperatorOwned: a StatefulSet with a controller owner (an operator's) is skipped by the real
// plugin, so the local name stays although stream and tag exist; stsdiag says admission never
// resolves it and why, and fix does not patch what the owner would revert.
func TestOperatorOwned(t *testing.T) {
	t.Parallel()
	const ns = "os-owned"
	ctx := context.Background()
	namespace(t, ns, nil)
	if err := cluster.InstallOwnerCRD(ctx, restConfig); err != nil {
		t.Fatal(err)
	}
	stream(t, ns, "myapp", true)
	push(t, ns, "myapp", "1.0.1", d1, "image-registry.openshift-image-registry.svc:5000/os-owned/myapp@"+d1)
	dyn := dynamic.NewForConfigOrDie(restConfig)
	owner, err := dyn.Resource(cluster.OwnerResource).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.stsdiag.io/v1", "kind": "Owner", "metadata": map[string]any{"name": "operator"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	set := scenario.StatefulSet(ns, "web", "myapp:1.0.1", 1, false)
	set.OwnerReferences = []metav1.OwnerReference{{APIVersion: "e2e.stsdiag.io/v1", Kind: "Owner", Name: "operator", UID: owner.GetUID(), Controller: ptr.To(true)}}
	want(t, "stored image (controller-owned)", createSet(t, set).Spec.Template.Spec.Containers[0].Image, "myapp:1.0.1")
	set.OwnerReferences = nil
	want(t, "the same manifest without owner", dryRunImage(t, set), "image-registry.openshift-image-registry.svc:5000/os-owned/myapp@"+d1)
	waitReason(t, ns, "web-0", "ImagePullBackOff")
	stuck(t, ns)

	rep := check(t, ns, 1)
	only(t, rep, "CurrentRevisionFailing/web-0", "ImageResolutionSkipped/") // errors first
	f := harness.ByCode(rep, apiv1.ImageResolutionSkipped)[0]
	if harness.Detail(f, "reason") != "ControllerOwned" || f.Image != "myapp:1.0.1" || !strings.Contains(f.Remedy, "Owner operator") {
		t.Errorf("finding %+v", f)
	}
	// The owner would revert a patch: fix plans none.
	r := stsdiagRun(t, "fix", "-n", ns, "--dry-run=client", "-o", "json")
	for _, a := range harness.DecodeFix(t, r.Stdout).Actions {
		if a.Action == apiv1.PatchImage {
			t.Errorf("fix plans a patch of an operator-owned StatefulSet: %+v", a)
		}
	}
}

// TestForcedResolveNames: resolve-names "*" on the template makes the plugin resolve even a
// registry-qualified name as a stream of the namespace, lookup off or not; stsdiag agrees and
// reports nothing.
func TestForcedResolveNames(t *testing.T) {
	t.Parallel()
	const ns = "os-forced"
	namespace(t, ns, nil)
	stream(t, ns, "app", false)
	push(t, ns, "app", "v1", d1, "image-registry.openshift-image-registry.svc:5000/os-forced/app@"+d1)
	set := scenario.StatefulSet(ns, "web", "quay.io/team/app:v1", 1, false)
	set.Spec.Template.Annotations = map[string]string{"alpha.image.policy.openshift.io/resolve-names": "*"}
	want(t, "stored image (forced)", createSet(t, set).Spec.Template.Spec.Containers[0].Image,
		"image-registry.openshift-image-registry.svc:5000/os-forced/app@"+d1)
	if err := scenario.WaitRolloutComplete(context.Background(), cs, ns, "web", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	only(t, check(t, ns, 0))
}

// TestReferencePolicies: a tag mapped from quay.io under referencePolicy Local resolves to the
// internal registry by digest, under Source to the source by digest.
func TestReferencePolicies(t *testing.T) {
	t.Parallel()
	const ns = "os-refpolicy"
	namespace(t, ns, nil)
	for _, c := range []struct {
		stream string
		policy imagev1.TagReferencePolicyType
		source string
		stored string
	}{
		{"extlocal", imagev1.LocalTagReferencePolicy, "quay.io/team/ext@" + d2, "image-registry.openshift-image-registry.svc:5000/os-refpolicy/extlocal@" + d2},
		{"extsource", imagev1.SourceTagReferencePolicy, "quay.io/stsdiag/ext@" + d2, "quay.io/stsdiag/ext@" + d2},
	} {
		stream(t, ns, c.stream, true, imagev1.TagReference{Name: "1.0", ReferencePolicy: imagev1.TagReferencePolicy{Type: c.policy}})
		push(t, ns, c.stream, "1.0", d2, c.source)
		set := scenario.StatefulSet(ns, c.stream, c.stream+":1.0", 1, false)
		want(t, "stored image ("+string(c.policy)+")", createSet(t, set).Spec.Template.Spec.Containers[0].Image, c.stored)
		if err := scenario.WaitRolloutComplete(context.Background(), cs, ns, c.stream, 90*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	only(t, check(t, ns, 0))
}

// TestTagEventWithoutImage: a spec tag with reference: true gives a tag event without an image ID;
// the ImageStreamTag is not found, so admission writes the internal-registry tag, which the
// registry cannot serve.
func TestTagEventWithoutImage(t *testing.T) {
	t.Parallel()
	const ns = "os-noimage"
	namespace(t, ns, nil)
	stream(t, ns, "noimage", true, imagev1.TagReference{Name: "1", Reference: true,
		From: &corev1.ObjectReference{Kind: "DockerImage", Name: "quay.io/stsdiag/noimage:1"}})
	is, err := images.ImageV1().ImageStreams(ns).Get(context.Background(), "noimage", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(is.Status.Tags) != 1 || len(is.Status.Tags[0].Items) != 1 || is.Status.Tags[0].Items[0].Image != "" ||
		is.Status.Tags[0].Items[0].DockerImageReference != "quay.io/stsdiag/noimage:1" {
		t.Fatalf("status.tags %+v, want one event of quay.io/stsdiag/noimage:1 without image", is.Status.Tags)
	}
	want(t, "stored image (event without image)", createSet(t, scenario.StatefulSet(ns, "web", "noimage:1", 1, false)).Spec.Template.Spec.Containers[0].Image,
		"image-registry.openshift-image-registry.svc:5000/os-noimage/noimage:1")
	waitReason(t, ns, "web-0", "ImagePullBackOff")
	stuck(t, ns)
	rep := check(t, ns, 1)
	only(t, rep, "ImageStreamTagNotFound/", "CurrentRevisionFailing/web-0")
	if f := harness.ByCode(rep, apiv1.ImageStreamTagNotFound)[0]; !strings.Contains(f.Message, "no image ID") {
		t.Errorf("finding %+v", f)
	}
}

// TestImageTrigger: image.openshift.io/triggers follows app:1, but no trigger controller acted
// (none runs here, as when openshift-controller-manager is down or the annotation was added by
// hand): the template keeps an image that does not start. stsdiag reports the stale trigger with
// the value the controller writes, and fix applies it.
func TestImageTrigger(t *testing.T) {
	t.Parallel()
	const ns = "os-trigger"
	namespace(t, ns, nil)
	if err := scenario.Volumes(context.Background(), cs, ns, 1); err != nil {
		t.Fatal(err)
	}
	stream(t, ns, "app", false, imagev1.TagReference{Name: "1", ReferencePolicy: imagev1.TagReferencePolicy{Type: imagev1.LocalTagReferencePolicy}})
	push(t, ns, "app", "1", d1, "quay.io/team/app@"+d1)
	set := scenario.StatefulSet(ns, "web", "nginx:1.27-typo", 1, true)
	set.Annotations = map[string]string{"image.openshift.io/triggers": `[{"from":{"kind":"ImageStreamTag","name":"app:1"},"fieldPath":"spec.template.spec.containers[?(@.name==\"web\")].image"}]`}
	want(t, "stored image (no stream nginx)", createSet(t, set).Spec.Template.Spec.Containers[0].Image, "nginx:1.27-typo")
	waitReason(t, ns, "web-0", "ImagePullBackOff")
	stuck(t, ns)
	rep := check(t, ns, 1)
	only(t, rep, "ImageTriggerStale/", "CurrentRevisionFailing/web-0")
	f := harness.ByCode(rep, apiv1.ImageTriggerStale)[0]
	if f.Severity != apiv1.SeverityError || f.ResolvedImage != "image-registry.openshift-image-registry.svc:5000/os-trigger/app@"+d1 {
		t.Errorf("finding %+v", f)
	}
	fixed(t, ns, "nginx:1.27-typo", "image-registry.openshift-image-registry.svc:5000/os-trigger/app@"+d1)
}
