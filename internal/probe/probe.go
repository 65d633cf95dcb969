// Package probe asks the API server's own admission what it writes for container images: one
// server-side dry-run create (dryRun=All: admission runs, mutating webhooks included, nothing is
// persisted) of a probe pod per namespace and resolve-names setting, holding every image asked
// about there, then reads the images admission left in it. It makes the only writing request of
// a diagnosis, and only with --confirm-with-admission: stuck.Questions says what to ask, the
// resolver reads the answers from the snapshot (snapshot.Admission).
package probe

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck"
)

const (
	// GenerateName is the prefix of every probe pod's name (the server adds the rest).
	GenerateName = "stsdiag-probe-"
	// NameLabel marks a probe pod, for admission policies that want to recognise it.
	NameLabel = "app.kubernetes.io/name"
	// NameValue is NameLabel's value on a probe pod.
	NameValue = "stsdiag-probe"
	// parallel is how many probes run at once (-A asks once per namespace).
	parallel = 4
)

// Pod is the probe asking admission about images in a namespace: a pod, which the ImagePolicy
// plugin resolves like a StatefulSet's template (the default rules cover both, and its pod
// mutator resolves init containers and containers alike: imagereferencemutators/pods.go:240-275@ALG).
// forced sets the resolve-names annotation "*", as a StatefulSet's does for its template
// (imagereferencemutators/meta.go:18-34@ALG).
//
// Nothing in it may draw a refusal for unrelated reasons: no owner (the plugin skips objects with
// a controller owner, imagepolicy.go:198-205@ALG), no volumes, no service account token; a
// securityContext the PodSecurity "restricted" level and OpenShift's restricted-v2 SCC accept;
// and only the first image in a container, the others in init containers, so that LimitRange
// defaults and quota count one container's resources however many images are asked about
// (a pod's effective request is the larger of its containers' sum and any init container's).
//
// (ALG = openshift/apiserver-library-go v0.0.0-20250917015549-a8019f39f670,
// pkg/admission/imagepolicy.)
func Pod(namespace string, forced bool, images []string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: GenerateName, Namespace: namespace, Labels: map[string]string{NameLabel: NameValue}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		},
	}
	if forced {
		pod.Annotations = map[string]string{resolver.ResolveNamesAnnotation: "*"}
	}
	for i, image := range images {
		c := corev1.Container{Name: containerName(i), Image: image, SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}
		if i == 0 {
			pod.Spec.Containers = append(pod.Spec.Containers, c)
		} else {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		}
	}
	return pod
}

func containerName(i int) string { return fmt.Sprintf("image-%d", i) }

// probeKey is one probe: a namespace and resolve-names setting.
type probeKey struct {
	namespace string
	forced    bool
}

// Ask asks admission about every question: one dry-run create per distinct namespace and
// resolve-names setting (a few at once), whatever the number of StatefulSets and pods. Every
// question gets an answer: the image admission wrote, or why it could not be asked. A probe that
// fails also gives a warning, naming the permission when it is the missing one.
func Ask(ctx context.Context, kube kubernetes.Interface, questions []stuck.AdmissionQuestion) (map[stuck.AdmissionQuestion]stuck.AdmissionAnswer, []string) {
	images := map[probeKey][]string{}
	var keys []probeKey
	for _, q := range questions {
		k := probeKey{q.Namespace, q.Forced}
		if _, ok := images[k]; !ok {
			keys = append(keys, k)
		}
		if !slices.Contains(images[k], q.Image) {
			images[k] = append(images[k], q.Image)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return !keys[i].forced && keys[j].forced
	})
	answers := make([]map[string]stuck.AdmissionAnswer, len(keys))
	warnings := make([]string, len(keys))
	var g errgroup.Group
	g.SetLimit(parallel)
	for i, k := range keys {
		g.Go(func() error {
			answers[i], warnings[i] = ask(ctx, kube, k, images[k])
			return nil
		})
	}
	_ = g.Wait()
	out := map[stuck.AdmissionQuestion]stuck.AdmissionAnswer{}
	var warned []string
	for i, k := range keys {
		for image, a := range answers[i] {
			out[stuck.AdmissionQuestion{Namespace: k.namespace, Forced: k.forced, Image: image}] = a
		}
		if warnings[i] != "" {
			warned = append(warned, warnings[i])
		}
	}
	return out, warned
}

// ask sends one probe and answers each of its images.
func ask(ctx context.Context, kube kubernetes.Interface, k probeKey, images []string) (map[string]stuck.AdmissionAnswer, string) {
	out := make(map[string]stuck.AdmissionAnswer, len(images))
	created, err := kube.CoreV1().Pods(k.namespace).Create(ctx, Pod(k.namespace, k.forced, images),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "stsdiag"})
	if err != nil {
		msg := text.FirstLine(err)
		for _, image := range images {
			out[image] = stuck.AdmissionAnswer{Error: msg}
		}
		warning := fmt.Sprintf("image predictions not confirmed with admission: a server-side dry run of a probe pod in namespace %q failed: %s", k.namespace, msg)
		if noPermission(err) {
			warning += " (needs create pods there: deploy/confirm-clusterrole.yaml)"
		}
		return out, warning
	}
	written := map[string]string{}
	for _, list := range [][]corev1.Container{created.Spec.InitContainers, created.Spec.Containers} {
		for _, c := range list {
			written[c.Name] = c.Image
		}
	}
	for i, image := range images {
		if w, ok := written[containerName(i)]; ok && w != "" {
			out[image] = stuck.AdmissionAnswer{Written: w}
		} else {
			out[image] = stuck.AdmissionAnswer{Error: fmt.Sprintf("admission's answer has no container %s", containerName(i))}
		}
	}
	return out, ""
}

// noPermission tells the authorizer's refusal from an admission plugin's (both are 403): only
// the authorizer says "cannot <verb> resource" (k8s.io/apiserver
// pkg/endpoints/handlers/responsewriters/errors.go:60-80@v0.36.1).
func noPermission(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot create resource")
}

// Source is a gather.Source whose snapshots carry admission's answers to the questions the
// resolver has about them (stuck.Questions): one probe per namespace and resolve-names
// setting of each snapshot with a predicted rewrite, none otherwise.
type Source struct {
	Source interface {
		Snapshot(ctx context.Context) (*stuck.Objects, []string, error)
	}
	Kube kubernetes.Interface
}

// Snapshot takes the inner source's snapshot and asks admission about its predictions.
func (s Source) Snapshot(ctx context.Context) (*stuck.Objects, []string, error) {
	snap, warnings, err := s.Source.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	answers, more := Ask(ctx, s.Kube, stuck.Questions(snap))
	snap.Admission = answers
	return snap, append(warnings, more...), nil
}
