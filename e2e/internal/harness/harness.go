// Package harness holds what every e2e suite (kwok, real node, OpenShift) does the same way:
// build and run the stsdiag binary, decode its documents, prove a premise on the real system, and
// check that a repair kept the volumes.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// Build compiles kubectl-stsdiag into dir and returns its path. It builds in the product's module
// (github.com/stsdiag/stsdiag, which e2e's go.mod replaces with ../) as `make build` does, so the
// binary under test has the product's dependencies, not the versions e2e's own go.mod selects.
func Build(dir string) (string, error) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/stsdiag/stsdiag").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("finding the stsdiag module: %w", err)
	}
	bin, err := filepath.Abs(filepath.Join(dir, "kubectl-stsdiag"))
	if err != nil {
		return "", err
	}
	build := exec.Command("go", "build", "-o", bin, "./cmd/kubectl-stsdiag")
	build.Dir = strings.TrimSpace(string(root))
	// Static, as make build, the release and the image build it.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building kubectl-stsdiag: %w", err)
	}
	return bin, nil
}

// Result is what a command printed and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs bin with args against kubeconfig (dir first on PATH, so `kubectl stsdiag` finds the
// built plugin), with extra environment variables, and logs the command and its output.
func Run(t *testing.T, kubeconfig, dir string, env []string, bin string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+dir+":"+os.Getenv("PATH"), "NO_COLOR=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s %v: %v", bin, args, err)
	}
	t.Logf("$ %s %s → exit %d\n%s%s", bin, strings.Join(args, " "), code, out.String(), errOut.String())
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// DecodeReport decodes check's JSON report, failing the test unless it is one.
func DecodeReport(t *testing.T, stdout string) apiv1.Report {
	t.Helper()
	var rep apiv1.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, stdout)
	}
	if rep.APIVersion != "stsdiag/v1" || rep.Kind != "Report" {
		t.Fatalf("report apiVersion/kind = %q/%q", rep.APIVersion, rep.Kind)
	}
	return rep
}

// DecodeFix decodes fix's JSON result, failing the test unless it is one.
func DecodeFix(t *testing.T, stdout string) apiv1.FixResult {
	t.Helper()
	var res apiv1.FixResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Kind != "FixResult" || res.APIVersion != "stsdiag/v1" {
		t.Fatalf("stdout is not a FixResult (%v):\n%s", err, stdout)
	}
	return res
}

// ByCode returns the findings of a report with one code.
func ByCode(rep apiv1.Report, code apiv1.Code) []apiv1.Finding {
	var out []apiv1.Finding
	for _, f := range rep.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

// FindingOf returns the finding of a code about a pod, or nil.
func FindingOf(rep apiv1.Report, code apiv1.Code, pod string) *apiv1.Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Code == code && rep.Findings[i].Pod == pod {
			return &rep.Findings[i]
		}
	}
	return nil
}

// Codes lists a report's findings as code/pod.
func Codes(rep apiv1.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, string(f.Code)+"/"+f.Pod)
	}
	return out
}

// Errors lists a report's error findings as code/pod.
func Errors(rep apiv1.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Severity == apiv1.SeverityError {
			out = append(out, string(f.Code)+"/"+f.Pod)
		}
	}
	return out
}

// Details returns a finding's details as the JSON document has them, by key.
func Details(f apiv1.Finding) map[string]any {
	var out map[string]any
	data, err := json.Marshal(f.Details)
	if err != nil || json.Unmarshal(data, &out) != nil {
		return nil
	}
	return out
}

// Detail reads a string at a path of a finding's details (as decoded from JSON).
func Detail(f apiv1.Finding, keys ...string) string {
	var v any = Details(f)
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

// Settled reads until two reads 2 s apart agree (at most 20 s) and returns that state: a
// premise's clock starts once the controller has written the status of what it just did.
func Settled[T comparable](read func() T) T {
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

// HoldsFor fails the test unless premise holds at every check (every 2 s) for d.
func HoldsFor(ctx context.Context, t *testing.T, d time.Duration, premise func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if err := premise(ctx); err != nil {
			t.Fatalf("the premise does not hold on the real system: %v", err)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(2 * time.Second)
	}
}

// ProvenStuck proves on the real controller that a StatefulSet's rollout does not move for d:
// its status (ready and updated replicas, revisions) and pod 0 (object, revision, readiness)
// stay as they are, and not every replica is Ready.
func ProvenStuck(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, d time.Duration) {
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
	caughtUp(ctx, cs, ns, name)
	first := Settled(read)
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

// MarkerAnnotation marks claims before a repair, so that a claim recreated under the same name
// is told apart from the one that was kept.
const MarkerAnnotation = "stsdiag.e2e/marker"

// Claims returns the PVC UIDs of a namespace.
func Claims(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) map[string]types.UID {
	t.Helper()
	list, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, c := range list.Items {
		out[c.Name] = c.UID
	}
	return out
}

// MarkClaims annotates every claim of a namespace with MarkerAnnotation and returns their UIDs.
func MarkClaims(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) map[string]types.UID {
	t.Helper()
	list, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("no claims to mark (%v)", err)
	}
	for i := range list.Items {
		c := &list.Items[i]
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[MarkerAnnotation] = "written-before-fix"
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return Claims(ctx, t, cs, ns)
}

// ClaimsKept fails unless every claim of before is still the same object with its marker.
func ClaimsKept(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, before map[string]types.UID) {
	t.Helper()
	for name, uid := range before {
		c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("claim %s: %v", name, err)
		}
		if c.UID != uid || c.Annotations[MarkerAnnotation] != "written-before-fix" {
			t.Errorf("claim %s was replaced or lost its marker (uid %s → %s)", name, uid, c.UID)
		}
	}
}

// PodReady says whether the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// AllReadyOnUpdateRevision fails unless every replica (pods labelled app=name) runs the update
// revision and is Ready.
func AllReadyOnUpdateRevision(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != int(*set.Spec.Replicas) {
		t.Fatalf("%d pods, want %d", len(pods.Items), *set.Spec.Replicas)
	}
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready || p.Labels[appsv1.ControllerRevisionHashLabelKey] != set.Status.UpdateRevision {
			t.Errorf("pod %s: ready %v, revision %s, update revision %s", p.Name, ready, p.Labels[appsv1.ControllerRevisionHashLabelKey], set.Status.UpdateRevision)
		}
	}
}

// caughtUp waits (at most 30 s) until the controller's status of a StatefulSet accounts for its
// pods as they are: the generation observed, and updatedReplicas equal to the pods on the update
// revision. A loaded controller writes the status of a pod it created seconds later, and a
// premise's clock must not start before it has.
func caughtUp(ctx context.Context, cs kubernetes.Interface, ns, name string) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
		if err != nil {
			return
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return
		}
		updated := int32(0)
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Labels[appsv1.ControllerRevisionHashLabelKey] == set.Status.UpdateRevision {
				updated++
			}
		}
		if set.Status.ObservedGeneration >= set.Generation && set.Status.UpdatedReplicas == updated {
			return
		}
	}
}

// NamespaceState is every object of a namespace a command could have written (preflight's
// tests compare it before and after), each with its
// UID and resourceVersion; pods with their UID, generation, labels and annotations instead (the
// simulated kubelet rewrites the status of a pod whose image pull fails every few seconds). No
// Event is compared: the controllers and the scheduler post theirs; the audit log shows
// preflight posts none.
func NamespaceState(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) string {
	t.Helper()
	var lines []string
	add := func(kind string, items []metav1.Object, err error) {
		if err != nil {
			t.Fatalf("listing %s: %v", kind, err)
		}
		for _, o := range items {
			lines = append(lines, fmt.Sprintf("%s/%s uid=%s rv=%s", kind, o.GetName(), o.GetUID(), o.GetResourceVersion()))
		}
	}
	objects := func(n int, at func(int) metav1.Object) []metav1.Object {
		out := make([]metav1.Object, n)
		for i := range out {
			out[i] = at(i)
		}
		return out
	}
	opts := metav1.ListOptions{}
	sets, err := cs.AppsV1().StatefulSets(ns).List(ctx, opts)
	add("statefulset", objects(len(sets.Items), func(i int) metav1.Object { return &sets.Items[i] }), err)
	revs, err := cs.AppsV1().ControllerRevisions(ns).List(ctx, opts)
	add("controllerrevision", objects(len(revs.Items), func(i int) metav1.Object { return &revs.Items[i] }), err)
	pvcs, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
	add("pvc", objects(len(pvcs.Items), func(i int) metav1.Object { return &pvcs.Items[i] }), err)
	svcs, err := cs.CoreV1().Services(ns).List(ctx, opts)
	add("service", objects(len(svcs.Items), func(i int) metav1.Object { return &svcs.Items[i] }), err)
	sas, err := cs.CoreV1().ServiceAccounts(ns).List(ctx, opts)
	add("serviceaccount", objects(len(sas.Items), func(i int) metav1.Object { return &sas.Items[i] }), err)
	quotas, err := cs.CoreV1().ResourceQuotas(ns).List(ctx, opts)
	add("resourcequota", objects(len(quotas.Items), func(i int) metav1.Object { return &quotas.Items[i] }), err)
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
	add("configmap", objects(len(cms.Items), func(i int) metav1.Object { return &cms.Items[i] }), err)
	secrets, err := cs.CoreV1().Secrets(ns).List(ctx, opts)
	add("secret", objects(len(secrets.Items), func(i int) metav1.Object { return &secrets.Items[i] }), err)
	n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	add("namespace", []metav1.Object{n}, err)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		lines = append(lines, fmt.Sprintf("pod/%s uid=%s generation=%d labels=%v annotations=%v", p.Name, p.UID, p.Generation, p.Labels, p.Annotations))
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}
