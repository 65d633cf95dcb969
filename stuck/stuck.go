// Package stuck decides, from the StatefulSet controller's own rules, whether a rollout will
// finish by itself — and when it will not, why, with the facts a repair needs.
//
// It is pure: Objects in (the StatefulSets, pods, ControllerRevisions, claims, Events and nodes of
// one moment, read from a cluster or loaded from YAML with Load), a Result out. Each Finding has a
// code of the stsdiag/v1 contract (api/v1) and typed Facts: StaleStuck for kubernetes#67250 (an
// old-revision pod the controller waits for forever), CreateFailed with the admission Refusal,
// PodUnschedulable, ClaimStuck, OwnerFate, … (facts.go). No API call, no words: stsdiag's own
// packages turn facts into sentences and repairs.
//
// The rules follow the controller's release: RulesFor gives the rule table of a server version
// (feature gates included), and every rule cites the upstream file and line it follows. The
// controller's next sync is modelled by package stuck/controller.
//
//	objs, _ := stuck.LoadFile("objects.yaml", time.Now())
//	res := stuck.Diagnose(objs, stuck.DefaultOptions())
//	for _, f := range res.Findings { fmt.Println(f.Code, f.Pod, f.Facts) }
package stuck

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// Options tune the diagnosis.
type Options struct {
	// TerminatingAfter is how long a StatefulSet (or an object of a gone owner) may stay
	// terminating before it is reported.
	TerminatingAfter time.Duration
	// Settle is how long an Unschedulable pod or a Pending claim with a cause that may still
	// resolve (a volume being provisioned or bound) waits before it is reported.
	Settle time.Duration
	// NotReadyAfter is how long a Running pod may stay not Ready (a failing readiness probe)
	// before it counts as stuck at startup; 0 disables the rule.
	NotReadyAfter time.Duration
	// FeatureGates override the gate defaults of the server's release (--feature-gates).
	FeatureGates map[string]bool
	// CLI is the command remedies name: "kubectl" or "oc"; "" names oc when the objects say
	// OpenShift (Objects.OpenShift), else kubectl.
	CLI string
}

// DefaultOptions are the options of `stsdiag check`.
func DefaultOptions() Options {
	return Options{TerminatingAfter: 5 * time.Minute, Settle: 10 * time.Second, NotReadyAfter: 5 * time.Minute}
}

// Result is what the diagnosis found.
type Result struct {
	// StatefulSets are the StatefulSets in scope, by namespace and name, each with its status
	// (Complete, Progressing, Stuck or Terminating) and a message saying why.
	StatefulSets []apiv1.StatefulSetSummary
	// Findings, most severe first, each with its words (Message, Short, Remedy) and facts.
	Findings []Finding
	// Rules are the controller rules applied (the server's release and the gates assumed).
	Rules Rules
	// RecheckAt is the earliest moment a time-based rule (settle time, thresholds) may turn what
	// is seen now into a finding; zero when none is pending. Callers that follow the cluster
	// diagnose again then, even if nothing changes.
	RecheckAt time.Time
	// Predictions are the changes the diagnosis expects the kubelet or the controller to make
	// by themselves, by pod, each with its deadline: a finding names one once
	// its deadline has passed.
	Predictions map[types.NamespacedName]facts.Prediction
	// Views are the controller's next sync of each live StatefulSet in scope, by namespace and name:
	// the model the findings were derived from.
	Views map[types.NamespacedName]*controller.View
}

// Diagnose examines every StatefulSet in the objects' scope: the controller's rules of the
// server's release, OpenShift's image lookup (when Objects.OpenShift), each finding worded from
// its facts, and each StatefulSet's status decided from every finding. It is pure: it reads the
// objects and their clock, never the API.
func Diagnose(s *Objects, opts Options) Result {
	if s.Shared == nil {
		// Indexed once for every rule.
		indexed := *s
		indexed.Shared = NewShared(s)
		s = &indexed
	}
	res, rollouts := diagnoseRules(s, opts)
	for i := range rollouts {
		rollouts[i].waiting = waitingOn(res.Views[types.NamespacedName{Namespace: rollouts[i].summary.Namespace, Name: rollouts[i].summary.Name}])
	}
	if !s.StatusOnly {
		res.Findings = append(res.Findings, imageFindings(s, nil)...)
		linkUnresolvedImages(res.Findings)
	}
	wordFindings(res.Findings, cliFor(opts, s.OpenShift))
	sortFindings(res.Findings)
	res.StatefulSets = summaries(rollouts, res.Findings)
	sort.SliceStable(res.StatefulSets, func(i, j int) bool {
		a, b := res.StatefulSets[i], res.StatefulSets[j]
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	return res
}

// diagnoseRules applies the controller's rules: to every StatefulSet in scope with its pods,
// claims, revisions and Events, or, for objects read by status (StatusOnly), the rules that read
// no pod (the governing Service).
func diagnoseRules(s *Objects, opts Options) (Result, []rollout) {
	ix := newIndex(s, opts.Settle)
	ix.notReadyAfter = opts.NotReadyAfter
	rules := rulesOrNewest(s.ServerVersion, opts.FeatureGates)
	d := &diagnosis{ix: ix, opts: opts, snap: s, rules: rules, views: map[types.NamespacedName]*controller.View{}}
	res := Result{Rules: rules, Views: d.views}
	var rollouts []rollout
	for i := range s.StatefulSets {
		set := &s.StatefulSets[i]
		if !s.InScope(set.Namespace, set.Name) {
			continue
		}
		if !s.StatusOnly {
			d.statefulSet(set)
		}
		d.governingService(set)
		rollouts = append(rollouts, rolloutOf(set))
	}
	if !s.StatusOnly {
		d.orphans(s)
		d.withoutSet(s)
		res.RecheckAt = ix.recheckAt
		res.Predictions = d.predictions
	}
	if s.ControllerManager != nil && s.Selected == nil { // a finding of the cluster, not of one set
		if f, ok := controllerManagerFinding(*s.ControllerManager, s.Now); ok {
			d.add(f)
		}
	}
	res.Findings = d.findings
	return res, rollouts
}

// rulesOrNewest is RulesFor, or for a version that does not parse (a fork's naming) the newest
// rules, gates as asked.
func rulesOrNewest(serverVersion string, gates map[string]bool) Rules {
	rules, err := RulesFor(serverVersion, gates)
	if err != nil {
		rules, _ = RulesFor("", gates)
	}
	return rules
}

type diagnosis struct {
	// predictions are the changes expected by themselves, by pod.
	predictions map[types.NamespacedName]facts.Prediction
	rules       Rules
	snap        *Objects
	ix          *index
	opts        Options
	findings    []Finding
	views       map[types.NamespacedName]*controller.View
}

func (d *diagnosis) add(f Finding) { d.findings = append(d.findings, f) }

// controllerView is the controller's view of one StatefulSet: the model of its next sync
// (stuck/controller), with the pods by index.
type controllerView struct {
	*controller.View
	rules     Rules
	set       *appsv1.StatefulSet
	start     int
	replicas  int
	partition int
	update    string
	// byIndex holds the live pods by ordinal-start; nil where none exists.
	byIndex []*corev1.Pod
}

func (r *controllerView) ordered() bool { return r.Ordered() }

// target is the revision the controller gives the pod at this index when it (re)creates it.
func (r *controllerView) target(i int) string { return r.Ordinals[i].Target }

// replaces reports whether the controller itself deletes an off-revision pod at this index,
// even when it is not Ready.
func (r *controllerView) replaces(i int) bool {
	switch r.set.Spec.UpdateStrategy.Type {
	case appsv1.OnDeleteStatefulSetStrategyType:
		return false
	case controller.RecreateStrategy:
		// Without the gate the controller emits UnknownStrategy and changes nothing
		// (stateful_set_control.go:577-581@v1.37.2); the object existing says it is on, unless
		// --feature-gates says otherwise.
		return !r.Behaviour.RecreateOff
	}
	if i < r.partition || r.ordered() {
		// OrderedReady waits for every pod to be Running and Ready before any update.
		return false
	}
	if !r.Behaviour.MaxUnavailable || r.Behaviour.ParallelTwoPhase {
		// Classic path: Parallel deletes off-revision pods top-down whatever their state
		// (stateful_set_control.go:742-768@v1.37.2); 1.37's maxUnavailable path deletes every
		// unavailable off-revision pod first, whatever the budget (:881-895@v1.37.2).
		return true
	}
	// 1.35.0-1.35.3 (or the gate turned on before 1.37): unavailable pods of any revision use
	// up the budget and nothing is deleted (stateful_set_control.go:775@v1.35.3, kubernetes#137409).
	return r.Unavailable < r.MaxUnavailable
}

// replacesWhenReady reports whether the controller deletes the off-revision pod at index i
// in a sync that finds it Running and Ready: an OrderedReady rolling update goes on once every
// pod is Running and Ready (stateful_set_control.go:476@v1.37.2) and deletes the highest
// off-revision pod at or above the partition (:749-759, and :919-931 with maxUnavailable). A
// crash-looping container without a readiness probe makes its pod Ready for a moment after
// each restart, and the status update that says so triggers such a sync: the controller
// replaces the pod by itself, provided every other pod in range is Running and Ready — and,
// with minReadySeconds, Available: OrderedReady waits for each pod to be Available too before it
// goes on (stateful_set_control.go:485@v1.37.2), so a pod whose runs last less than
// minReadySeconds is never Available and never replaced.
func (r *controllerView) replacesWhenReady(i int, p *facts.Startup) bool {
	t := r.set.Spec.UpdateStrategy.Type
	if (t != "" && t != appsv1.RollingUpdateStatefulSetStrategyType) || i < r.partition || !r.ordered() {
		return false
	}
	if minReady := time.Duration(r.set.Spec.MinReadySeconds) * time.Second; minReady > 0 && p.LastRun < minReady {
		return false
	}
	for k, pod := range r.byIndex {
		if k != i && k < r.replicas && (pod == nil || !controller.RunningAndReady(pod)) {
			return false
		}
	}
	return true
}

// view models the controller's next sync of a live StatefulSet.
func (d *diagnosis) view(set *appsv1.StatefulSet) *controllerView {
	update := d.ix.updateRevision(set)
	v := controller.Sync(controller.Inputs{Set: set, Pods: d.ix.owned.Pods[set.UID], Update: update,
		UpdateCreated: d.ix.revisionCreated(set, update), Now: d.ix.now, Behaviour: d.rules.Behaviour()})
	d.views[types.NamespacedName{Namespace: set.Namespace, Name: set.Name}] = v
	r := &controllerView{View: v, rules: d.rules, set: set, start: v.Start, replicas: v.Replicas, partition: v.Partition, update: update}
	r.byIndex = make([]*corev1.Pod, len(v.Ordinals))
	for i, o := range v.Ordinals {
		r.byIndex[i] = o.Pod
	}
	return r
}

func (d *diagnosis) statefulSet(set *appsv1.StatefulSet) {
	if set.DeletionTimestamp != nil {
		d.terminating(set)
		return
	}
	d.neverObserved(set)
	d.canaryNotStarted(set)
	d.canaryPaused(set)
	from := len(d.findings)
	r := d.view(set)
	defer d.nextSteps(r, from)
	for _, o := range r.Condemned {
		if o.Pod.DeletionTimestamp != nil {
			d.podTerminatingAt(r, o.Ordinal, nil, o.Pod)
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
			p = &facts.Startup{Kind: facts.PodExited, Reason: "PodSucceeded", Release: d.rules.Version}
		}
		stale := controller.PodRevision(pod) != r.target(i)
		switch {
		case p == nil:
			if stale && set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType && pod.DeletionTimestamp == nil {
				onDeleteStale = append(onDeleteStale, pod.Name)
			}
		case p.Kind == facts.ClaimPending:
			d.claimPending(r, pod, p)
		case stale && !r.replaces(i) && p.ReadyInRuns && r.replacesWhenReady(i, p):
			// The controller replaces it in the sync that finds it Ready, if that comes in time.
			if missed := d.replacedWhenReady(r, pod, p); missed != nil {
				d.staleStuck(r, i, pod, p, missed)
			}
		case stale && !r.replaces(i):
			d.staleStuck(r, i, pod, p, nil)
		case stale:
			// The controller replaces it by itself.
		case p.Kind == facts.Unschedulable:
			d.unschedulable(r, i, pod, p)
		default:
			d.revisionFailing(r, i, pod, p)
		}
	}
	if len(onDeleteStale) > 0 {
		d.onDeleteStale(r, onDeleteStale)
	}
}

func (d *diagnosis) base(r *controllerView, code apiv1.Code, sev apiv1.Severity, pod *corev1.Pod, p *facts.Startup) Finding {
	f := Finding{Finding: apiv1.Finding{Code: code, Severity: sev, Namespace: r.set.Namespace, StatefulSet: r.set.Name}}
	if r.update != "" {
		f.Details.UpdateRevision = r.update
	}
	if pod != nil {
		f.Pod = pod.Name
		f.Target = &PodRef{Name: pod.Name, UID: pod.UID}
		f.Details.PodRevision = ptr.To(controller.PodRevision(pod))
		f.Details.PodUID = ptr.To(string(pod.UID))
		f.Details.PodResourceVersion = ptr.To(pod.ResourceVersion)
		if events := d.ix.recentEvents("Pod", pod.Namespace, pod.Name, pod.UID, 3); len(events) > 0 {
			f.Details.Events = events
		}
	}
	if p != nil {
		f.Reason = p.Reason
		f.Container = p.Container
		f.Image = p.Image
		f.Details.InitContainer = p.Init
		if p.LastExit != nil {
			f.Details.LastExitCode = ptr.To(p.LastExit.Code)
			f.Details.LastExitReason, f.Details.LastExitMessage = p.LastExit.Reason, p.LastExit.Message
			// The log of the run that exited last: the current container's while it is
			// terminated (the kubelet then has no "previous" one to serve).
			f.LogCurrent = p.State == facts.StateTerminated
		}
		if p.Reason == facts.CrashLoopBackOff && p.Restarts > 0 {
			f.Details.RestartCount = ptr.To(p.Restarts)
		}
		f.Details.Volume = p.Volume
		if g := p.Gate; g != nil {
			f.Details.ReadinessGate, f.Details.ReadinessGateStatus = g.Condition, g.Status
		}
		if m := p.Missing; m != nil {
			if m.Name != "" {
				f.Details.Missing = m.Kind + "/" + m.Name
			}
			f.Details.MissingKey = m.Key
		}
	}
	return f
}

// blocked lists the other pods the stuck pod at index k keeps from being created, updated or
// Ready.
func (r *controllerView) blocked(k int) []facts.Blocked {
	if !r.ordered() {
		return nil
	}
	var out []facts.Blocked
	for i := 0; i < r.replicas; i++ {
		if i == k {
			continue
		}
		pod := r.byIndex[i]
		name := fmt.Sprintf("%s-%d", r.set.Name, r.start+i)
		switch {
		case pod == nil && i > k:
			out = append(out, facts.Blocked{Pod: name, Why: facts.NotCreated})
		case pod != nil && r.set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && controller.PodRevision(pod) != r.target(i):
			out = append(out, facts.Blocked{Pod: name, Why: facts.NotUpdated})
		case pod != nil && i > k && !controller.RunningAndReady(pod):
			out = append(out, facts.Blocked{Pod: name, Why: facts.NotReady})
		}
	}
	return out
}

// neverReplaced says why the controller never replaces the off-revision pod at index i.
func (d *diagnosis) neverReplaced(r *controllerView, i int, p *facts.Startup) facts.NeverReplaced {
	switch {
	case r.set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
		return facts.NeverReplaced{Kind: facts.OnDeleteStrategy}
	case i < r.partition:
		return facts.NeverReplaced{Kind: facts.BelowPartition, Partition: r.partition}
	case r.set.Spec.UpdateStrategy.Type == controller.RecreateStrategy:
		return facts.NeverReplaced{Kind: facts.RecreateIgnored, Release: d.rules.Version}
	case !r.ordered():
		return facts.NeverReplaced{Kind: facts.BudgetSpent, Release: d.rules.Version, Unavailable: r.Unavailable, MaxUnavailable: r.MaxUnavailable}
	}
	policy := string(r.set.Spec.PodManagementPolicy)
	if policy == "" {
		policy = string(appsv1.OrderedReadyPodManagement)
	}
	strategy := string(r.set.Spec.UpdateStrategy.Type)
	if strategy == "" {
		strategy = string(appsv1.RollingUpdateStatefulSetStrategyType)
	}
	why := facts.NeverReplaced{Kind: facts.WaitsForReady, Policy: policy, Strategy: strategy}
	if minReady := time.Duration(r.set.Spec.MinReadySeconds) * time.Second; minReady > 0 && p != nil && p.ReadyInRuns && p.LastRun < minReady {
		why.MinReady, why.Run = minReady, p.LastRun
	}
	return why
}

func (d *diagnosis) staleStuck(r *controllerView, i int, pod *corev1.Pod, p *facts.Startup, missed *facts.Prediction) {
	f := d.base(r, apiv1.StaleRevisionStuck, apiv1.SeverityError, pod, p)
	fx := facts.StaleStuck{Startup: *p, Revision: controller.PodRevision(pod), Target: r.target(i), Why: d.neverReplaced(r, i, p), Blocked: r.blocked(i), Missed: missed}
	if missed != nil {
		f.Details.Expected = string(missed.Expected)
		f.Details.ExpectedBy = missed.Deadline.UTC().Format(time.RFC3339)
	}
	if fx.Why.Kind == facts.BudgetSpent {
		f.Details.MaxUnavailable = ptr.To(fx.Why.MaxUnavailable)
		f.Details.UnavailablePods = ptr.To(fx.Why.Unavailable)
	}
	f.Details.TargetRevision = ptr.To(fx.Target)
	f.Details.Ordinal = ptr.To(r.start + i)
	f.Facts = fx
	d.add(f)
}

func (d *diagnosis) revisionFailing(r *controllerView, i int, pod *corev1.Pod, p *facts.Startup) {
	f := d.base(r, apiv1.CurrentRevisionFailing, apiv1.SeverityError, pod, p)
	fx := facts.Failing{Startup: *p, Revision: controller.PodRevision(pod), Blocked: r.blocked(i), Fix: templateFix(p), Ordered: r.ordered()}
	if fx.Revision != r.update && i < r.partition {
		fx.BelowPartition = r.partition
	}
	f.Details.Ordinal = ptr.To(r.start + i)
	f.Facts = fx
	d.add(f)
}

// templateFix says what to change in the template of a pod stuck at startup on its current
// revision.
func templateFix(p *facts.Startup) facts.TemplateFix {
	switch {
	case imagePullReasons[p.Reason] && refusesCredentials(p):
		return facts.FixPullSecret
	case imagePullReasons[p.Reason]:
		return facts.FixImage
	case p.Reason == "CreateContainerConfigError":
		return facts.FixConfig
	case p.Kind == facts.ReadinessGatePending:
		return facts.FixReadinessGate
	case p.Reason == "NotReady":
		return facts.FixReadiness
	case p.Reason == facts.CrashLoopBackOff:
		return facts.FixCrash
	case p.Kind == facts.VolumeMountFailed:
		return facts.FixConfig
	case p.Reason == "CreateContainerError" || p.Reason == "RunContainerError":
		return facts.FixRuntime
	case p.Kind == facts.Unschedulable:
		return facts.FixScheduling
	}
	return facts.FixTemplate
}

// refusesCredentials reports whether the kubelet's message (or, with none, the last
// termination's reason) says the registry refused the pull's credentials.
func refusesCredentials(p *facts.Startup) bool {
	text := p.Waiting
	if text == "" && p.LastExit != nil {
		text = p.LastExit.Reason
	}
	text = strings.ToLower(text)
	for _, word := range []string{"unauthorized", "authentication required", "access denied", "denied"} {
		if strings.Contains(text, word) {
			return true
		}
	}
	return false
}

func (d *diagnosis) unschedulable(r *controllerView, i int, pod *corev1.Pod, p *facts.Startup) {
	f := d.base(r, apiv1.PodUnschedulable, apiv1.SeverityError, pod, p)
	f.Details.Ordinal = ptr.To(r.start + i)
	f.Facts = facts.PodUnschedulable{Startup: *p, Blocked: r.blocked(i), Ordered: r.ordered()}
	d.add(f)
}

func (d *diagnosis) claimPending(r *controllerView, pod *corev1.Pod, p *facts.Startup) {
	f := d.base(r, apiv1.VolumeClaimPending, apiv1.SeverityError, pod, p)
	f.Details.Claim = p.Claim.Name
	if events := d.ix.recentEvents("PersistentVolumeClaim", pod.Namespace, p.Claim.Name, "", 3); len(events) > 0 {
		f.Details.ClaimEvents = events
	}
	f.Facts = facts.ClaimStuck{Claim: *p.Claim}
	d.add(f)
}

func (d *diagnosis) onDeleteStale(r *controllerView, pods []string) {
	f := d.base(r, apiv1.OnDeleteStale, apiv1.SeverityInfo, nil, nil)
	byOrdinal(r.set.Name, pods)
	f.Details.Pods = pods
	f.Facts = facts.OnDeleteOld{Pods: pods, UpdateRevision: r.update}
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
	fx := facts.SetTerminating{Age: age.Round(time.Second), Finalizers: set.Finalizers, OwnedPods: len(d.ix.owned.Pods[set.UID]), ReusedBy: reused}
	f := Finding{Finding: apiv1.Finding{Code: apiv1.StatefulSetTerminating, Severity: apiv1.SeverityWarning, Namespace: set.Namespace, StatefulSet: set.Name,
		Details: apiv1.FindingDetails{UID: string(set.UID), TerminatingFor: fx.Age.String(), ReusedBy: reused}}}
	if len(set.Finalizers) > 0 {
		f.Details.Finalizers = set.Finalizers
	}
	if replaced {
		fx.Owner = d.ownerChange(set, ownerRef, owner)
		f.Reason = "OwnerGone"
		if owner.Exists {
			f.Reason = "OwnerRecreated"
		}
		f.Details.OwnerKind, f.Details.OwnerName, f.Details.OwnerUID = ownerRef.Kind, ownerRef.Name, string(ownerRef.UID)
		f.Details.CurrentOwnerUID = string(fx.Owner.CurrentUID)
		f.Details.NewOwnerRevisions = fx.Owner.NewRevisions
	}
	f.Facts = fx
	d.add(f)
}

// ownerChange describes a terminating StatefulSet's owner that is gone or was recreated.
func (d *diagnosis) ownerChange(set *appsv1.StatefulSet, ref *metav1.OwnerReference, owner Owner) *facts.OwnerChange {
	c := &facts.OwnerChange{Kind: ref.Kind, Name: ref.Name, UID: ref.UID, Exists: owner.Exists}
	if owner.Exists {
		c.CurrentUID = owner.UID
		if revs := d.newOwnerRevisions(set, owner); len(revs) > 0 {
			c.NewRevisions = revs
		}
	}
	return c
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
			if _, ok := controller.ParseOrdinal(set.Name, pod.Name); ok {
				out = append(out, "pod/"+pod.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// rolloutOf reads the StatefulSet's rollout from its object.
func rolloutOf(set *appsv1.StatefulSet) rollout {
	return rollout{
		summary: apiv1.StatefulSetSummary{Namespace: set.Namespace, Name: set.Name, Replicas: controller.Replicas(set), ReadyReplicas: set.Status.ReadyReplicas,
			CurrentRevision: set.Status.CurrentRevision, UpdateRevision: set.Status.UpdateRevision},
		terminating: set.DeletionTimestamp != nil,
		// A canary watch steps is not complete at a step's partition.
		complete: controller.StatusComplete(set) && !controller.CanaryUnderWay(set),
		observed: set.Status.ObservedGeneration >= set.Generation && set.Status.ObservedGeneration > 0,
		updated:  set.Status.UpdatedReplicas,
	}
}

// controllerSlack is how long after a pod's Ready moment the controller's replacement of it may
// take: the kubelet's status write triggers a sync at once (the pod informer's update handler),
// which deletes the pod (stateful_set_control.go:749-759@v1.37.2).
const controllerSlack = 15 * time.Second

// maxCrashLoopBackOff is the kubelet's longest wait between two runs of a crash-looping
// container (MaxContainerBackOff = 300 s, pkg/kubelet/apis/config/v1beta1/defaults.go:45 and
// newCrashLoopBackOff, kubelet.go:353-366@v1.37.2): a run, with its Ready moment, comes at least
// that often.
const maxCrashLoopBackOff = 5 * time.Minute

// replacedWhenReady predicts that an OrderedReady rolling update replaces a crash-looping
// old-revision pod in the sync that finds it Ready for its moment (replacesWhenReady), and
// returns the prediction once it has failed: the pod was Ready during a run since the
// prediction began (the update revision's creation, or the other pods' Ready) and is still
// there controllerSlack later, or no run came within the kubelet's longest back-off. Until
// then the prediction is recorded (`stsdiag explain` shows its deadline) and the diagnosis wakes at it.
// A Ready moment seen only to the second (the Ready condition turned in the second the run
// started) may never have reached the controller: the deadline says whether it did.
func (d *diagnosis) replacedWhenReady(r *controllerView, pod *corev1.Pod, p *facts.Startup) *facts.Prediction {
	since := d.ix.revisionCreated(r.set, r.update)
	for k, other := range r.byIndex {
		if other == nil || other == pod || k >= r.replicas {
			continue
		}
		if c := controller.ReadyCondition(other); c != nil && c.LastTransitionTime.After(since) {
			since = c.LastTransitionTime.Time
		}
	}
	pred := facts.Prediction{Pod: pod.Name, Expected: facts.ReplacedWhenReady}
	if !since.IsZero() {
		pred.Deadline = since.Add(maxCrashLoopBackOff + controllerSlack)
	}
	// The pod's latest Ready moment: now, or during its latest run.
	ready := controller.ReadyCondition(pod)
	switch {
	case controller.RunningAndReady(pod) && ready != nil:
		pred.Chance = ready.LastTransitionTime.Time
	case !p.RunEnded.IsZero():
		pred.Chance = p.RunEnded
	case ready != nil && !ready.LastTransitionTime.Before(&metav1.Time{Time: p.RunStarted}):
		pred.Chance = ready.LastTransitionTime.Time
	}
	if !pred.Chance.IsZero() && !pred.Chance.Before(since) {
		// A Ready moment since the prediction began: the controller had its chance then.
		pred.Deadline = pred.Chance.Add(controllerSlack)
	} else {
		pred.Chance = time.Time{}
	}
	if pred.Deadline.IsZero() {
		return nil // no time to measure from: the objects carry no timestamps
	}
	if d.ix.now.Before(pred.Deadline) {
		d.ix.wake(pred.Deadline)
		if d.predictions == nil {
			d.predictions = map[types.NamespacedName]facts.Prediction{}
		}
		d.predictions[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = pred
		return nil
	}
	return &pred
}

// Stuck reports whether a finding is an error: a rollout the controller will not finish by itself.
func (r Result) Stuck() bool {
	for _, f := range r.Findings {
		if f.Severity == apiv1.SeverityError {
			return true
		}
	}
	return false
}
