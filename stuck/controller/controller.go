// Package controller says what the StatefulSet controller does next for each ordinal of a
// StatefulSet, and what it waits on: a pure model of one sync of
// pkg/controller/statefulset/stateful_set_control.go (updateStatefulSet, processReplica,
// processCondemned and the rolling update) of the server's release. It reads objects and a
// clock, never the API.
package controller

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kubectl/pkg/util/podutils"
)

// Behaviour is what differs between releases of the controller (the rules of each release, with
// the upstream source of each, are in package stuck: RulesFor).
type Behaviour struct {
	// MaxUnavailable is the MaxUnavailableStatefulSet gate: the rolling update follows
	// updateStatefulSetAfterInvariantEstablished.
	MaxUnavailable bool
	// ParallelTwoPhase is 1.37's Parallel path: unavailable off-revision pods are deleted first,
	// whatever the budget (stateful_set_control.go:881-895@v1.37.2).
	ParallelTwoPhase bool
	// AvailabilityHonoursMinReady: from 1.34 an unavailable pod (Ready for less than
	// minReadySeconds) stops an OrderedReady sync (processReplica, :485@v1.37.2).
	AvailabilityHonoursMinReady bool
	// SucceededRecreated: from 1.27 a Succeeded pod is deleted and recreated like a Failed one
	// (isTerminalPhase, :429@v1.37.2; before, only isFailed, :377@v1.25.16).
	SucceededRecreated bool
	// RecreateOff is the Recreate strategy with its gate off: the controller records
	// UnknownStrategy and changes nothing (:577-581@v1.37.2).
	RecreateOff bool
}

// Step is what the controller does next for one ordinal; its values are the public vocabulary
// of an Explanation's ordinals (api/v1's Step constants, the same strings).
type Step string

// Steps, in the order the controller's sync meets them.
const (
	// Nothing: the pod exists, is Running, Ready and Available, and no update is due for it.
	Nothing Step = "Nothing"
	// Create: the pod (and its PersistentVolumeClaims) does not exist; the controller creates it.
	Create Step = "Create"
	// RecreateTerminal: the pod Failed or Succeeded; the controller deletes it and creates it again.
	RecreateTerminal Step = "RecreateTerminal"
	// WaitRunning: the pod is Pending (scheduling, pulling images, starting containers).
	WaitRunning Step = "WaitRunning"
	// WaitReady: the pod runs but is not Ready.
	WaitReady Step = "WaitReady"
	// WaitAvailable: the pod is Ready for less than minReadySeconds.
	WaitAvailable Step = "WaitAvailable"
	// WaitTerminated: the pod is terminating; the controller waits for it to be gone.
	WaitTerminated Step = "WaitTerminated"
	// DeleteToUpdate: the pod runs another revision; the controller deletes it to recreate it
	// from its target revision.
	DeleteToUpdate Step = "DeleteToUpdate"
	// DeleteToScaleDown: the pod's ordinal is beyond spec.replicas; the controller deletes it.
	DeleteToScaleDown Step = "DeleteToScaleDown"
	// WaitManualDelete: the pod runs another revision and the controller never replaces it
	// (OnDelete, or an ordinal below the partition that must be recreated by hand).
	WaitManualDelete Step = "WaitManualDelete"
	// NotReached: under OrderedReady the sync stops at an earlier ordinal first.
	NotReached Step = "NotReached"
)

// Waiting reports whether the step is a wait on the pod's own state (not an action, not nothing).
func (s Step) Waiting() bool {
	switch s {
	case WaitRunning, WaitReady, WaitAvailable, WaitTerminated:
		return true
	}
	return false
}

// Ordinal is one ordinal of the StatefulSet as the controller sees it.
type Ordinal struct {
	// Ordinal is the pod's ordinal (spec.ordinals.start included).
	Ordinal int
	// Name is the pod's name, whether or not it exists.
	Name string
	// Pod is nil when no pod of that name exists.
	Pod *corev1.Pod
	// Revision is the pod's controller-revision-hash ("" when missing).
	Revision string
	// Target is the revision the controller creates the pod from.
	Target string
	// Next is what the controller does next here.
	Next Step
	// Holds marks the ordinal the sync stops at (OrderedReady), or an ordinal whose own wait
	// keeps the rollout from finishing (Parallel): the one to look at.
	Holds bool
	// Since is when the current wait or missing pod began, as far as the objects tell; zero
	// when unknown.
	Since time.Time
}

// View is the controller's view of one StatefulSet.
type View struct {
	Set       *appsv1.StatefulSet
	Behaviour Behaviour
	// Start is spec.ordinals.start, Replicas spec.replicas (1 when unset).
	Start, Replicas int
	// Partition is the rolling update's partition (0 for other strategies).
	Partition int
	// Current and Update are status.currentRevision and the revision new pods get.
	Current, Update string
	// Ordinals holds spec.replicas entries, lowest ordinal first.
	Ordinals []Ordinal
	// Condemned are the pods whose ordinal lies outside the range (scale down), highest first.
	Condemned []Ordinal
	// MaxUnavailable is the rolling update's budget; Unavailable the pods counted against it.
	MaxUnavailable, Unavailable int
	now                         time.Time
}

// Inputs are the objects one StatefulSet's view is built from.
type Inputs struct {
	Set *appsv1.StatefulSet
	// Pods the StatefulSet owns.
	Pods []*corev1.Pod
	// Update is the revision new pods get (status.updateRevision, or the revision of today's
	// template when the controller has not observed it yet).
	Update string
	// UpdateCreated is when the update revision was created (zero when unknown): a pod the
	// controller deleted to update is missing at the latest from then.
	UpdateCreated time.Time
	Now           time.Time
	Behaviour     Behaviour
}

// Sync models one sync of the controller over the inputs.
func Sync(in Inputs) *View {
	v := newView(in)
	if v.Set.DeletionTimestamp != nil {
		// Only the status is updated while the StatefulSet is deleted (:650-654@v1.37.2).
		for i := range v.Ordinals {
			v.Ordinals[i].Next = NotReached
		}
		return v
	}
	if v.Behaviour.RecreateOff && v.Set.Spec.UpdateStrategy.Type == RecreateStrategy {
		for i := range v.Ordinals {
			v.Ordinals[i].Next = NotReached
		}
		return v
	}
	if v.Set.Spec.UpdateStrategy.Type == RecreateStrategy && v.recreate() {
		return v
	}
	if v.processReplicas() {
		return v
	}
	if v.processCondemned() {
		return v
	}
	v.update()
	return v
}

// recreate is the Recreate strategy's first step (recreateDeleteAndWait,
// stateful_set_control.go:779-817@v1.37.2): every pod not on the update revision is deleted, and
// nothing is created until all of them are gone. It reports whether the sync stops there.
func (v *View) recreate() (stop bool) {
	for _, list := range [][]Ordinal{v.Ordinals, v.Condemned} {
		for i := range list {
			o := &list[i]
			if o.Pod == nil || o.Pod.Status.Phase == "" || o.Revision == v.Update {
				continue
			}
			stop = true
			if o.Pod.DeletionTimestamp != nil {
				o.Next, o.Since, o.Holds = WaitTerminated, o.Pod.DeletionTimestamp.Time, true
			} else {
				o.Next = DeleteToUpdate
			}
		}
	}
	if !stop {
		return false
	}
	for _, list := range [][]Ordinal{v.Ordinals, v.Condemned} {
		for i := range list {
			if list[i].Next == "" {
				list[i].Next = NotReached
			}
		}
	}
	return true
}

// RecreateStrategy is the 1.37 alpha strategy; k8s.io/api 0.35 has no constant.
const RecreateStrategy appsv1.StatefulSetUpdateStrategyType = "Recreate"

func newView(in Inputs) *View {
	set := in.Set
	v := &View{Set: set, Behaviour: in.Behaviour, Current: set.Status.CurrentRevision, Update: in.Update, now: in.Now}
	if set.Spec.Ordinals != nil {
		v.Start = int(set.Spec.Ordinals.Start)
	}
	v.Replicas = int(Replicas(set))
	if v.RollingUpdate() {
		v.Partition = int(Partition(set))
	}
	v.Ordinals = make([]Ordinal, v.Replicas)
	for i := range v.Ordinals {
		v.Ordinals[i] = Ordinal{Ordinal: v.Start + i, Name: PodName(set.Name, v.Start+i)}
	}
	for _, pod := range in.Pods {
		n, ok := ParseOrdinal(set.Name, pod.Name)
		switch {
		case !ok:
		case n >= v.Start && n-v.Start < v.Replicas:
			o := &v.Ordinals[n-v.Start]
			o.Pod, o.Revision = pod, PodRevision(pod)
		default:
			v.Condemned = append(v.Condemned, Ordinal{Ordinal: n, Name: pod.Name, Pod: pod, Revision: PodRevision(pod)})
		}
	}
	sortDescending(v.Condemned)
	for i := range v.Ordinals {
		v.Ordinals[i].Target = v.target(i)
	}
	v.MaxUnavailable = v.maxUnavailable()
	for _, o := range v.Ordinals {
		if o.Pod == nil || v.unavailable(o.Pod) {
			v.Unavailable++
		}
	}
	v.missingSince(in.UpdateCreated)
	return v
}

// RollingUpdate reports whether the strategy is RollingUpdate (the default).
func (v *View) RollingUpdate() bool {
	t := v.Set.Spec.UpdateStrategy.Type
	return t == appsv1.RollingUpdateStatefulSetStrategyType || t == ""
}

// Ordered reports whether the pod management policy is OrderedReady (monotonic).
func (v *View) Ordered() bool {
	return v.Set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
}

// target is the revision the controller gives the pod at this index when it creates it
// (newVersionedStatefulSetPod, stateful_set_utils.go:535@v1.37.2).
func (v *View) target(i int) string {
	if v.RollingUpdate() && i < v.Partition && v.Current != "" {
		return v.Current
	}
	return v.Update
}

// maxUnavailable is the rolling update's budget, scaled and rounded down, at least 1
// (getStatefulSetMaxUnavailable, stateful_set_utils.go:610@v1.25.16).
func (v *View) maxUnavailable() int {
	value := intstr.FromInt32(1)
	if ru := v.Set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil && v.Behaviour.MaxUnavailable {
		value = *ru.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&value, v.Replicas, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// unavailable is isUnavailable (stateful_set_utils.go:496@v1.37.2); before 1.34 the controller
// did not count minReadySeconds.
func (v *View) unavailable(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || !RunningAndReady(pod) {
		return true
	}
	return v.Behaviour.AvailabilityHonoursMinReady && !v.available(pod)
}

func (v *View) available(pod *corev1.Pod) bool {
	return podutils.IsPodAvailable(pod, v.Set.Spec.MinReadySeconds, metav1.NewTime(v.now))
}

// processReplicas is the first loop of updateStatefulSet (processReplica, :421-509@v1.37.2). It
// reports whether the sync stops there.
func (v *View) processReplicas() (stop bool) {
	for i := range v.Ordinals {
		o := &v.Ordinals[i]
		if stop {
			o.Next = NotReached
			continue
		}
		o.Next = v.replicaStep(o)
		if o.Next != Nothing {
			// OrderedReady stops here; Parallel goes on, but the rollout waits for this one too.
			o.Holds = true
			stop = v.Ordered()
		}
	}
	return stop
}

func (v *View) replicaStep(o *Ordinal) Step {
	pod := o.Pod
	switch {
	case pod == nil:
		return Create
	case pod.Status.Phase == corev1.PodFailed || (pod.Status.Phase == corev1.PodSucceeded && v.Behaviour.SucceededRecreated):
		if pod.DeletionTimestamp != nil {
			// Already being deleted: the controller waits for it to be gone (:429-436@v1.37.2).
			o.Since = pod.DeletionTimestamp.Time
			return WaitTerminated
		}
		return RecreateTerminal
	case pod.DeletionTimestamp != nil:
		o.Since = pod.DeletionTimestamp.Time
		return WaitTerminated
	case pod.Status.Phase != corev1.PodRunning:
		o.Since = pod.CreationTimestamp.Time
		return WaitRunning
	case !RunningAndReady(pod):
		o.Since = notReadySince(pod)
		return WaitReady
	case !v.available(pod):
		// The monotonic wait for availability is in every modelled release (:485@v1.37.2,
		// :436@v1.33.13); only the update's budget counts it from 1.34.
		o.Since = readySince(pod)
		return WaitAvailable
	}
	return Nothing
}

// processCondemned is the scale-down loop (processCondemned, :511-538@v1.37.2): highest ordinal
// first; under OrderedReady one pod per sync, and only once every replica is Ready.
func (v *View) processCondemned() (stop bool) {
	firstUnhealthy := v.firstUnavailable()
	for i := range v.Condemned {
		o := &v.Condemned[i]
		if stop {
			o.Next = NotReached
			continue
		}
		switch {
		case o.Pod.DeletionTimestamp != nil:
			o.Next, o.Since = WaitTerminated, o.Pod.DeletionTimestamp.Time
			if !v.Ordered() {
				continue
			}
		case v.Ordered() && firstUnhealthy != "" && firstUnhealthy != o.Name && !RunningAndReady(o.Pod):
			o.Next, o.Since = WaitReady, notReadySince(o.Pod)
		case v.Ordered() && firstUnhealthy != "" && firstUnhealthy != o.Name && !v.available(o.Pod):
			// (:526@v1.37.2)
			o.Next, o.Since = WaitAvailable, readySince(o.Pod)
		default:
			o.Next = DeleteToScaleDown
			if !v.Ordered() {
				continue
			}
		}
		o.Holds = v.Ordered()
		stop = v.Ordered()
	}
	return stop
}

// firstUnavailable is the first unavailable replica, else the lowest unavailable condemned pod.
func (v *View) firstUnavailable() string {
	for _, o := range v.Ordinals {
		if o.Pod != nil && v.unavailable(o.Pod) {
			return o.Name
		}
	}
	for i := len(v.Condemned) - 1; i >= 0; i-- {
		if v.unavailable(v.Condemned[i].Pod) {
			return v.Condemned[i].Name
		}
	}
	return ""
}

// update is the strategy's part of the sync (:727-817@v1.37.2 and
// updateStatefulSetAfterInvariantEstablished, :819-935@v1.37.2).
func (v *View) update() {
	switch {
	case v.Set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
		for i := range v.Ordinals {
			if o := &v.Ordinals[i]; o.Pod != nil && o.Revision != o.Target {
				o.Next = WaitManualDelete
			}
		}
		return
	case v.Set.Spec.UpdateStrategy.Type == RecreateStrategy:
		for i := range v.Ordinals {
			if o := &v.Ordinals[i]; o.Pod != nil && o.Revision != v.Update {
				o.Next = DeleteToUpdate
			}
		}
		return
	}
	v.belowPartition()
	deletes := v.RollingDeletes()
	for _, i := range deletes {
		v.Ordinals[i].Next = DeleteToUpdate
	}
	if len(deletes) > 0 || v.Ordered() {
		v.holdAtUpdate(deletes)
		return
	}
	v.holdAtUpdate(nil)
}

// belowPartition marks off-revision pods below the partition: the controller never replaces them.
func (v *View) belowPartition() {
	for i := 0; i < v.Partition && i < len(v.Ordinals); i++ {
		if o := &v.Ordinals[i]; o.Pod != nil && o.Revision != o.Target && o.Next == Nothing {
			o.Next = WaitManualDelete
		}
	}
}

// holdAtUpdate marks where the rolling update waits: the highest off-revision pod it cannot
// delete, or the unavailable pod it waits for (classic path, :749-770@v1.37.2).
func (v *View) holdAtUpdate(deletes []int) {
	if len(deletes) > 0 {
		return
	}
	for i := len(v.Ordinals) - 1; i >= v.Partition; i-- {
		o := &v.Ordinals[i]
		if o.Pod == nil {
			continue
		}
		if o.Revision != v.Update && o.Pod.DeletionTimestamp == nil {
			o.Holds = true
			return
		}
		if v.unavailable(o.Pod) {
			o.Holds = true
			return
		}
	}
}

// RollingDeletes are the indexes of the pods the rolling update deletes in this sync, once the
// replicas loop let it run.
func (v *View) RollingDeletes() []int {
	if !v.RollingUpdate() {
		return nil
	}
	if !v.Behaviour.MaxUnavailable {
		return v.classicDeletes()
	}
	if !v.Ordered() && v.Behaviour.ParallelTwoPhase {
		return v.twoPhaseDeletes()
	}
	return v.budgetDeletes()
}

// classicDeletes: the highest off-revision pod that is not terminating, unless an unavailable
// pod above it is waited for first (:749-770@v1.37.2).
func (v *View) classicDeletes() []int {
	for i := len(v.Ordinals) - 1; i >= v.Partition; i-- {
		pod := v.Ordinals[i].Pod
		if pod == nil {
			return nil
		}
		if v.Ordinals[i].Revision != v.Update && pod.DeletionTimestamp == nil {
			return []int{i}
		}
		if v.unavailable(pod) {
			return nil
		}
	}
	return nil
}

// budgetDeletes: maxUnavailable minus the unavailable pods, highest first; nothing when the
// budget is used up (:919-932@v1.37.2 for OrderedReady; the only path before 1.37, where
// unavailable pods of any revision use it up: :775@v1.35.3, kubernetes#137409).
func (v *View) budgetDeletes() []int {
	unavailable := v.countUnavailable()
	left := v.MaxUnavailable - unavailable
	var out []int
	for i := len(v.Ordinals) - 1; i >= v.Partition && left > 0; i-- {
		o := v.Ordinals[i]
		if o.Pod != nil && o.Revision != v.Update && o.Pod.DeletionTimestamp == nil {
			out = append(out, i)
			left--
		}
	}
	return out
}

// twoPhaseDeletes is 1.37's Parallel path: first every unavailable off-revision pod, then
// available ones within the remaining budget (:870-916@v1.37.2).
func (v *View) twoPhaseDeletes() []int {
	unavailable, needingUpdate := 0, 0
	for _, o := range v.Ordinals {
		if o.Pod == nil {
			continue
		}
		if v.unavailable(o.Pod) {
			unavailable++
			if o.Revision != v.Update && o.Pod.DeletionTimestamp == nil {
				needingUpdate++
			}
		}
	}
	if unavailable >= v.MaxUnavailable && needingUpdate == 0 {
		return nil
	}
	var out []int
	for i := len(v.Ordinals) - 1; i >= v.Partition; i-- {
		o := v.Ordinals[i]
		if o.Pod != nil && o.Revision != v.Update && !v.available(o.Pod) && o.Pod.DeletionTimestamp == nil {
			out = append(out, i)
		}
	}
	budget := v.MaxUnavailable - unavailable
	for i := len(v.Ordinals) - 1; i >= v.Partition && budget > 0; i-- {
		o := v.Ordinals[i]
		if o.Pod != nil && o.Revision != v.Update && !v.unavailable(o.Pod) {
			out = append(out, i)
			budget--
		}
	}
	return out
}

// countUnavailable counts existing pods the budget counts (the model of the update functions,
// which see only created pods).
func (v *View) countUnavailable() int {
	n := 0
	for _, o := range v.Ordinals {
		if o.Pod != nil && v.unavailable(o.Pod) {
			n++
		}
	}
	return n
}

// Holding returns the ordinals that hold the rollout, lowest first.
func (v *View) Holding() []Ordinal {
	var out []Ordinal
	for _, o := range v.Ordinals {
		if o.Holds {
			out = append(out, o)
		}
	}
	for i := len(v.Condemned) - 1; i >= 0; i-- {
		if v.Condemned[i].Holds {
			out = append(out, v.Condemned[i])
		}
	}
	return out
}

// missingSince estimates since when each missing pod should exist: under OrderedReady from when
// its predecessor became available, otherwise from the StatefulSet's creation; never before the
// update revision was created (a pod deleted for an update is missing from then at the latest).
func (v *View) missingSince(updateCreated time.Time) {
	since := v.Set.CreationTimestamp.Time
	if updateCreated.After(since) {
		since = updateCreated
	}
	for i := range v.Ordinals {
		o := &v.Ordinals[i]
		if o.Pod == nil {
			o.Since = since
			continue
		}
		if v.Ordered() {
			if ready := readySince(o.Pod); !ready.IsZero() {
				at := ready.Add(time.Duration(v.Set.Spec.MinReadySeconds) * time.Second)
				if at.After(since) {
					since = at
				}
			}
		}
	}
}
