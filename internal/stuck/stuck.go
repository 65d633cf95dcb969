// Package stuck decides, from the StatefulSet controller's own rules, whether a rollout will finish
// by itself. It is pure: it reads a snapshot and returns findings.
package stuck

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/stsdiag/stsdiag/internal/rollout"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kubectl/pkg/util/podutils"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/statefulset"
)

// Options tune the diagnosis.
type Options struct {
	// TerminatingAfter is how long a StatefulSet (or an object of a gone owner) may stay
	// terminating before it is reported.
	TerminatingAfter time.Duration
	// CLI is the command named in remedies: "kubectl" or "oc".
	CLI string
	// Settle is how long an Unschedulable pod or a Pending claim with a cause that may still
	// resolve (a volume being provisioned or bound) waits before it is reported.
	Settle time.Duration
	// NotReadyAfter is how long a Running pod may stay not Ready (a failing readiness probe)
	// before it counts as stuck at startup; 0 disables the rule.
	NotReadyAfter time.Duration
	// FeatureGates override the gate defaults of the server's release (--feature-gates).
	FeatureGates map[string]bool
}

// DefaultOptions are the options of `stsdiag check`.
func DefaultOptions() Options {
	return Options{TerminatingAfter: 5 * time.Minute, CLI: "kubectl", Settle: 10 * time.Second, NotReadyAfter: 5 * time.Minute}
}

// Result is what the diagnosis found.
type Result struct {
	StatefulSets []apiv1.StatefulSetSummary
	Findings     []model.Finding
	// Rules are the controller rules applied (the server's release and the gates assumed).
	Rules Rules
	// RecheckAt is the earliest moment a time-based rule (settle time, thresholds) may turn what
	// is seen now into a finding; zero when none is pending. Callers that follow the cluster
	// diagnose again then, even if nothing changes.
	RecheckAt time.Time
}

// Diagnose examines every StatefulSet in the snapshot's scope.
func Diagnose(s *snapshot.Snapshot, opts Options) Result {
	if opts.CLI == "" {
		opts.CLI = "kubectl"
	}
	ix := newIndex(s, opts.Settle)
	ix.notReadyAfter = opts.NotReadyAfter
	rules, err := RulesFor(s.ServerVersion, opts.FeatureGates)
	if err != nil {
		// A version that does not parse (a fork's naming): the newest rules, gates as asked.
		rules, _ = RulesFor("", opts.FeatureGates)
	}
	d := &diagnosis{ix: ix, opts: opts, snap: s, rules: rules}
	res := Result{Rules: rules}
	for i := range s.StatefulSets {
		set := &s.StatefulSets[i]
		if !s.InScope(set.Namespace, set.Name) {
			continue
		}
		before := len(d.findings)
		d.statefulSet(set)
		d.governingService(set)
		res.StatefulSets = append(res.StatefulSets, summarize(set, d.findings[before:]))
	}
	d.orphans(s)
	res.Findings = d.findings
	res.RecheckAt = ix.recheckAt
	model.SortFindings(res.Findings)
	return res
}

type diagnosis struct {
	rules    Rules
	snap     *snapshot.Snapshot
	ix       *index
	opts     Options
	findings []model.Finding
}

func (d *diagnosis) add(f model.Finding) { d.findings = append(d.findings, f) }

// controllerView is the controller's view of one StatefulSet.
type controllerView struct {
	rules     Rules
	set       *appsv1.StatefulSet
	start     int
	replicas  int
	partition int
	update    string
	current   string
	// byIndex holds the live pods by ordinal-start; nil where none exists.
	byIndex []*corev1.Pod
	now     metav1.Time
}

func (r *controllerView) rollingUpdate() bool {
	return r.set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType || r.set.Spec.UpdateStrategy.Type == ""
}

func (r *controllerView) ordered() bool {
	return r.set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
}

// target is the revision the controller gives the pod at this index when it (re)creates it.
func (r *controllerView) target(i int) string {
	if r.rollingUpdate() && i < r.partition && r.current != "" {
		return r.current
	}
	return r.update
}

// replaces reports whether the controller itself deletes an off-revision pod at this index,
// even when it is not Ready.
func (r *controllerView) replaces(i int) bool {
	switch r.set.Spec.UpdateStrategy.Type {
	case appsv1.OnDeleteStatefulSetStrategyType:
		return false
	case recreateStrategy:
		// Without the gate the controller emits UnknownStrategy and changes nothing
		// (stateful_set_control.go:577-581@v1.37.2); the object existing says it is on, unless
		// --feature-gates says otherwise.
		on, assumed := r.rules.Gates[GateRecreate]
		return !assumed || on
	}
	if i < r.partition || r.ordered() {
		// OrderedReady waits for every pod to be Running and Ready before any update.
		return false
	}
	if !r.rules.Gates[GateMaxUnavailable] || r.rules.ParallelTwoPhase {
		// Classic path: Parallel deletes off-revision pods top-down whatever their state
		// (stateful_set_control.go:742-768@v1.37.2); 1.37's maxUnavailable path deletes every
		// unavailable off-revision pod first, whatever the budget (:881-895@v1.37.2).
		return true
	}
	// 1.35.0-1.35.3 (or the gate turned on before 1.37): unavailable pods of any revision use
	// up the budget and nothing is deleted (stateful_set_control.go:775@v1.35.3, kubernetes#137409).
	return r.unavailable() < r.maxUnavailable()
}

// maxUnavailable is the rolling update's budget, scaled and rounded down, at least 1
// (getStatefulSetMaxUnavailable, stateful_set_utils.go:610@v1.25.16).
func (r *controllerView) maxUnavailable() int {
	value := intstr.FromInt32(1)
	if ru := r.set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		value = *ru.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&value, r.replicas, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// unavailable counts the replicas the controller counts against the budget: missing,
// terminating, not Running and Ready, and (from 1.34) not yet available for minReadySeconds.
func (r *controllerView) unavailable() int {
	n := 0
	for _, pod := range r.byIndex {
		switch {
		case pod == nil || pod.DeletionTimestamp != nil || !statefulset.RunningAndReady(pod):
			n++
		case r.rules.AvailabilityHonoursMinReady && !podutils.IsPodAvailable(pod, r.set.Spec.MinReadySeconds, r.now):
			n++
		}
	}
	return n
}

func (d *diagnosis) statefulSet(set *appsv1.StatefulSet) {
	if set.DeletionTimestamp != nil {
		d.terminating(set)
		return
	}
	r := &controllerView{set: set, current: set.Status.CurrentRevision, rules: d.rules, now: metav1.NewTime(d.ix.now)}
	r.update = d.ix.updateRevision(set)
	if set.Spec.Ordinals != nil {
		r.start = int(set.Spec.Ordinals.Start)
	}
	r.replicas = 1
	if set.Spec.Replicas != nil {
		r.replicas = int(*set.Spec.Replicas)
	}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && r.rollingUpdate() {
		r.partition = int(*ru.Partition)
	}
	r.byIndex = make([]*corev1.Pod, r.replicas)
	for _, pod := range d.ix.owned.Pods[set.UID] {
		if n, ok := ordinal(set.Name, pod.Name); ok && n >= r.start && n-r.start < r.replicas {
			r.byIndex[n-r.start] = pod
		}
	}
	var onDeleteStale []string
	for i, pod := range r.byIndex {
		if pod == nil {
			continue
		}
		if pod.DeletionTimestamp != nil {
			d.podTerminating(r, i, pod)
			continue
		}
		p := d.ix.startupProblem(pod)
		if p == nil && pod.Status.Phase == corev1.PodSucceeded && !d.rules.SucceededRecreated {
			// Before 1.27 only Failed pods are recreated (stateful_set_control.go:377@v1.25.16).
			p = &problem{kind: containerProblem, reason: "PodSucceeded",
				message: fmt.Sprintf("its containers exited and the controller of Kubernetes %s never recreates a Succeeded pod", d.rules.Version)}
		}
		stale := statefulset.PodRevision(pod) != r.target(i)
		switch {
		case p == nil:
			if stale && set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType && pod.DeletionTimestamp == nil {
				onDeleteStale = append(onDeleteStale, pod.Name)
			}
		case p.kind == claimProblem:
			d.claimPending(r, pod, p)
		case stale && !r.replaces(i):
			d.staleStuck(r, i, pod, p)
		case stale:
			// The controller replaces it by itself.
		case p.kind == unschedulableProblem:
			d.unschedulable(r, i, pod, p)
		default:
			d.revisionFailing(r, i, pod, p)
		}
	}
	if len(onDeleteStale) > 0 {
		d.onDeleteStale(r, onDeleteStale)
	}
}

func (d *diagnosis) base(r *controllerView, code apiv1.Code, sev apiv1.Severity, pod *corev1.Pod, p *problem) model.Finding {
	f := model.Finding{Finding: apiv1.Finding{Code: code, Severity: sev, Namespace: r.set.Namespace, StatefulSet: r.set.Name}}
	if r.update != "" {
		f.Details.UpdateRevision = r.update
	}
	if pod != nil {
		f.Pod = pod.Name
		f.Target = &model.PodRef{Name: pod.Name, UID: pod.UID}
		f.Details.PodRevision = model.Ptr(statefulset.PodRevision(pod))
		f.Details.PodUID = model.Ptr(string(pod.UID))
		f.Details.PodResourceVersion = model.Ptr(pod.ResourceVersion)
		if events := d.ix.recentEvents("Pod", pod.Namespace, pod.Name, 3); len(events) > 0 {
			f.Details.Events = events
		}
	}
	if p != nil {
		f.Reason = p.reason
		f.Container = p.container
		f.Image = p.image
		if p.init {
			f.Details.InitContainer = true
		}
		if p.exitCode != nil {
			f.Details.LastExitCode = model.Ptr(*p.exitCode)
		}
	}
	return f
}

func (d *diagnosis) strategy(r *controllerView) string {
	policy := string(r.set.Spec.PodManagementPolicy)
	if policy == "" {
		policy = string(appsv1.OrderedReadyPodManagement)
	}
	strategy := string(r.set.Spec.UpdateStrategy.Type)
	if strategy == "" {
		strategy = string(appsv1.RollingUpdateStatefulSetStrategyType)
	}
	return policy + ", " + strategy
}

// blocked lists the other pods the stuck pod at index k keeps from being created or updated.
func (r *controllerView) blocked(k int) []string {
	if !r.ordered() {
		return nil
	}
	var out []string
	for i := 0; i < r.replicas; i++ {
		if i == k {
			continue
		}
		pod := r.byIndex[i]
		name := fmt.Sprintf("%s-%d", r.set.Name, r.start+i)
		switch {
		case pod == nil && i > k:
			out = append(out, name+" (not created)")
		case pod != nil && r.set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && statefulset.PodRevision(pod) != r.target(i):
			out = append(out, name+" (not updated)")
		case pod != nil && i > k && !statefulset.RunningAndReady(pod):
			out = append(out, name+" (not ready)")
		}
	}
	return out
}

func (d *diagnosis) staleStuck(r *controllerView, i int, pod *corev1.Pod, p *problem) {
	f := d.base(r, apiv1.StaleRevisionStuck, apiv1.SeverityError, pod, p)
	target := r.target(i)
	targetDesc := fmt.Sprintf("revision %s", target)
	if target == "" {
		targetDesc = "the new template"
	}
	var why string
	switch {
	case r.set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
		why = "with the OnDelete strategy the controller never replaces it"
	case i < r.partition:
		why = fmt.Sprintf("its ordinal is below the partition (%d), so the controller never replaces it", r.partition)
	case r.set.Spec.UpdateStrategy.Type == recreateStrategy:
		why = fmt.Sprintf("the controller (Kubernetes %s) ignores the Recreate strategy while %s is off (it records an UnknownStrategy event and changes nothing)", d.rules.Version, GateRecreate)
	case !r.ordered():
		why = fmt.Sprintf("the controller (Parallel, RollingUpdate, Kubernetes %s with %s on) counts %d unavailable pod(s) against maxUnavailable %d and deletes nothing, so the rollout never finishes (kubernetes#137409; Kubernetes v1.35.4 and v1.36 turn the gate off, v1.37 replaces such pods)",
			d.rules.Version, GateMaxUnavailable, r.unavailable(), r.maxUnavailable())
		f.Details.MaxUnavailable = model.Ptr(r.maxUnavailable())
		f.Details.UnavailablePods = model.Ptr(r.unavailable())
	default:
		why = fmt.Sprintf("the controller (%s) waits for it to become Running and Ready and will never replace it (kubernetes#67250)", d.strategy(r))
	}
	f.Message = fmt.Sprintf("%s runs old revision %s and is stuck at startup (%s%s): %s", pod.Name, statefulset.PodRevision(pod), p.reason, containerSuffix(p), why)
	if p.message != "" {
		f.Message += "; " + p.message
	}
	if blocked := r.blocked(i); len(blocked) > 0 {
		f.Details.Blocks = blocked
		f.Message += "; it blocks " + strings.Join(blocked, ", ")
	}
	f.Details.TargetRevision = model.Ptr(target)
	f.Details.Ordinal = model.Ptr(r.start + i)
	f.Message += fmt.Sprintf("; deleting it makes the controller recreate it from %s, keeping its PersistentVolumeClaims", targetDesc)
	f.Short = fmt.Sprintf("%s on old revision %s; never replaced", p.reason, statefulset.PodRevision(pod))
	if blocked := r.blocked(i); len(blocked) > 0 {
		f.Short += "; blocks " + strings.Join(podNames(blocked), ", ")
	}
	f.Remedy = fmt.Sprintf("%s delete pod %s -n %s", d.opts.CLI, pod.Name, pod.Namespace)
	d.add(f)
}

func containerSuffix(p *problem) string {
	if p.container == "" {
		return ""
	}
	kind := "container"
	if p.init {
		kind = "init container"
	}
	return fmt.Sprintf(", %s %q, image %q", kind, p.container, p.image)
}

func (d *diagnosis) revisionFailing(r *controllerView, i int, pod *corev1.Pod, p *problem) {
	f := d.base(r, apiv1.CurrentRevisionFailing, apiv1.SeverityError, pod, p)
	rev := statefulset.PodRevision(pod)
	f.Message = fmt.Sprintf("%s runs revision %s, the one the controller would recreate it from, and is stuck at startup (%s%s)", pod.Name, rev, p.reason, containerSuffix(p))
	if rev != r.update && i < r.partition {
		f.Message += fmt.Sprintf("; its ordinal is below the partition (%d), so deleting it recreates the same current revision", r.partition)
	}
	if p.message != "" {
		f.Message += ": " + p.message
	}
	if blocked := r.blocked(i); len(blocked) > 0 {
		f.Details.Blocks = blocked
		f.Message += "; it blocks " + strings.Join(blocked, ", ")
	}
	f.Details.Ordinal = model.Ptr(r.start + i)
	f.Short = fmt.Sprintf("%s on revision %s%s", p.reason, rev, containerSuffix(p))
	f.Remedy = d.templateRemedy(r, pod, p)
	d.add(f)
}

func (d *diagnosis) templateRemedy(r *controllerView, pod *corev1.Pod, p *problem) string {
	set := fmt.Sprintf("statefulset/%s -n %s", r.set.Name, r.set.Namespace)
	after := fmt.Sprintf("; once the template is fixed, delete the stuck pod: %s delete pod %s -n %s", d.opts.CLI, pod.Name, pod.Namespace)
	if !r.ordered() {
		after = ""
	}
	msg := strings.ToLower(p.message)
	switch {
	case statefulset.ImagePullReasons[p.reason] && (strings.Contains(msg, "unauthorized") || strings.Contains(msg, "authentication required") ||
		strings.Contains(msg, "access denied") || strings.Contains(msg, "denied")):
		return fmt.Sprintf("the registry refuses image %q: add or fix an imagePullSecret (spec.template.spec.imagePullSecrets or the ServiceAccount's) for %s%s", p.image, set, after)
	case statefulset.ImagePullReasons[p.reason]:
		return fmt.Sprintf("image %q of container %q cannot be pulled: fix the template, e.g. %s set image %s %s=IMAGE with a pullable IMAGE, or push the image%s", p.image, p.container, d.opts.CLI, set, p.container, after)
	case p.reason == "CreateContainerConfigError":
		return fmt.Sprintf("container %q refers to configuration that is missing or invalid (a Secret, ConfigMap or key; see the message): create it or fix the reference in %s%s", p.container, set, after)
	case p.reason == "NotReady":
		return fmt.Sprintf("container %q runs but never becomes Ready: read the probe failure in the message and `%s describe pod %s -n %s`, then fix the readiness probe, the configuration or the dependency it waits for in %s%s", p.container, d.opts.CLI, pod.Name, pod.Namespace, set, after)
	case p.reason == "CrashLoopBackOff":
		return fmt.Sprintf("container %q keeps exiting: read `%s logs %s -n %s -c %s --previous`, then fix the image, command or configuration in %s%s", p.container, d.opts.CLI, pod.Name, pod.Namespace, p.container, set, after)
	case p.reason == "CreateContainerError" || p.reason == "RunContainerError":
		return fmt.Sprintf("the container runtime cannot create or start container %q (see the message): fix its command, mounts or securityContext in %s%s", p.container, set, after)
	case p.kind == unschedulableProblem:
		return fmt.Sprintf("no node can take the pod: add capacity or relax resources, nodeSelector, affinity or tolerations in %s%s", set, after)
	}
	return "fix the pod template of " + set + after
}

func (d *diagnosis) unschedulable(r *controllerView, i int, pod *corev1.Pod, p *problem) {
	f := d.base(r, apiv1.PodUnschedulable, apiv1.SeverityError, pod, p)
	f.Message = fmt.Sprintf("%s cannot be scheduled: %s", pod.Name, p.message)
	f.Short = "unschedulable: " + p.message
	if blocked := r.blocked(i); len(blocked) > 0 {
		f.Details.Blocks = blocked
		f.Message += "; it blocks " + strings.Join(blocked, ", ")
	}
	f.Details.Ordinal = model.Ptr(r.start + i)
	f.Remedy = d.templateRemedy(r, pod, p)
	d.add(f)
}

func (d *diagnosis) claimPending(r *controllerView, pod *corev1.Pod, p *problem) {
	f := d.base(r, apiv1.VolumeClaimPending, apiv1.SeverityError, pod, p)
	f.Message = fmt.Sprintf("%s waits for PersistentVolumeClaim %s, which is Pending: %s", pod.Name, p.claim, p.claimWhy)
	f.Details.Claim = p.claim
	f.Short = fmt.Sprintf("PVC %s Pending: %s", p.claim, p.claimWhy)
	if events := d.ix.recentEvents("PersistentVolumeClaim", pod.Namespace, p.claim, 3); len(events) > 0 {
		f.Details.ClaimEvents = events
	}
	f.Remedy = fmt.Sprintf("make the claim bindable: create the StorageClass it names, mark a default StorageClass, or create a matching PersistentVolume (%s describe pvc %s -n %s); stsdiag never deletes claims",
		d.opts.CLI, p.claim, pod.Namespace)
	d.add(f)
}

func (d *diagnosis) onDeleteStale(r *controllerView, pods []string) {
	f := d.base(r, apiv1.OnDeleteStale, apiv1.SeverityInfo, nil, nil)
	byOrdinal(r.set.Name, pods)
	f.Message = fmt.Sprintf("OnDelete strategy: %d pod(s) run an older revision than %s (%s); they change only when deleted; delete them one at a time, highest ordinal first, waiting for each to be Ready", len(pods), r.update, strings.Join(pods, ", "))
	f.Details.Pods = pods
	f.Short = fmt.Sprintf("%d pod(s) on older revisions: %s", len(pods), strings.Join(pods, ", "))
	f.Remedy = fmt.Sprintf("%s delete pod -n %s %s", d.opts.CLI, r.set.Namespace, pods[len(pods)-1])
	d.add(f)
}

func (d *diagnosis) terminating(set *appsv1.StatefulSet) {
	age := d.ix.now.Sub(set.DeletionTimestamp.Time)
	reused := d.reusedByOthers(set)
	ownerRef, owner, replaced := d.replacedOwner(set)
	if age < d.opts.TerminatingAfter && len(reused) == 0 && !replaced {
		d.ix.wake(set.DeletionTimestamp.Add(d.opts.TerminatingAfter))
		return
	}
	f := model.Finding{Finding: apiv1.Finding{Code: apiv1.StatefulSetTerminating, Severity: apiv1.SeverityWarning, Namespace: set.Namespace, StatefulSet: set.Name,
		Details: apiv1.FindingDetails{UID: string(set.UID), TerminatingFor: age.Round(time.Second).String()}}}
	f.Message = fmt.Sprintf("StatefulSet %s has been terminating for %s", set.Name, age.Round(time.Second))
	if replaced {
		f.Reason = "OwnerRecreated"
		f.Details.OwnerKind, f.Details.OwnerName, f.Details.OwnerUID = ownerRef.Kind, ownerRef.Name, string(ownerRef.UID)
		if owner.Exists {
			f.Details.CurrentOwnerUID = string(owner.UID)
			f.Message += fmt.Sprintf("; its owner %s %s (UID %s) was deleted and recreated (UID %s): the new %s cannot create its own StatefulSet %s until this one is gone",
				ownerRef.Kind, ownerRef.Name, ownerRef.UID, owner.UID, ownerRef.Kind, set.Name)
			if revs := d.newOwnerRevisions(set, owner); len(revs) > 0 {
				f.Details.NewOwnerRevisions = revs
				f.Message += fmt.Sprintf("; the new owner already created ControllerRevision(s) %s after this deletion began", strings.Join(revs, ", "))
			}
		} else {
			f.Reason = "OwnerGone"
			f.Message += fmt.Sprintf("; its owner %s %s (UID %s) no longer exists", ownerRef.Kind, ownerRef.Name, ownerRef.UID)
		}
	}
	if len(set.Finalizers) > 0 {
		f.Message += "; finalizers: " + strings.Join(set.Finalizers, ", ")
		f.Details.Finalizers = set.Finalizers
	}
	if n := len(d.ix.owned.Pods[set.UID]); n > 0 {
		f.Message += fmt.Sprintf("; %d pod(s) still owned by it", n)
	}
	if len(reused) > 0 {
		f.Details.ReusedBy = reused
		f.Message += "; objects of its name are owned by another controller: " + strings.Join(reused, ", ")
	}
	f.Remedy = fmt.Sprintf("find what holds the deletion (%s get statefulset %s -n %s -o jsonpath='{.metadata.finalizers}' and the owners of its pods); a new owner of the same name cannot take over until it is gone",
		d.opts.CLI, set.Name, set.Namespace)
	d.add(f)
}

// reusedByOthers lists pods matching a terminating set's selector and name that another
// controller owns.
func (d *diagnosis) reusedByOthers(set *appsv1.StatefulSet) []string {
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		return nil
	}
	var out []string
	for uid, pods := range d.ix.owned.Pods {
		if uid == set.UID {
			continue
		}
		for _, pod := range pods {
			if pod.Namespace != set.Namespace || !selector.Matches(labels.Set(pod.Labels)) {
				continue
			}
			if _, ok := ordinal(set.Name, pod.Name); ok {
				out = append(out, "pod/"+pod.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// summarize gives the StatefulSet's rollout state.
func summarize(set *appsv1.StatefulSet, findings []model.Finding) apiv1.StatefulSetSummary {
	s := apiv1.StatefulSetSummary{Namespace: set.Namespace, Name: set.Name, Replicas: rollout.Replicas(set), ReadyReplicas: set.Status.ReadyReplicas,
		CurrentRevision: set.Status.CurrentRevision, UpdateRevision: set.Status.UpdateRevision}
	switch {
	case set.DeletionTimestamp != nil:
		s.Status = apiv1.StatusTerminating
	case hasError(findings):
		s.Status = apiv1.StatusStuck
	case rollout.Complete(set):
		s.Status = apiv1.StatusComplete
	default:
		s.Status = apiv1.StatusProgressing
	}
	return s
}

func hasError(findings []model.Finding) bool {
	for _, f := range findings {
		if f.Severity == apiv1.SeverityError {
			return true
		}
	}
	return false
}

// recreateStrategy is the 1.37 alpha strategy (gate StatefulSetRecreateStrategy); k8s.io/api 0.35 has no constant.
const recreateStrategy appsv1.StatefulSetUpdateStrategyType = "Recreate"

// podNames drops the "(not created)" notes of blocked pods.
func podNames(blocked []string) []string {
	out := make([]string, len(blocked))
	for i, b := range blocked {
		out[i], _, _ = strings.Cut(b, " ")
	}
	return out
}
