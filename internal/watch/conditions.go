package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// ConditionStalled is the standard abnormal-true condition kstatus (Flux, Helm 4, kpt, cli-utils)
// reads: Stalled=True makes status.Compute say Failed. watch owns this condition on StatefulSets.
const ConditionStalled appsv1.StatefulSetConditionType = "Stalled"

// ReasonRecovered is the reason of Stalled=False once a StatefulSet has no error finding.
const ReasonRecovered = "NoErrorFinding"

// keepsConditionsFrom is the first release whose StatefulSet controller keeps conditions it did
// not write: it copies set.Status.Conditions into the status it computes
// (pkg/controller/statefulset/stateful_set_control.go:591@v1.37.2). Up to v1.36 it builds the
// status from scratch (stateful_set_control.go:574@v1.35.3) and its next status update drops a
// foreign condition, so watch writes it again when its informer sees that update.
var keepsConditionsFrom = version.MustParseGeneric("v1.37.0")

// conditions tracks what watch wrote, to tell a re-assertion from a first write.
type conditions struct {
	mu       sync.Mutex
	asserted map[string]string // StatefulSet key → reason of the Stalled=True it last wrote
	patched  map[string]string // StatefulSet key → resourceVersion of the object last patched
	disabled bool              // no permission to patch statefulsets/status: said once, then off
}

// stalledWanted is the Stalled condition a StatefulSet should carry: True with the first error
// finding that held for minStuck (findings sorted as in a report); False when there is no error
// finding at all; nil when it should be left as it is (an error finding that has not held yet).
// recheck > 0 is when an error finding will have held for minStuck. pod is the finding's pod.
func stalledWanted(state *setState, now time.Time, minStuck time.Duration) (want *appsv1.StatefulSetCondition, pod string, recheck time.Duration) {
	var errorKeys []string
	for k, f := range state.findings {
		if f.Severity == apiv1.SeverityError {
			errorKeys = append(errorKeys, k)
		}
	}
	due, next := state.held.Due(now, minStuck, errorKeys)
	if !next.IsZero() {
		recheck = next.Sub(now)
	}
	if len(errorKeys) == 0 {
		return &appsv1.StatefulSetCondition{Type: ConditionStalled, Status: corev1.ConditionFalse, Reason: ReasonRecovered,
			Message: "stsdiag finds no error"}, "", 0
	}
	if len(due) == 0 {
		return nil, "", recheck
	}
	held := make([]stuck.Finding, 0, len(due))
	for _, k := range due {
		held = append(held, state.findings[k])
	}
	model.SortFindings(held)
	f := held[0]
	return &appsv1.StatefulSetCondition{Type: ConditionStalled, Status: corev1.ConditionTrue, Reason: string(f.Code), Message: conditionMessage(f)}, f.Pod, recheck
}

// current reports whether the condition on the object already says what is wanted. The message
// is not compared word for word: it follows the pod's state (ErrImagePull, then
// ImagePullBackOff, at each back-off of the kubelet), and rewriting it each time would make a
// status write per back-off. Same status, same code and same pod is the same verdict.
func current(have, want *appsv1.StatefulSetCondition, pod string) bool {
	if have == nil || have.Status != want.Status || have.Reason != want.Reason {
		return false
	}
	if pod != "" {
		return strings.HasPrefix(have.Message, pod+": ")
	}
	return have.Message == want.Message
}

// conditionMessage is the finding's short message, its pod first and its remedy last.
func conditionMessage(f stuck.Finding) string {
	msg := f.Short
	if msg == "" {
		msg = f.Message
	}
	if f.Pod != "" {
		msg = f.Pod + ": " + msg
	}
	if f.Remedy != "" {
		msg += ". Remedy: " + f.Remedy
	}
	return truncate(msg)
}

func findCondition(set *appsv1.StatefulSet) *appsv1.StatefulSetCondition {
	for i := range set.Status.Conditions {
		if set.Status.Conditions[i].Type == ConditionStalled {
			return &set.Status.Conditions[i]
		}
	}
	return nil
}

// stalledPatch is a strategic merge patch of the status subresource that sets only the Stalled
// condition (conditions merge on their type; every other condition and field is left alone).
func stalledPatch(c appsv1.StatefulSetCondition) ([]byte, error) {
	return json.Marshal(map[string]any{"status": map[string]any{"conditions": []appsv1.StatefulSetCondition{c}}})
}

// syncCondition brings the Stalled condition of one StatefulSet to what its findings say. It is
// called on every sync, so it also sees the controller's status updates that dropped the
// condition (≤ v1.36) and writes it again.
func (c *Controller) syncCondition(ctx context.Context, key string, set *appsv1.StatefulSet, state *setState, now time.Time, serverVersion string) {
	c.conds.mu.Lock()
	disabled := c.conds.disabled
	c.conds.mu.Unlock()
	if disabled || set == nil || set.DeletionTimestamp != nil {
		return
	}
	want, pod, recheck := stalledWanted(state, now, c.opts.Hold)
	if recheck > 0 {
		c.queue.AddAfter(key, recheck+50*time.Millisecond)
	}
	have := findCondition(set)
	switch {
	case want == nil:
		return
	case want.Status == corev1.ConditionFalse && (have == nil || have.Status != corev1.ConditionTrue):
		return // never written, already cleared, or dropped by the controller: nothing to clear
	case current(have, want, pod):
		return
	case c.conds.cacheBehind(key, set.ResourceVersion):
		return // our last patch is not in the informer's cache yet; its event will queue the set again
	}
	want.LastTransitionTime = metav1.NewTime(now)
	if have != nil && have.Status == want.Status {
		want.LastTransitionTime = have.LastTransitionTime
	}
	c.writeStalled(ctx, key, set, *want, have, serverVersion)
}

// writeStalled patches the Stalled condition want onto the StatefulSet's status (have: the one
// it carries) and records and says what it wrote. Without the right to, the condition is off from
// then on, said once.
func (c *Controller) writeStalled(ctx context.Context, key string, set *appsv1.StatefulSet, want appsv1.StatefulSetCondition, have *appsv1.StatefulSetCondition, serverVersion string) {
	body, err := stalledPatch(want)
	if err != nil {
		c.logf("%s: Stalled condition: %v", key, err)
		return
	}
	_, err = c.clients.Kube.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.StrategicMergePatchType, body,
		metav1.PatchOptions{FieldManager: "stsdiag"}, "status")
	c.conds.mu.Lock()
	defer c.conds.mu.Unlock()
	switch {
	case apierrors.IsForbidden(err):
		c.conds.disabled = true
		c.logf("warning: cannot patch statefulsets/status (%v): the Stalled condition is off; grant it (deploy/watch) or pass --no-conditions", err)
		return
	case apierrors.IsNotFound(err):
		return
	case err != nil:
		c.logf("%s: Stalled condition: %v (retrying)", key, err)
		c.queue.AddAfter(key, 5*time.Second)
		return
	}
	if c.conds.asserted == nil {
		c.conds.asserted, c.conds.patched = map[string]string{}, map[string]string{}
	}
	c.conds.patched[key] = set.ResourceVersion
	previous, reasserted := c.conds.asserted[key]
	if want.Status == corev1.ConditionTrue {
		c.conds.asserted[key] = want.Reason
	} else {
		delete(c.conds.asserted, key)
	}
	switch {
	case want.Status == corev1.ConditionFalse:
		c.logf("%s: Stalled=False (%s)", key, want.Reason)
	case reasserted && have == nil && previous == want.Reason:
		c.logf("%s: Stalled=True (%s) written again: %s", key, want.Reason, droppedBy(serverVersion))
	default:
		c.logf("%s: Stalled=True (%s): %s", key, want.Reason, want.Message)
	}
}

// cacheBehind reports whether the object seen is the one the last patch of key was made from.
func (c *conditions) cacheBehind(key, resourceVersion string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	from, ok := c.patched[key]
	return ok && resourceVersion != "" && from == resourceVersion
}

// droppedBy explains why a condition watch wrote is gone.
func droppedBy(serverVersion string) string {
	rules, err := stuck.RulesFor(serverVersion, nil)
	if err != nil {
		return "the condition was removed"
	}
	if v, err := version.ParseGeneric(rules.Version); err == nil && !v.AtLeast(keepsConditionsFrom) {
		return fmt.Sprintf("the StatefulSet controller of %s rewrote status without it", rules.Version)
	}
	return "someone removed it"
}

// ConditionReconciling is the kstatus condition written while a canary runs (kstatus reports
// InProgress for Reconciling=True).
const ConditionReconciling appsv1.StatefulSetConditionType = apiv1.ConditionReconciling

// setReconciling writes the kstatus Reconciling condition (unless --no-conditions) when it differs.
func (c *Controller) setReconciling(ctx context.Context, key string, set *appsv1.StatefulSet, status corev1.ConditionStatus, reason, message string) {
	if c.opts.NoConditions {
		return
	}
	var have *appsv1.StatefulSetCondition
	for i := range set.Status.Conditions {
		if set.Status.Conditions[i].Type == ConditionReconciling {
			have = &set.Status.Conditions[i]
		}
	}
	if (have == nil && status == corev1.ConditionFalse) || (have != nil && have.Status == status && have.Reason == reason && have.Message == message) {
		return
	}
	cond := appsv1.StatefulSetCondition{Type: ConditionReconciling, Status: status, Reason: reason, Message: truncate(message), LastTransitionTime: metav1.NewTime(c.clock.Now())}
	if have != nil && have.Status == status {
		cond.LastTransitionTime = have.LastTransitionTime
	}
	body, err := stalledPatch(cond)
	if err == nil {
		_, err = c.clients.Kube.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.StrategicMergePatchType, body,
			metav1.PatchOptions{FieldManager: "stsdiag"}, "status")
	}
	if err != nil && !apierrors.IsNotFound(err) {
		c.logf("%s: Reconciling condition: %v", key, err)
	}
}
