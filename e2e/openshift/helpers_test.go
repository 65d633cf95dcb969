package openshift

import (
	"context"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// Digests of the suite's images (sha256 of "test" and of "hello", as in the CRD suite).
const (
	d1 = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	d2 = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	// registry is the internal registry hostname openshift-apiserver and the plugin run with.
	registry = "image-registry.openshift-image-registry.svc:5000"
)

func buildStsdiag(dir string) (string, error) { return harness.Build(dir) }

// stsdiagRun runs the built binary against the suite's cluster.
func stsdiagRun(t *testing.T, args ...string) harness.Result {
	t.Helper()
	return harness.Run(t, kubeconfig, binDir, nil, stsdiag, args...)
}

// check runs check -o json on a namespace and wants the exit code.
func check(t *testing.T, ns string, code int) apiv1.Report {
	t.Helper()
	r := stsdiagRun(t, "check", "-n", ns, "-o", "json")
	rep := harness.DecodeReport(t, r.Stdout)
	if r.Code != code || !rep.OpenShift {
		t.Fatalf("check -n %s: exit %d (want %d), openshift %v\n%s", ns, r.Code, code, rep.OpenShift, r.Stderr)
	}
	return rep
}

// only wants exactly these findings (code/pod, in report order).
func only(t *testing.T, rep apiv1.Report, want ...string) {
	t.Helper()
	got := harness.Codes(rep)
	if len(got) != len(want) {
		t.Fatalf("findings %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("findings %v, want %v", got, want)
		}
	}
}

// namespace creates a namespace with labels, deleted when the test ends (so that nothing later
// over all namespaces sees it). A namespace that exists already ("openshift": openshift-apiserver
// creates it) is used as it is, and kept.
func namespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		return
	} else if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
}

// stream creates an ImageStream with spec tags and returns it as openshift-apiserver stored it.
func stream(t *testing.T, ns, name string, lookup bool, tags ...imagev1.TagReference) *imagev1.ImageStream {
	t.Helper()
	is := &imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: lookup}, Tags: tags}}
	got, err := images.ImageV1().ImageStreams(ns).Create(context.Background(), is, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ImageStream %s/%s: %v", ns, name, err)
	}
	return got
}

// push records an image under stream:tag the way the integrated registry does after a push: an
// ImageStreamMapping (the Image object is created if missing; the stream must exist).
func push(t *testing.T, ns, stream, tag, digest, pullSpec string) {
	t.Helper()
	m := &imagev1.ImageStreamMapping{ObjectMeta: metav1.ObjectMeta{Name: stream, Namespace: ns}, Tag: tag,
		Image: imagev1.Image{ObjectMeta: metav1.ObjectMeta{Name: digest}, DockerImageReference: pullSpec}}
	if _, err := images.ImageV1().ImageStreamMappings(ns).Create(context.Background(), m, metav1.CreateOptions{}); err != nil {
		t.Fatalf("pushing %s/%s:%s: %v", ns, stream, tag, err)
	}
}

// createSet creates a StatefulSet through admission and returns what the API server stored,
// read back.
func createSet(t *testing.T, set *appsv1.StatefulSet) *appsv1.StatefulSet {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.AppsV1().StatefulSets(set.Namespace).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet %s/%s: %v", set.Namespace, set.Name, err)
	}
	got, err := cs.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// dryRunImage is what admission writes today for the first container of set, created anew
// (server-side dry run: mutating admission runs, nothing is stored).
func dryRunImage(t *testing.T, set *appsv1.StatefulSet) string {
	t.Helper()
	probe := set.DeepCopy()
	probe.Name += "-dry-run"
	probe.ResourceVersion, probe.UID = "", ""
	got, err := cs.AppsV1().StatefulSets(set.Namespace).Create(context.Background(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create of %s/%s: %v", set.Namespace, probe.Name, err)
	}
	return got.Spec.Template.Spec.Containers[0].Image
}

// storedImage is the first container's image of the stored StatefulSet template.
func storedImage(t *testing.T, ns, name string) string {
	t.Helper()
	set, err := cs.AppsV1().StatefulSets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return set.Spec.Template.Spec.Containers[0].Image
}

// want fails the test unless got is the literal want.
func want(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
}

// waitReason waits until a pod's first container waits with reason (kwok's image pulls).
func waitReason(t *testing.T, ns, pod, reason string) {
	t.Helper()
	if err := scenario.WaitPodReason(context.Background(), cs, ns, pod, reason, 90*time.Second); err != nil {
		t.Fatal(err)
	}
}
