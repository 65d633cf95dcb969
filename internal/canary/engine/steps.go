// Package engine steps a StatefulSet's rolling-update partition so that a new template reaches
// a few pods first, is proven healthy by wait's diagnosis and hold rules, and only then reaches
// the others: the step machine that `stsdiag canary` and watch both drive (Turn over a Port,
// machine.go), its decision (Decide, engine.go) and its guarded patches (patch.go). This file is
// the pure arithmetic: steps, partitions and canary pods.
//
// The partition is an index, not an ordinal: the controller updates replicas[i] for
// i ≥ partition, where replicas[i] is the pod of ordinal spec.ordinals.start+i
// (pkg/controller/statefulset/stateful_set_control.go:603-607 and :744-750@v1.37.2), and creates a
// pod at the current revision when ordinal < start+partition (newVersionedStatefulSetPod,
// stateful_set_utils.go:536-541@v1.37.2). So a step that puts n pods on the update revision sets
// partition = replicas − n whatever ordinals.start is, and moves the pods of ordinals
// start+replicas−n … start+replicas−1 (the highest, the ones the controller updates first).
package engine

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stsdiag/stsdiag/stuck/controller"
)

// Step is one entry of --steps: a number of pods, or a percentage of spec.replicas, to have on
// the update revision.
type Step struct {
	// Text is the step as written ("1", "50%").
	Text  string
	value intstr.IntOrString
}

// ParseSteps parses a comma-separated list such as "1,50%,100%": each entry is a positive number
// of pods or a percentage in (0,100]. Entries of the same kind must increase (counts among counts,
// percentages among percentages; a mix is checked against spec.replicas by Resolve). The last
// step is always 100%: it is implied when not written.
func ParseSteps(s string) ([]Step, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--steps is empty: want e.g. 1,50%%,100%%")
	}
	var steps []Step
	lastCount, lastPct := 0, 0
	for _, raw := range strings.Split(s, ",") {
		text := strings.TrimSpace(raw)
		if pct, ok := strings.CutSuffix(text, "%"); ok {
			n, err := strconv.Atoi(pct)
			if err != nil || n <= 0 || n > 100 {
				return nil, fmt.Errorf("step %q: a percentage must be a whole number from 1%% to 100%%", text)
			}
			if n <= lastPct {
				return nil, fmt.Errorf("step %q: steps must increase (%d%% comes after %d%%)", text, n, lastPct)
			}
			lastPct = n
			steps = append(steps, Step{Text: text, value: intstr.FromString(text)})
			continue
		}
		n, err := strconv.Atoi(text)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("step %q: want a positive number of pods (1) or a percentage of spec.replicas (50%%)", text)
		}
		if n <= lastCount {
			return nil, fmt.Errorf("step %q: steps must increase (%d comes after %d)", text, n, lastCount)
		}
		lastCount = n
		steps = append(steps, Step{Text: text, value: intstr.FromInt(n)})
	}
	return steps, nil
}

// Resolved is a step against a number of replicas.
type Resolved struct {
	// Step as written ("100%" for the implied last step).
	Step string
	// Pods on the update revision once the step is done.
	Pods int32
	// Partition that makes it so: replicas − Pods.
	Partition int32
}

// Resolve turns the steps into partitions for replicas pods. A percentage is rounded up, so every
// step moves at least one pod (intstr.GetScaledValueFromIntOrPercent with roundUp; the
// controller's own percentage, maxUnavailable, rounds down and then raises 0 to 1,
// stateful_set_utils.go:700-710@v1.37.2 — rounding up gives the same floor of one pod and never
// fewer pods than asked). A count above replicas means all of them. A step that would move no pod
// beyond the one before is merged into it (named in merged); a step that would move fewer is an
// error. The last step is 100% (partition 0), added when not written.
func Resolve(steps []Step, replicas int32) (out []Resolved, merged []string, err error) {
	if replicas <= 0 {
		return nil, nil, fmt.Errorf("spec.replicas is %d: there is no pod to canary", replicas)
	}
	for _, s := range steps {
		v := s.value
		n, err := intstr.GetScaledValueFromIntOrPercent(&v, int(replicas), true)
		if err != nil {
			return nil, nil, fmt.Errorf("step %q: %w", s.Text, err)
		}
		pods := min(int32(n), replicas)
		if len(out) > 0 {
			prev := out[len(out)-1]
			if pods < prev.Pods {
				return nil, nil, fmt.Errorf("step %q moves %d of %d pods, fewer than step %q before it (%d): steps must increase", s.Text, pods, replicas, prev.Step, prev.Pods)
			}
			if pods == prev.Pods {
				merged = append(merged, fmt.Sprintf("step %q moves no pod beyond step %q (%d of %d replicas): merged into it", s.Text, prev.Step, pods, replicas))
				continue
			}
		}
		out = append(out, Resolved{Step: s.Text, Pods: pods, Partition: replicas - pods})
	}
	if len(out) == 0 || out[len(out)-1].Pods < replicas {
		out = append(out, Resolved{Step: "100%", Pods: replicas, Partition: 0})
	}
	return out, merged, nil
}

// Next is the step that follows a partition: the first whose partition is below it (steps
// resolved against the replicas of now, so a scale during the canary moves the remaining steps
// with it, and a step a scale-up already covered is skipped). ok is false when no step remains
// (the partition is 0).
func Next(steps []Resolved, partition int32) (step Resolved, index int, ok bool) {
	for i, s := range steps {
		if s.Partition < partition {
			return s, i, true
		}
	}
	return Resolved{}, -1, false
}

// CanaryPods names the pods at or above a partition: those the controller moves to the update
// revision (ordinals start+partition … start+replicas−1), highest first.
func CanaryPods(set *appsv1.StatefulSet, partition int32) []string {
	start := int32(0)
	if set.Spec.Ordinals != nil {
		start = set.Spec.Ordinals.Start
	}
	var out []string
	for i := controller.Replicas(set) - 1; i >= max(partition, 0); i-- {
		out = append(out, fmt.Sprintf("%s-%d", set.Name, start+i))
	}
	return out
}

// CheckStrategy refuses a StatefulSet whose update strategy ignores the partition.
func CheckStrategy(set *appsv1.StatefulSet) error {
	switch t := set.Spec.UpdateStrategy.Type; t {
	case "", appsv1.RollingUpdateStatefulSetStrategyType:
		return nil
	case appsv1.OnDeleteStatefulSetStrategyType:
		return fmt.Errorf("statefulset %s/%s has updateStrategy OnDelete: the controller updates a pod only when someone deletes it and ignores the partition, so a canary cannot step it; use RollingUpdate", set.Namespace, set.Name)
	default:
		return fmt.Errorf("statefulset %s/%s has updateStrategy %s: the controller does not update by partition, so a canary cannot step it; use RollingUpdate", set.Namespace, set.Name, t)
	}
}
