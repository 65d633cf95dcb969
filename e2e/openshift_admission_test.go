package e2e

// Issue 11 on the kwok control plane with the ImageStream CRD. No ImagePolicy admission plugin
// or image trigger controller runs here: objects are stored as written, exactly as on OpenShift
// when admission did not rewrite them or the trigger controller did not act. Expected values are
// literal strings.
//
// What OpenShift's own image API and admission produce is proven in e2e/openshift (make
// e2e-openshift): the stream created after the StatefulSet, the tag event without image and the
// stale trigger moved there. What stays here is what the real admission never stores, so only a
// CRD can hold it as the user's history left it: a forced name not rewritten (resolve-names added
// by a later webhook or an older release), a dotted name next to a lookup stream, and invalid
// trigger annotations (stsdiag's parsing, no API behaviour); and it keeps `make e2e` covering
// OpenShift mode without the OpenShift build. A CRD serves no imagestreamtags or images, so the
// real plugin cannot run against it (docs/e2e-openshift.md).

import (
	"context"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

const admDigest = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// TestOpenShiftAdmission runs one feature per case of issue 11, in parallel: each stuck case is
// first proven stuck on the real StatefulSet controller for 30 s (at the same time).
func TestOpenShiftAdmission(t *testing.T) {
	t.Parallel() // isolated namespaces; runs after the serial tests (TestWatch restarts kube-apiserver)
	testenv.TestInParallel(t, admForcedRegistryName(), admDottedName(), admTriggerProblems())
}

// admSetup creates namespace ns (and the ImageStream CRD) and returns the clients.
func admSetup(ctx context.Context, t *testing.T, cfg *envconf.Config, ns string) (kubernetes.Interface, imageclient.Interface) {
	t.Helper()
	images := imageStreams(ctx, t, cfg)
	cs := clientset(t, cfg)
	if err := scenario.Namespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	return cs, images
}

// admEvent is a tag event of the digest admDigest, pulled from ref.
func admEvent(ref string) []imagev1.TagEvent {
	return []imagev1.TagEvent{{Created: metav1.Now(), DockerImageReference: ref, Image: admDigest, Generation: 1}}
}

func admCreate(ctx context.Context, t *testing.T, cs kubernetes.Interface, set *appsv1.StatefulSet) {
	t.Helper()
	if _, err := cs.AppsV1().StatefulSets(set.Namespace).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func admWaitPullBackOff(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	if err := scenario.WaitPodReason(ctx, cs, ns, "web-0", "ImagePullBackOff", 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// admTeardown deletes the namespace, so that later tests over all namespaces (watch -A) do not
// repair these StatefulSets.
func admTeardown(ns string) features.Func {
	return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		if err := clientset(t, cfg).CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
		return ctx
	}
}

func admProvenStuck(ns string) features.Func {
	return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		harness.ProvenStuck(ctx, t, clientset(t, cfg), ns, "web", 30*time.Second)
		return ctx
	}
}

// admCheck runs check -o json on a namespace and wants the exit code.
func admCheck(t *testing.T, cfg *envconf.Config, ns string, code int) apiv1.Report {
	t.Helper()
	r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
	rep := decodeReport(t, r)
	if r.code != code || !rep.OpenShift {
		t.Fatalf("check: exit %d (want %d), openshift %v, findings %v", r.code, code, rep.OpenShift, harness.Codes(rep))
	}
	return rep
}

// admOnly wants exactly these findings (code/pod, in report order).
func admOnly(t *testing.T, rep apiv1.Report, want ...string) {
	t.Helper()
	got := harness.Codes(rep)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("findings %v, want %v", got, want)
	}
}

// admPlannedPatches runs fix --dry-run=client and returns its PatchImage actions.
func admPlannedPatches(t *testing.T, cfg *envconf.Config, ns string) []apiv1.Action {
	t.Helper()
	res := decodeFix(t, stsdiagRun(t, cfg, "fix", "-n", ns, "--dry-run=client", "-o", "json"))
	var out []apiv1.Action
	for _, a := range res.Actions {
		if a.Action == apiv1.PatchImage {
			out = append(out, a)
		}
	}
	return out
}

// Forced name with a registry: resolve-names "*" ignores the registry and namespace of
// quay.io/team/app:v1 and resolves stream "app" of the namespace, even with lookup off.
func admForcedRegistryName() features.Feature {
	const ns = "adm-forced"
	return features.New("resolve-names forced on a name with a registry").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs, images := admSetup(ctx, t, cfg, ns)
			createImageStream(ctx, t, images, ns, "app", false, "image-registry.openshift-image-registry.svc:5000/adm-forced/app",
				streamTag{name: "v1", policy: imagev1.LocalTagReferencePolicy, items: admEvent("quay.io/team/app@" + admDigest)})
			set := scenario.StatefulSet(ns, "web", "quay.io/team/app:v1", 1, false)
			set.Spec.Template.Annotations = map[string]string{"alpha.image.policy.openshift.io/resolve-names": "*"}
			admCreate(ctx, t, cs, set)
			admWaitPullBackOff(ctx, t, cs, ns)
			return ctx
		}).
		Assess("the real controller leaves web stuck for 30s", admProvenStuck(ns)).
		Assess("check: UnresolvedImageReference to the stream's digest, and fix would patch it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			rep := admCheck(t, cfg, ns, 1)
			admOnly(t, rep, "UnresolvedImageReference/", "CurrentRevisionFailing/web-0")
			f := harness.ByCode(rep, apiv1.UnresolvedImageReference)[0]
			if f.Severity != apiv1.SeverityError || f.Image != "quay.io/team/app:v1" ||
				f.ResolvedImage != "image-registry.openshift-image-registry.svc:5000/adm-forced/app@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" ||
				harness.Detail(f, "patch", "to") != "image-registry.openshift-image-registry.svc:5000/adm-forced/app@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" ||
				harness.Detail(f, "cause") != "Unknown" {
				t.Errorf("finding %+v", f)
			}
			patches := admPlannedPatches(t, cfg, ns)
			if len(patches) != 1 || patches[0].From != "quay.io/team/app:v1" ||
				patches[0].To != "image-registry.openshift-image-registry.svc:5000/adm-forced/app@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" {
				t.Errorf("planned patches %+v", patches)
			}
			return ctx
		}).
		Teardown(admTeardown(ns)).Feature()
}

// Dotted name: python3.9:v1 is a registry host to OpenShift, never looked up, even though a
// lookup-enabled stream python3.9 exists.
func admDottedName() features.Feature {
	const ns = "adm-dotted"
	return features.New("a dotted single-segment name").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs, images := admSetup(ctx, t, cfg, ns)
			createImageStream(ctx, t, images, ns, "python3.9", true, "image-registry.openshift-image-registry.svc:5000/adm-dotted/python3.9",
				streamTag{name: "v1", policy: imagev1.LocalTagReferencePolicy, items: admEvent("quay.io/team/python@" + admDigest)})
			admCreate(ctx, t, cs, scenario.StatefulSet(ns, "web", "python3.9:v1", 1, false))
			admWaitPullBackOff(ctx, t, cs, ns)
			return ctx
		}).
		Assess("the real controller leaves web stuck for 30s", admProvenStuck(ns)).
		Assess("check: ImageResolutionSkipped NameParsedAsRegistry, no patch", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			rep := admCheck(t, cfg, ns, 1)
			admOnly(t, rep, "CurrentRevisionFailing/web-0", "ImageResolutionSkipped/")
			f := harness.ByCode(rep, apiv1.ImageResolutionSkipped)[0]
			if f.Severity != apiv1.SeverityWarning || f.Image != "python3.9:v1" || f.ResolvedImage != "" || harness.Detail(f, "reason") != "NameParsedAsRegistry" ||
				f.Remedy != "reference the image by its full pull spec image-registry.openshift-image-registry.svc:5000/adm-dotted/python3.9@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" {
				t.Errorf("finding %+v", f)
			}
			if patches := admPlannedPatches(t, cfg, ns); len(patches) != 0 {
				t.Errorf("fix would patch %+v", patches)
			}
			return ctx
		}).
		Teardown(admTeardown(ns)).Feature()
}

// Each trigger problem on its own StatefulSet (pods healthy), a stale trigger, and a valid trigger
// whose image is current (nothing).
func admTriggerProblems() features.Feature {
	const ns = "adm-triggers"
	const current = "image-registry.openshift-image-registry.svc:5000/adm-triggers/app@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	const web = `spec.template.spec.containers[?(@.name==\"web\")].image`
	sets := []struct {
		name, image, triggers string
		code                  apiv1.Code
		reason                string
	}{
		{"badjson", current, `[{"from":`, apiv1.ImageTriggerInvalid, "InvalidJSON"},
		{"pausedstring", current, `[{"from":{"kind":"ImageStreamTag","name":"app:1"},"fieldPath":"` + web + `","paused":"false"}]`, apiv1.ImageTriggerInvalid, "PausedNotBoolean"},
		{"nocontainer", current, `[{"from":{"kind":"ImageStreamTag","name":"app:1"},"fieldPath":"spec.template.spec.containers[?(@.name==\"db\")].image"}]`, apiv1.ImageTriggerInvalid, "NoSuchContainer"},
		{"noinit", current, `[{"from":{"kind":"ImageStreamTag","name":"app:1"},"fieldPath":"spec.template.spec.initContainers[?(@.name==\"migrate\")].image"}]`, apiv1.ImageTriggerInvalid, "NoSuchContainer"},
		{"dockerimage", current, `[{"from":{"kind":"DockerImage","name":"quay.io/team/app:1"},"fieldPath":"` + web + `"}]`, apiv1.ImageTriggerInvalid, "UnsupportedFrom"},
		{"nostream", current, `[{"from":{"kind":"ImageStreamTag","name":"missing:1"},"fieldPath":"` + web + `"}]`, apiv1.ImageTriggerInvalid, "StreamNotFound"},
		{"notag", current, `[{"from":{"kind":"ImageStreamTag","name":"app:2"},"fieldPath":"` + web + `"}]`, apiv1.ImageTriggerInvalid, "TagNotFound"},
		{"stalewarn", "registry.k8s.io/nginx-slim:0.27", `[{"from":{"kind":"ImageStreamTag","name":"app:1"},"fieldPath":"` + web + `"}]`, apiv1.ImageTriggerStale, ""},
		{"valid", current, `[{"from":{"kind":"ImageStreamTag","name":"app:1"},"fieldPath":"` + web + `"}]`, "", ""},
	}
	return features.New("image trigger problems").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs, images := admSetup(ctx, t, cfg, ns)
			createImageStream(ctx, t, images, ns, "app", false, "image-registry.openshift-image-registry.svc:5000/adm-triggers/app",
				streamTag{name: "1", policy: imagev1.LocalTagReferencePolicy, items: admEvent("quay.io/team/app@" + admDigest)})
			for _, s := range sets {
				set := scenario.StatefulSet(ns, s.name, s.image, 1, false)
				set.Annotations = map[string]string{"image.openshift.io/triggers": s.triggers}
				admCreate(ctx, t, cs, set)
			}
			for _, s := range sets {
				if err := scenario.WaitRolloutComplete(ctx, cs, ns, s.name, 60*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			return ctx
		}).
		Assess("check: one finding per problem, none for the valid trigger, exit 0", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			rep := admCheck(t, cfg, ns, 0)
			got := map[string][]apiv1.Finding{}
			for _, f := range rep.Findings {
				got[f.StatefulSet] = append(got[f.StatefulSet], f)
			}
			for _, s := range sets {
				t.Run(s.name, func(t *testing.T) {
					fs := got[s.name]
					if s.code == "" {
						if len(fs) != 0 {
							t.Fatalf("findings %+v, want none", fs)
						}
						return
					}
					if len(fs) != 1 || fs[0].Code != s.code || fs[0].Severity != apiv1.SeverityWarning || harness.Detail(fs[0], "reason") != s.reason {
						t.Fatalf("findings %+v, want one %s (reason %q)", fs, s.code, s.reason)
					}
				})
			}
			stale := got["stalewarn"][0]
			if stale.ResolvedImage != current || harness.Detail(stale, "patch", "to") != current || harness.Detail(stale, "patch", "from") != "registry.k8s.io/nginx-slim:0.27" {
				t.Errorf("stale trigger %+v", stale)
			}
			return ctx
		}).
		Teardown(admTeardown(ns)).Feature()
}
