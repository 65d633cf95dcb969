package gather

// Pods held by name. An all-namespaces Live holds the pods of StatefulSets only, not every pod
// of the cluster: its pods informer selects the label statefulset.kubernetes.io/pod-name
// (appsv1.StatefulSetPodNameLabel, resource.liveSelector), which the StatefulSet controller sets
// on every pod it creates — newStatefulSetPod → initIdentity → updateIdentity,
// pkg/controller/statefulset/stateful_set_utils.go:523-526 and :455-463@v1.37.2 (:521-524 and
// :446-453@v1.33.13, :454-457 and :393-399@v1.26.2) — and sets again on a pod of its own that
// lacks it (identityMatches requires it, :138-145@v1.37.2; processReplica updates such a pod,
// stateful_set_control.go:498-505@v1.37.2, :453@v1.33.13, :481@v1.26.2). Its other labels do not
// select only StatefulSets' pods: DaemonSets set controller-revision-hash too, and
// apps.kubernetes.io/pod-index is set only under the PodIndexLabel feature gate (beta since
// 1.28; updateIdentity:454-456@v1.33.13, not at all @v1.26.2).
//
// A pod without the label can still hold an ordinal's name: a pod created by hand, or by another
// controller, named <set>-<ordinal> keeps the controller from creating that pod (its create fails
// with AlreadyExists, and a FailedCreate Event says so); a pod the controller adopted (no
// controller, matching the selector and the name, getPodsForStatefulSet, stateful_set.go:387-399
// @v1.37.2) is counted before its label is set. Such pods are looked up by name, with a GET
// each: for every StatefulSet, its lowest heldPerSet ordinals whose pod the cache lacks, and
// every pod its FailedCreate Events say already exists. A lookup is remembered for heldTTL,
// found or not. What no lookup finds is not seen: a pod whose label was removed by hand and that
// holds no ordinal of a live StatefulSet (an orphan of a StatefulSet deleted, or above its
// replicas).

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

const (
	// heldPerSet bounds the ordinals looked up per StatefulSet: its lowest ones without a cached
	// pod (an OrderedReady controller creates the lowest missing ordinal first and waits; a
	// Parallel one's failures to create a higher one are in its FailedCreate Events).
	heldPerSet = 3
	// heldPerRefresh bounds the GETs of one refresh; the names left are looked up by the next.
	heldPerRefresh = 100
	// heldParallel is how many GETs are in flight at once.
	heldParallel = 4
	// heldTTL is how long a lookup (found or not) stands.
	heldTTL = 10 * time.Second
)

// heldPods remembers the lookups of pods by name.
type heldPods struct {
	mu      sync.Mutex
	entries map[string]heldEntry // namespace/name → the last lookup
}

// heldEntry is one lookup: the pod (slimmed), or nil when there was none or the GET failed.
type heldEntry struct {
	pod *corev1.Pod
	at  time.Time
}

// heldNames lists, as namespace/name, the pods the StatefulSets may hold by name that has (the
// pods of the selected cache or snapshot, by namespace/name) does not: each StatefulSet's lowest
// heldPerSet ordinals in [start, start+replicas) without a pod, and the pods a FailedCreate Event
// of one of them says already exist. Sorted, each once.
func heldNames(sets []*appsv1.StatefulSet, events []*corev1.Event, has func(key string) bool) []string {
	seen := map[string]bool{}
	live := make(map[string]bool, len(sets))
	var out []string
	add := func(key string) {
		if !seen[key] && !has(key) {
			seen[key] = true
			out = append(out, key)
		}
	}
	for _, set := range sets {
		live[types.NamespacedName{Namespace: set.Namespace, Name: set.Name}.String()] = true
		start, replicas := 0, int(controller.Replicas(set))
		if set.Spec.Ordinals != nil {
			start = int(set.Spec.Ordinals.Start)
		}
		missing := 0
		for ord := start; ord < start+replicas && missing < heldPerSet; ord++ {
			key := types.NamespacedName{Namespace: set.Namespace, Name: controller.PodName(set.Name, ord)}.String()
			if !has(key) {
				missing++
				add(key)
			}
		}
	}
	for _, e := range events {
		if e.Reason != "FailedCreate" || e.InvolvedObject.Kind != "StatefulSet" || !live[types.NamespacedName{Namespace: e.InvolvedObject.Namespace, Name: e.InvolvedObject.Name}.String()] {
			continue
		}
		if r, ok := facts.ParseEvent(e.Message); ok && r.Kind == facts.KindPod && strings.HasSuffix(r.Error, "already exists") {
			add(types.NamespacedName{Namespace: e.InvolvedObject.Namespace, Name: r.Pod}.String())
		}
	}
	sort.Strings(out)
	return out
}

// refresh GETs the wanted pods not looked up in the last heldTTL (at most heldPerRefresh) and
// forgets the lookups of namespace ("" for all) that are stale and no longer wanted. The warnings
// name the pods that could not be read.
func (h *heldPods) refresh(ctx context.Context, c Clients, namespace string, wanted []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil {
		h.entries = map[string]heldEntry{}
	}
	now := time.Now()
	want := make(map[string]bool, len(wanted))
	var stale []string
	for _, key := range wanted {
		want[key] = true
		if e, ok := h.entries[key]; (!ok || now.Sub(e.at) >= heldTTL) && len(stale) < heldPerRefresh {
			stale = append(stale, key)
		}
	}
	for key, e := range h.entries {
		if ns, _, _ := strings.Cut(key, "/"); !want[key] && (namespace == "" || ns == namespace) && now.Sub(e.at) >= heldTTL {
			delete(h.entries, key)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	found := make([]heldEntry, len(stale))
	errs := make([]error, len(stale))
	slots := make(chan struct{}, heldParallel)
	var wg sync.WaitGroup
	for i, key := range stale {
		ns, name, _ := strings.Cut(key, "/")
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			pod, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			switch {
			case err == nil:
				snapshot.SlimInPlace(pod)
				found[i] = heldEntry{pod: pod, at: now}
			case apierrors.IsNotFound(err):
				found[i] = heldEntry{at: now}
			default:
				// Remembered as not found, so that a GET refused is not asked again on every change.
				found[i], errs[i] = heldEntry{at: now}, err
			}
		}()
	}
	wg.Wait()
	var warnings []string
	for i, key := range stale {
		h.entries[key] = found[i]
		if errs[i] != nil {
			warnings = append(warnings, fmt.Sprintf("cannot tell whether pod %s holds its StatefulSet's name: %v", key, text.FirstLine(errs[i])))
		}
	}
	return warnings
}

// known returns copies of the wanted pods the last lookups found.
func (h *heldPods) known(wanted []string) []corev1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []corev1.Pod
	for _, key := range wanted {
		if e, ok := h.entries[key]; ok && e.pod != nil {
			out = append(out, *e.pod)
		}
	}
	return out
}
