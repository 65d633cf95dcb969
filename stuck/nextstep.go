package stuck

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// missingAfter is how long a pod the controller must create may be missing, with no Event saying
// why, before it is reported: the controller creates a pod within a second of deciding to.
const missingAfter = time.Minute

// defaultBlockedAfter is how long the controller may wait on a pod no rule explains when the
// not-ready threshold is off.
const defaultBlockedAfter = 5 * time.Minute

// nextSteps reports, for every ordinal the controller's next sync holds at (the model in
// stuck/controller), what keeps it there when no finding of this StatefulSet (those from
// `from` on) already says so: a pod it cannot create (PodCreateFailed), or a wait no known cause
// explains (RolloutBlocked). So no rollout that cannot progress goes without an error finding.
func (d *diagnosis) nextSteps(r *controllerView, from int) {
	explained := map[string]bool{}
	for _, f := range d.findings[from:] {
		if f.Severity == apiv1.SeverityError && f.Pod != "" {
			explained[f.Pod] = true
		}
	}
	for i, o := range r.Ordinals {
		switch {
		case !o.Holds || explained[o.Name]:
		case o.Next == controller.Create:
			d.createFailed(r, i, o)
		case o.Next.Waiting():
			d.waitBlocked(r, i, o, false)
		}
	}
	for _, o := range r.Condemned {
		if o.Holds && o.Next.Waiting() && !explained[o.Name] {
			d.waitBlocked(r, -1, o, true)
		}
	}
}

// createFailed reports a pod the controller must create and that does not exist: at once when a
// FailedCreate Event since it went missing says why, after missingAfter otherwise.
func (d *diagnosis) createFailed(r *controllerView, i int, o controller.Ordinal) {
	if r.set.Status.Replicas > int32(r.existing()) {
		// The controller's last status counted a pod that is gone now (status.replicas counts
		// created pods, computeReplicaStatus/isCreated, stateful_set_control.go@v1.37.2,
		// stateful_set_utils.go:476): it has not synced since the pod went, and creates the new
		// one in that sync (processReplica, :439-453), so nothing failed yet.
		return
	}
	missing := d.ix.now.Sub(o.Since)
	refusal := d.ix.refusal(r.set, o.Name, o.Since)
	blockedBy := ""
	if refusal == nil && !r.ordered() {
		refusal, blockedBy = d.batchRefusal(r, i)
	}
	// Without an Event, a pod is missing for long only if the controller has seen the spec and
	// the objects tell since when.
	unobserved := r.set.Status.ObservedGeneration < r.set.Generation || o.Since.IsZero()
	if refusal == nil && (unobserved || missing < missingAfter) {
		if !unobserved {
			d.ix.wake(o.Since.Add(missingAfter))
		}
		return
	}
	f := Finding{Finding: apiv1.Finding{Code: apiv1.PodCreateFailed, Severity: apiv1.SeverityError,
		Namespace: r.set.Namespace, StatefulSet: r.set.Name, Pod: o.Name, Reason: string(facts.Unknown)}}
	fx := facts.CreateFailed{Pod: o.Name, Ordinal: o.Ordinal, Refusal: refusal, BlockedBy: blockedBy, MissingFor: missing.Round(time.Second),
		Replaced: r.set.Status.Replicas < int32(r.replicas) && r.Current != "" && r.Current != r.update, Blocked: r.blocked(i), Ordered: r.ordered()}
	f.Details.Object = "pod"
	f.Details.Ordinal = ptr.To(o.Ordinal)
	f.Details.TargetRevision = ptr.To(o.Target)
	f.Details.UpdateRevision = r.update
	f.Details.MissingFor = fx.MissingFor.String()
	if refusal != nil {
		refusalDetails(&f, refusal)
	}
	f.Details.BlockedBy = blockedBy
	f.Details.Reason = f.Reason
	f.Facts = fx
	d.add(f)
}

// batchRefusal returns the refusal of the lowest missing pod below index i that the API server
// refused, and its name. Under Parallel the controller creates the missing pods in slow-start
// batches (1, 2, 4, ... in ordinal order) and stops after the first batch with a failure
// (runForAll and slowStartBatch, stateful_set_control.go:334-364 and :539-552@v1.37.2): a pod
// above a refused one is never attempted and has no FailedCreate Event of its own.
func (d *diagnosis) batchRefusal(r *controllerView, i int) (*facts.Refusal, string) {
	for k := 0; k < i; k++ {
		o := r.Ordinals[k]
		if o.Pod != nil || o.Next != controller.Create {
			continue
		}
		if refusal := d.ix.refusal(r.set, o.Name, o.Since); refusal != nil {
			return refusal, o.Name
		}
	}
	return nil, ""
}

func refusalDetails(f *Finding, r *facts.Refusal) {
	f.Reason = string(r.Reason)
	f.Details.AdmissionError = r.Error
	if r.Kind == facts.KindClaim {
		f.Details.Object, f.Details.Claim = "claim", r.Name
	}
	if r.Quota != nil {
		f.Details.Quota, f.Details.ShortBy = r.Quota.Name, r.Quota.Short
	}
	f.Details.Checks = r.Checks
	f.Details.ServiceAccount = r.ServiceAccount
	f.Details.Policy = r.Policy
}

// waitBlocked reports a wait of the controller on a pod that no rule explains, once it has
// lasted longer than the threshold.
func (d *diagnosis) waitBlocked(r *controllerView, i int, o controller.Ordinal, condemned bool) {
	after := d.opts.NotReadyAfter
	switch {
	case o.Next == controller.WaitAvailable || o.Next == controller.WaitTerminated:
		// Available comes with time (minReadySeconds); a termination past its threshold is
		// PodStuckTerminating.
		return
	case o.Next == controller.WaitReady && after <= 0:
		return // the not-ready rule is off
	case after <= 0:
		after = defaultBlockedAfter
	}
	if o.Since.IsZero() {
		return
	}
	waited := d.ix.now.Sub(o.Since)
	if waited < after {
		d.ix.wake(o.Since.Add(after))
		return
	}
	fx := facts.WaitBlocked{Pod: o.Name, Ordinal: o.Ordinal, Step: o.Next, For: waited.Round(time.Second), Condemned: condemned,
		Phase: string(o.Pod.Status.Phase), Waiting: firstWaiting(o.Pod)}
	if i >= 0 {
		fx.Blocked = r.blocked(i)
	}
	if o.Next == controller.WaitRunning {
		fx.Init = d.ix.initWait(o.Pod)
	}
	if node := o.Pod.Spec.NodeName; d.ix.nodeLost(node) {
		fx.Node, fx.NodeState = node, d.nodeState(node)
		fx.NodeState.Eviction = d.eviction(node)
	}
	f := d.base(r, apiv1.RolloutBlocked, apiv1.SeverityError, o.Pod, nil)
	f.Reason = string(o.Next)
	f.Details.Ordinal = ptr.To(o.Ordinal)
	f.Details.WaitingFor = waitingFor(o.Next)
	f.Details.WaitedFor = fx.For.String()
	if fx.Node != "" {
		f.Details.Node = ptr.To(fx.Node)
		nodeDetails(&f.Details, fx.NodeState, fx.Node)
	}
	if in := fx.Init; in != nil {
		f.Container, f.Image, f.Details.InitContainer = in.Container, in.Image, true
		if in.Running {
			f.Details.RunningFor = in.For.String()
		}
		if e := in.LastExit; e != nil {
			f.Details.LastExitCode = ptr.To(e.Code)
			f.Details.LastExitReason, f.Details.LastExitMessage = e.Reason, e.Message
			f.Details.RestartCount = ptr.To(in.Restarts)
			f.LogCurrent = in.Exited
		}
	}
	f.Facts = fx
	d.add(f)
}

// waitingFor names what the controller waits for the pod to be.
func waitingFor(s controller.Step) string {
	switch s {
	case controller.WaitRunning:
		return "Running"
	case controller.WaitReady:
		return "Ready"
	case controller.WaitTerminated:
		return "Terminated"
	}
	return "Available"
}

func firstWaiting(pod *corev1.Pod) string {
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if st.State.Waiting != nil && st.State.Waiting.Reason != "" {
			return st.State.Waiting.Reason
		}
	}
	return ""
}

// existing counts the StatefulSet's pods that exist, in range or condemned.
func (r *controllerView) existing() int {
	n := len(r.Condemned)
	for _, o := range r.Ordinals {
		if o.Pod != nil {
			n++
		}
	}
	return n
}

// neverObserved reports a StatefulSet the controller has never synced for longer than
// missingAfter: every sync writes status.observedGeneration (stateful_set_control.go:585@v1.37.2,
// :539@v1.33.13), so none ran — kube-controller-manager is down, or runs without its statefulset
// controller. Nothing the model predicts happens then.
func (d *diagnosis) neverObserved(set *appsv1.StatefulSet) {
	if set.Status.ObservedGeneration != 0 || set.Generation == 0 || set.CreationTimestamp.IsZero() {
		return
	}
	age := d.ix.now.Sub(set.CreationTimestamp.Time)
	if age < missingAfter {
		d.ix.wake(set.CreationTimestamp.Add(missingAfter))
		return
	}
	f := Finding{Finding: apiv1.Finding{Code: apiv1.RolloutBlocked, Severity: apiv1.SeverityError,
		Namespace: set.Namespace, StatefulSet: set.Name, Reason: "NeverObserved"}}
	fx := facts.NeverObserved{For: age.Round(time.Second)}
	f.Details.WaitingFor = "Observed"
	f.Details.WaitedFor = fx.For.String()
	f.Facts = fx
	d.add(f)
}

// initWait returns the init container a Pending pod waits on, nil when none. Init containers
// start one at a time, in order, and the app containers start only once every regular one has
// exited 0 (computeInitContainerActions, kuberuntime_container.go:1063@v1.37.2); sidecars
// (restartPolicy Always) keep running, so the one waited on is the last that runs or, with none
// running, the first that exited non-zero (the kubelet restarts it: kubelet_pods.go:2733-2738).
func (ix *index) initWait(pod *corev1.Pod) *facts.InitWait {
	if pod.Status.Phase != corev1.PodPending {
		return nil
	}
	images := map[string]string{}
	for _, c := range pod.Spec.InitContainers {
		images[c.Name] = c.Image
	}
	wait := func(st corev1.ContainerStatus) *facts.InitWait {
		in := &facts.InitWait{Container: st.Name, Image: images[st.Name], Restarts: st.RestartCount}
		if in.Image == "" {
			in.Image = st.Image
		}
		return in
	}
	statuses := pod.Status.InitContainerStatuses
	for k := len(statuses) - 1; k >= 0; k-- {
		if run := statuses[k].State.Running; run != nil {
			in := wait(statuses[k])
			in.Running = true
			if !run.StartedAt.IsZero() {
				in.For = ix.now.Sub(run.StartedAt.Time).Round(time.Second)
			}
			return in
		}
	}
	for _, st := range statuses {
		if t := latestExit(st); t != nil && t.ExitCode != 0 && (st.State.Terminated != nil || st.State.Waiting != nil) {
			in := wait(st)
			in.LastExit, in.Exited = exitOf(t), st.State.Terminated != nil
			return in
		}
	}
	return nil
}

// canaryNotStarted reports a StatefulSet that declares a canary (apiv1.AnnotationCanarySteps)
// whose new revision has waited longer than missingAfter with the partition at or above
// spec.replicas: the controller updates only the pods at or above the partition
// (stateful_set_control.go:744-750@v1.37.2), so none moves until `stsdiag watch` sets the first
// step's partition, which it does within seconds of the change (internal/watch/canary.go). Nobody
// steps it: no watch runs, or it lacks the rights of deploy/watch-fix. A partition held on purpose
// without the annotation is a user's canary and not reported.
func (d *diagnosis) canaryNotStarted(set *appsv1.StatefulSet) {
	if _, declared := set.Annotations[apiv1.AnnotationCanarySteps]; !declared {
		return
	}
	st := set.Status
	if st.ObservedGeneration < set.Generation || st.UpdateRevision == "" || st.UpdateRevision == st.CurrentRevision {
		return
	}
	replicas := controller.Replicas(set)
	ru := set.Spec.UpdateStrategy.RollingUpdate
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType || ru == nil || ru.Partition == nil || *ru.Partition < replicas {
		return
	}
	created := d.ix.revisionCreated(set, st.UpdateRevision)
	if created.IsZero() {
		return
	}
	if waited := d.ix.now.Sub(created); waited < missingAfter {
		d.ix.wake(created.Add(missingAfter))
		return
	}
	f := Finding{Finding: apiv1.Finding{Code: apiv1.RolloutBlocked, Severity: apiv1.SeverityError,
		Namespace: set.Namespace, StatefulSet: set.Name, Reason: "CanaryNotStarted"}}
	fx := facts.CanaryNotStarted{Revision: st.UpdateRevision, Steps: set.Annotations[apiv1.AnnotationCanarySteps],
		Partition: *ru.Partition, Replicas: replicas, For: d.ix.now.Sub(created).Round(time.Second)}
	f.Details.WaitingFor = "CanaryStep"
	f.Details.WaitedFor = fx.For.String()
	f.Facts = fx
	d.add(f)
}

// canaryPaused reports a canary stsdiag watch paused (rollout.CanaryUnderWay, with the
// Reconciling condition watch writes, reason apiv1.ReasonCanaryPaused: its step's analysis
// could not tell, internal/watch/analysis.go). Watch takes no step until its analysis, its
// template or its partition changes, and the controller moves no pod below the partition
// (stateful_set_control.go:744-750@v1.37.2): nothing goes on without a person, while the
// controller's status, partition respected, says complete. Not reported once the condition
// is older than the spec (a generation watch has not looked at since).
func (d *diagnosis) canaryPaused(set *appsv1.StatefulSet) {
	if !controller.CanaryUnderWay(set) || set.Status.ObservedGeneration < set.Generation {
		return
	}
	var paused *appsv1.StatefulSetCondition
	for i := range set.Status.Conditions {
		if c := &set.Status.Conditions[i]; c.Type == apiv1.ConditionReconciling && c.Status == corev1.ConditionTrue && c.Reason == apiv1.ReasonCanaryPaused {
			paused = c
		}
	}
	if paused == nil {
		return
	}
	replicas, partition := controller.Replicas(set), controller.Partition(set)
	fx := facts.CanaryPaused{Revision: set.Status.UpdateRevision, Steps: set.Annotations[apiv1.AnnotationCanarySteps], Partition: partition, Replicas: replicas, Message: paused.Message}
	f := Finding{Finding: apiv1.Finding{Code: apiv1.RolloutBlocked, Severity: apiv1.SeverityError,
		Namespace: set.Namespace, StatefulSet: set.Name, Reason: apiv1.ReasonCanaryPaused}}
	f.Details.WaitingFor = "CanaryAnalysis"
	if !paused.LastTransitionTime.IsZero() {
		fx.For = d.ix.now.Sub(paused.LastTransitionTime.Time).Round(time.Second)
		f.Details.WaitedFor = fx.For.String()
	}
	f.Facts = fx
	d.add(f)
}
