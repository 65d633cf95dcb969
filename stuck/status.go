package stuck

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// rollout is one StatefulSet's rollout as its object says, before the findings are counted.
type rollout struct {
	summary     apiv1.StatefulSetSummary
	terminating bool
	// complete: the controller reports the rollout done (controller.StatusComplete) and no
	// canary watch steps is under way (controller.CanaryUnderWay).
	complete bool
	// observed: the controller has synced the latest spec; updated is status.updatedReplicas.
	observed bool
	updated  int32
	// waiting says which pod the controller waits on now, "" when none or unknown.
	waiting string
}

// summaries gives each StatefulSet its status once every rule has run, and a message: Terminating
// while it is deleted, else Stuck with an error finding, else Complete or Progressing.
func summaries(sets []rollout, findings []Finding) []apiv1.StatefulSetSummary {
	if len(sets) == 0 {
		return nil
	}
	// The first error finding of each set, in report order (findings are sorted), and how many
	// there are.
	type failing struct {
		first *Finding
		n     int
	}
	errs := map[types.NamespacedName]*failing{}
	for i := range findings {
		f := &findings[i]
		if f.Severity != apiv1.SeverityError {
			continue
		}
		key := types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}
		if errs[key] == nil {
			errs[key] = &failing{first: f}
		}
		errs[key].n++
	}
	out := make([]apiv1.StatefulSetSummary, len(sets))
	for i, s := range sets {
		out[i] = s.summary
		sum := &out[i]
		failed := errs[types.NamespacedName{Namespace: sum.Namespace, Name: sum.Name}]
		switch {
		case s.terminating:
			sum.Status, sum.Message = apiv1.StatusTerminating, "the StatefulSet is being deleted"
		case failed != nil:
			sum.Status, sum.Message = apiv1.StatusStuck, stuckMessage(failed.first, failed.n)
		case s.complete:
			sum.Status = apiv1.StatusComplete
			sum.Message = fmt.Sprintf("rollout complete: %d of %d pods ready on revision %s", sum.ReadyReplicas, sum.Replicas, sum.UpdateRevision)
		case !s.observed:
			sum.Status, sum.Message = apiv1.StatusProgressing, "waiting for the controller to observe the latest spec"
		default:
			sum.Status = apiv1.StatusProgressing
			sum.Message = fmt.Sprintf("%d of %d pods ready, %d updated to revision %s", sum.ReadyReplicas, sum.Replicas, s.updated, sum.UpdateRevision)
			if s.waiting != "" {
				sum.Message += "; " + s.waiting
			}
		}
	}
	return out
}

// waitingOn says which pod the controller's next sync waits on (the ordinal that holds it), and
// what the pod's containers say: "the controller waits for web-2 to be Running (Pending,
// ErrImagePull)"; "" when it waits on none.
func waitingOn(v *controller.View) string {
	if v == nil {
		return ""
	}
	for _, o := range append(append([]controller.Ordinal(nil), v.Ordinals...), v.Condemned...) {
		word, ok := waitWord[o.Next]
		if !o.Holds || !ok {
			continue
		}
		msg := fmt.Sprintf("the controller waits for %s to be %s", o.Name, word)
		if o.Pod != nil {
			state := string(o.Pod.Status.Phase)
			for _, st := range append(append([]corev1.ContainerStatus(nil), o.Pod.Status.InitContainerStatuses...), o.Pod.Status.ContainerStatuses...) {
				if w := st.State.Waiting; w != nil && w.Reason != "" {
					state += ", " + w.Reason
					break
				}
			}
			if state != "" {
				msg += " (" + state + ")"
			}
		}
		return msg
	}
	return ""
}

// stuckMessage is a stuck StatefulSet's message: its first error finding's short message, with
// the pod it names, and how many more there are.
func stuckMessage(f *Finding, n int) string {
	msg := f.Short
	if msg == "" {
		msg = f.Message
	}
	if f.Pod != "" {
		msg = f.Pod + ": " + msg
	}
	msg = string(f.Code) + ": " + msg
	if n > 1 {
		msg += fmt.Sprintf(" (%d more errors)", n-1)
	}
	return msg
}

// sortFindings orders findings as a report lists them (apiv1.FindingLess).
func sortFindings(f []Finding) {
	sort.SliceStable(f, func(i, j int) bool { return apiv1.FindingLess(&f[i].Finding, &f[j].Finding) })
}

// imageUse is one container image of a StatefulSet.
type imageUse struct {
	set       types.NamespacedName
	container string
	image     string
}

// linkUnresolvedImages tells a pod failing on an unresolved ImageStream name the exact image the
// lookup resolves it to, so its remedy sets that image instead of a generic "fix the image".
func linkUnresolvedImages(findings []Finding) {
	resolved := map[imageUse]string{}
	for _, f := range findings {
		if f.Code == apiv1.UnresolvedImageReference {
			resolved[useOf(f)] = f.ResolvedImage
		}
	}
	for i, f := range findings {
		failing, ok := f.Facts.(facts.Failing)
		if to, found := resolved[useOf(f)]; ok && found {
			failing.UnresolvedTo = to
			findings[i].Facts = failing
		}
	}
}

func useOf(f Finding) imageUse {
	return imageUse{set: types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}, container: f.Container, image: f.Image}
}
