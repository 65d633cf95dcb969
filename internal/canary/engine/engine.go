package engine

import (
	appsv1 "k8s.io/api/apps/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// The step engine: one decision over typed facts (Decide), which the step machine (machine.go)
// carries out; `stsdiag canary` gives it facts from its gate, watch from each sync of an
// annotated StatefulSet. Its state is the cluster's: the partition says which step the canary is
// at, so a restarted watch resumes where it was.

// Annotations of a canary declared on a StatefulSet, for watch.
const (
	// AnnotationSteps declares the steps ("1,50%"), as --steps.
	AnnotationSteps = apiv1.AnnotationCanarySteps
	// AnnotationHold is how long each step must stay healthy ("5m"), as --hold; watch's --hold
	// when absent.
	AnnotationHold = apiv1.AnnotationCanaryHold
	// AnnotationStep is written by watch with each partition it sets: the step, its partition and
	// the revision it rolls out. For people and tools; watch never reads it back.
	AnnotationStep = "stsdiag.io/canary-step"
)

// Facts are what one decision needs, from one read of the StatefulSet.
type Facts struct {
	Replicas, Partition int32
	// Observed: status.observedGeneration has caught up with metadata.generation.
	Observed bool
	// Pending: status.updateRevision differs from currentRevision (a rollout is under way).
	Pending bool
	// Healthy: the pods at or above the partition have been Ready on the update revision, with no
	// blocking finding, for the hold.
	Healthy bool
	// Stuck: a blocking finding has held for the hold.
	Stuck bool
	// Parked: no step of the rollout was taken yet — the partition is where it was held before
	// the template changed, at or above spec.replicas — so the first step is taken at once and,
	// moving no pod, is measured by no analysis. FactsOf says so from the partition (watch keeps
	// no other state); canary, which took its first step itself, never is.
	Parked bool
}

// FactsOf reads the facts of a StatefulSet; the caller adds Healthy and Stuck from its hold rules.
func FactsOf(set *appsv1.StatefulSet) Facts {
	f := Facts{Replicas: controller.Replicas(set), Partition: controller.Partition(set),
		Observed: set.Status.ObservedGeneration >= set.Generation && set.Status.UpdateRevision != "",
		Pending:  set.Status.UpdateRevision != set.Status.CurrentRevision}
	f.Parked = f.Partition >= f.Replicas
	return f
}

// StepComplete reports whether the current step's pods are all Ready on the update revision (and
// available for minReadySeconds): rollout.Complete, which respects the partition.
func StepComplete(set *appsv1.StatefulSet) bool { return controller.StatusComplete(set) }

// Verb is what a decision does.
type Verb string

// Decisions.
const (
	// Wait: the step is under way (or the controller has not observed the spec yet).
	Wait Verb = "Wait"
	// Advance: lower the partition to Step's.
	Advance Verb = "Advance"
	// RollBack: a canary pod is stuck: roll the template back (plan.CanaryRollback).
	RollBack Verb = "RollBack"
	// Done: no rollout is pending and the last one is complete.
	Done Verb = "Done"
)

// Decision is the engine's answer.
type Decision struct {
	Verb Verb
	// Step is the step Advance sets (its partition), resolved against the replicas of now.
	Step Resolved
	// Index of Step among the resolved steps, and how many there are.
	Index, Of int
}

// Decide is the step engine. A stuck finding rolls back; a step that stayed healthy for the hold
// advances to the next step; a parked partition (nothing moved yet, held at or above replicas
// between rollouts) advances to the first step at once.
func Decide(steps []Step, f Facts) (Decision, error) {
	switch {
	case !f.Observed:
		return Decision{Verb: Wait}, nil
	case !f.Pending:
		return Decision{Verb: Done}, nil
	case f.Stuck:
		return Decision{Verb: RollBack}, nil
	}
	resolved, _, err := Resolve(steps, f.Replicas)
	if err != nil {
		return Decision{}, err
	}
	next, index, ok := Next(resolved, f.Partition)
	if !ok || (!f.Healthy && !f.Parked) {
		return Decision{Verb: Wait}, nil
	}
	return Decision{Verb: Advance, Step: next, Index: index, Of: len(resolved)}, nil
}
