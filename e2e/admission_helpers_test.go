package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// provenStuck proves on the real controller that a StatefulSet's rollout does not move for d:
// its status (ready and updated replicas, revisions) and pod 0 (object, revision, readiness)
// stay as they are, and not every replica is Ready. Like TestStuckRollout's premise check.
func provenStuck(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, d time.Duration) {
	t.Helper()
	type state struct {
		ready, updated                  int32
		current, update, podRev, podUID string
		podReady, complete              bool
	}
	read := func() state {
		set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := state{ready: set.Status.ReadyReplicas, updated: set.Status.UpdatedReplicas, current: set.Status.CurrentRevision,
			update: set.Status.UpdateRevision, podRev: pod.Labels[appsv1.ControllerRevisionHashLabelKey], podUID: string(pod.UID),
			complete: set.Status.ReadyReplicas == *set.Spec.Replicas}
		for _, c := range pod.Status.Conditions {
			s.podReady = s.podReady || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		return s
	}
	// The controller may still be writing the status of what it just did (updatedReplicas of a
	// pod it created a moment ago).
	first := settled(read)
	for deadline := time.Now().Add(d); ; time.Sleep(2 * time.Second) {
		now := read()
		if now.complete || now.podReady || now != first {
			t.Fatalf("%s/%s moved by itself (%+v → %+v): the premise does not hold", ns, name, first, now)
		}
		if time.Now().After(deadline) {
			return
		}
	}
}

// streamTag is one tag of a test ImageStream: its spec referencePolicy and its status items.
type streamTag struct {
	name   string
	policy imagev1.TagReferencePolicyType
	items  []imagev1.TagEvent
}

// createImageStream creates an ImageStream and writes its status (repository and tag events)
// through the status subresource, as the image API server would.
func createImageStream(ctx context.Context, t *testing.T, images imageclient.Interface, ns, name string, lookup bool, repo string, tags ...streamTag) {
	t.Helper()
	is := &imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: lookup}}}
	for _, tag := range tags {
		is.Spec.Tags = append(is.Spec.Tags, imagev1.TagReference{Name: tag.name, ReferencePolicy: imagev1.TagReferencePolicy{Type: tag.policy}})
	}
	created, err := images.ImageV1().ImageStreams(ns).Create(ctx, is, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.DockerImageRepository = repo
	for _, tag := range tags {
		if tag.items != nil {
			created.Status.Tags = append(created.Status.Tags, imagev1.NamedTagEventList{Tag: tag.name, Items: tag.items})
		}
	}
	if _, err := images.ImageV1().ImageStreams(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitRevision waits until the StatefulSet has a ControllerRevision and returns its creation time.
func waitRevision(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) time.Time {
	t.Helper()
	var created time.Time
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, nil
		}
		created = list.Items[0].CreationTimestamp.Time
		return true, nil
	})
	if err != nil {
		t.Fatalf("no ControllerRevision in %s: %v", ns, err)
	}
	return created
}

// byCode returns the findings of a report with one code.
func byCode(rep apiv1.Report, code apiv1.Code) []apiv1.Finding {
	var out []apiv1.Finding
	for _, f := range rep.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

// details returns a finding's details as the JSON document has them, by key.
func details(f apiv1.Finding) map[string]any {
	var out map[string]any
	data, err := json.Marshal(f.Details)
	if err != nil || json.Unmarshal(data, &out) != nil {
		return nil
	}
	return out
}

// detail reads a string at a path of a finding's details (as decoded from JSON).
func detail(f apiv1.Finding, keys ...string) string {
	var v any = details(f)
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// settled reads until two reads 2 s apart agree (at most 20 s) and returns that state: a
// premise's clock starts once the controller has written the status of what it just did.
func settled[T comparable](read func() T) T {
	state := read()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(2 * time.Second)
		next := read()
		if next == state {
			break
		}
		state = next
	}
	return state
}
