package stuck

import (
	"fmt"
	"strings"
	"time"

	"github.com/stsdiag/stsdiag/stuck/facts"
)

func (w words) staleStuck(s facts.StaleStuck) {
	f, p := w.f, s.Startup
	target := fmt.Sprintf("revision %s", s.Target)
	if s.Target == "" {
		target = "the new template"
	}
	why := neverReplaced(s.Why)
	if s.Missed != nil {
		why = missedPrediction(*s.Missed)
	}
	f.Message = fmt.Sprintf("%s runs old revision %s and is stuck at startup (%s%s): %s", f.Pod, s.Revision, p.Reason, containerSuffix(p), why)
	if detail := startupDetail(p); detail != "" {
		f.Message += "; " + detail
	}
	f.Message += w.blocks(s.Blocked)
	f.Message += fmt.Sprintf("; deleting it makes the controller recreate it from %s, keeping its PersistentVolumeClaims", target)
	f.Short = fmt.Sprintf("%s on old revision %s; never replaced", p.Reason, s.Revision)
	if s.Missed != nil {
		f.Short = fmt.Sprintf("%s on old revision %s; not replaced at its Ready moment by %s", p.Reason, s.Revision, clock(s.Missed.Deadline))
	}
	if len(s.Blocked) > 0 {
		f.Short += "; blocks " + strings.Join(podNames(s.Blocked), ", ")
	}
	f.Remedy = fmt.Sprintf("%s delete pod %s -n %s", w.cli, f.Pod, f.Namespace)
}

// missedPrediction says which change was expected by itself and did not come by its deadline.
func missedPrediction(m facts.Prediction) string {
	chance := "since the rollout began, no run of it came within the kubelet's longest crash-loop back-off (5m)"
	if !m.Chance.IsZero() {
		chance = fmt.Sprintf("its crash loop made it Ready for at most a moment (run ending %s), too briefly for the controller to see it", clock(m.Chance))
	}
	return fmt.Sprintf("the controller (OrderedReady, RollingUpdate) replaces an old-revision pod only in a sync that finds it Running and Ready, and was expected to replace it by %s (%s): %s, so it will not replace it by itself (kubernetes#67250)",
		clock(m.Deadline), m.Expected, chance)
}

// clock is a moment as RFC 3339 in UTC, to the second.
func clock(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func neverReplaced(why facts.NeverReplaced) string {
	switch why.Kind {
	case facts.OnDeleteStrategy:
		return "with the OnDelete strategy the controller never replaces it"
	case facts.BelowPartition:
		return fmt.Sprintf("its ordinal is below the partition (%d), so the controller never replaces it", why.Partition)
	case facts.RecreateIgnored:
		return fmt.Sprintf("the controller (Kubernetes %s) ignores the Recreate strategy while %s is off (it records an UnknownStrategy event and changes nothing)", why.Release, gateRecreate)
	case facts.BudgetSpent:
		return fmt.Sprintf("the controller (Parallel, RollingUpdate, Kubernetes %s with %s on) counts %d unavailable pod(s) against maxUnavailable %d and deletes nothing, so the rollout never finishes (kubernetes#137409; Kubernetes v1.35.4 and v1.36 turn the gate off, v1.37 replaces such pods)",
			why.Release, gateMaxUnavailable, why.Unavailable, why.MaxUnavailable)
	}
	if why.MinReady > 0 {
		run := "under a second"
		if why.Run >= time.Second {
			run = "about " + why.Run.Round(time.Second).String()
		}
		return fmt.Sprintf("the controller (%s, %s) waits for it to be Running, Ready and Available (Ready for minReadySeconds, %s); its crash loop makes it Ready only for runs of %s, so it never is Available and the controller will never replace it (kubernetes#67250)",
			why.Policy, why.Strategy, why.MinReady, run)
	}
	return fmt.Sprintf("the controller (%s, %s) waits for it to become Running and Ready and will never replace it (kubernetes#67250)", why.Policy, why.Strategy)
}

func (w words) failing(s facts.Failing) {
	f, p := w.f, s.Startup
	f.Message = fmt.Sprintf("%s runs revision %s, the one the controller would recreate it from, and is stuck at startup (%s%s)", f.Pod, s.Revision, p.Reason, containerSuffix(p))
	if s.BelowPartition > 0 {
		f.Message += fmt.Sprintf("; its ordinal is below the partition (%d), so deleting it recreates the same current revision", s.BelowPartition)
	}
	if detail := startupDetail(p); detail != "" {
		f.Message += ": " + detail
	}
	f.Message += w.blocks(s.Blocked)
	f.Short = fmt.Sprintf("%s on revision %s%s", p.Reason, s.Revision, containerSuffix(p))
	f.Remedy = w.templateRemedy(s.Fix, p, s.Ordered)
	if s.UnresolvedTo != "" {
		f.Remedy = fmt.Sprintf("the image is an unresolved ImageStream name: set container %q to %s (see UnresolvedImageReference for the exact patch), then delete the stuck pod: %s delete pod %s -n %s",
			f.Container, s.UnresolvedTo, w.cli, f.Pod, f.Namespace)
	}
}

// templateRemedy says what to change in the template, and under OrderedReady to delete the
// stuck pod afterwards.
func (w words) templateRemedy(fix facts.TemplateFix, p facts.Startup, ordered bool) string {
	f := w.f
	set := fmt.Sprintf("statefulset/%s -n %s", f.StatefulSet, f.Namespace)
	after := ""
	if ordered {
		after = fmt.Sprintf("; once the template is fixed, delete the stuck pod: %s delete pod %s -n %s", w.cli, f.Pod, f.Namespace)
	}
	switch fix {
	case facts.FixPullSecret:
		return fmt.Sprintf("the registry refuses image %q: add or fix an imagePullSecret (spec.template.spec.imagePullSecrets or the ServiceAccount's) for %s%s", p.Image, set, after)
	case facts.FixImage:
		return fmt.Sprintf("image %q of container %q cannot be pulled: fix the template, e.g. %s set image %s %s=IMAGE with a pullable IMAGE, or push the image%s", p.Image, p.Container, w.cli, set, p.Container, after)
	case facts.FixConfig:
		if p.Kind == facts.VolumeMountFailed {
			return fmt.Sprintf("volume %q refers to %s: create it or fix the volume (or mark it optional) in %s%s", p.Volume, missingWords(p.Missing), set, after)
		}
		if p.Missing != nil {
			return fmt.Sprintf("container %q refers to %s: create it or fix the reference in %s%s", p.Container, missingWords(p.Missing), set, after)
		}
		return fmt.Sprintf("container %q refers to configuration that is missing or invalid (a Secret, ConfigMap or key; see the message): create it or fix the reference in %s%s", p.Container, set, after)
	case facts.FixReadinessGate:
		return fmt.Sprintf("find the controller that sets the pod condition %q (the load balancer controller or mesh the gate belongs to): check that it runs, watches namespace %s and has the rights to patch pods/status, and read its logs; if nothing should set it, remove the gate from spec.template.spec.readinessGates of %s%s",
			p.Gate.Condition, f.Namespace, set, after)
	case facts.FixReadiness:
		return fmt.Sprintf("container %q runs but never becomes Ready: read the probe failure in the message and `%s describe pod %s -n %s`, then fix the readiness probe, the configuration or the dependency it waits for in %s%s", p.Container, w.cli, f.Pod, f.Namespace, set, after)
	case facts.FixCrash:
		// While the container is terminated its last run is the current container: the
		// kubelet has no previous one to serve then.
		previous := " --previous"
		if p.State == facts.StateTerminated {
			previous = ""
		}
		return fmt.Sprintf("%s %q keeps exiting: read `%s logs %s -n %s -c %s%s`, then fix the image, command or configuration in %s%s", containerKind(p), p.Container, w.cli, f.Pod, f.Namespace, p.Container, previous, set, after)
	case facts.FixRuntime:
		return fmt.Sprintf("the container runtime cannot create or start container %q (see the message): fix its command, mounts or securityContext in %s%s", p.Container, set, after)
	case facts.FixScheduling:
		return fmt.Sprintf("no node can take the pod: add capacity or relax resources, nodeSelector, affinity or tolerations in %s%s", set, after)
	}
	return "fix the pod template of " + set + after
}

func (w words) unschedulable(s facts.PodUnschedulable) {
	f := w.f
	f.Message = fmt.Sprintf("%s cannot be scheduled: %s", f.Pod, s.Startup.Waiting)
	f.Short = "unschedulable: " + s.Startup.Waiting
	f.Message += w.blocks(s.Blocked)
	f.Remedy = w.templateRemedy(facts.FixScheduling, s.Startup, s.Ordered)
}

func (w words) claimPending(s facts.ClaimStuck) {
	f, why := w.f, claimWhy(s.Claim)
	f.Message = fmt.Sprintf("%s waits for PersistentVolumeClaim %s, which is Pending: %s", f.Pod, s.Claim.Name, why)
	f.Short = fmt.Sprintf("PVC %s Pending: %s", s.Claim.Name, why)
	f.Remedy = fmt.Sprintf("make the claim bindable: create the StorageClass it names, mark a default StorageClass, or create a matching PersistentVolume (%s describe pvc %s -n %s); stsdiag never deletes claims",
		w.cli, s.Claim.Name, f.Namespace)
}

func claimWhy(c facts.Claim) string {
	switch c.Why {
	case facts.NoDefaultClass:
		return join("no storageClassName is set and the cluster has no default StorageClass", c.Event)
	case facts.ClassMissing:
		return join(fmt.Sprintf("StorageClass %q does not exist", c.Class), c.Event)
	case facts.VolumeControllerEvent:
		return c.Event
	case facts.NoMatchingVolume:
		return "not bound: no PersistentVolume matches the claim"
	}
	return fmt.Sprintf("not bound: StorageClass %q has provisioned no volume and no PersistentVolume matches", c.Class)
}

func (w words) onDeleteStale(s facts.OnDeleteOld) {
	f, pods := w.f, strings.Join(s.Pods, ", ")
	f.Message = fmt.Sprintf("OnDelete strategy: %d pod(s) run an older revision than %s (%s); they change only when deleted; delete them one at a time, highest ordinal first, waiting for each to be Ready", len(s.Pods), s.UpdateRevision, pods)
	f.Short = fmt.Sprintf("%d pod(s) on older revisions: %s", len(s.Pods), pods)
	f.Remedy = fmt.Sprintf("%s delete pod -n %s %s", w.cli, f.Namespace, s.Pods[len(s.Pods)-1])
}

// containerSuffix names the container and image stuck at startup, if one is.
func containerSuffix(p facts.Startup) string {
	if p.Volume != "" {
		return fmt.Sprintf(", volume %q", p.Volume)
	}
	if p.Gate != nil {
		return fmt.Sprintf(", readiness gate %q", p.Gate.Condition)
	}
	if p.Container == "" {
		return ""
	}
	return fmt.Sprintf(", %s %q, image %q", containerKind(p), p.Container, p.Image)
}

func containerKind(p facts.Startup) string {
	if p.Init {
		return "init container"
	}
	return "container"
}

// missingWords names the Secret or ConfigMap (or key of one) the kubelet cannot find.
func missingWords(m *facts.Missing) string {
	if m == nil {
		return "configuration that is missing or invalid (see the message)"
	}
	kind := map[string]string{"secret": "Secret", "configmap": "ConfigMap"}[m.Kind]
	switch {
	case m.Key != "" && m.Name != "":
		return fmt.Sprintf("key %q of %s %q, which does not exist", m.Key, kind, m.Name)
	case m.Key != "":
		return fmt.Sprintf("key %q of a %s, which does not exist", m.Key, kind)
	}
	return fmt.Sprintf("%s %q, which does not exist", kind, m.Name)
}

// startupDetail is what the kubelet, scheduler or controller says of a startup problem.
func startupDetail(p facts.Startup) string {
	switch p.Kind {
	case facts.ReadinessGatePending:
		state := fmt.Sprintf("is %s", p.Gate.Status)
		if p.Gate.Status == "Missing" {
			state = "is missing: nothing has ever written it"
		}
		return fmt.Sprintf("every container is Ready, but the pod has not been Ready for %s because the condition of its readiness gate %q %s; a controller of its own (a load balancer controller, a service mesh, ...) sets that condition, and it is absent, failing or does not know this pod",
			p.NotReadyFor, p.Gate.Condition, state)
	case facts.ContainerNotReady:
		detail := fmt.Sprintf("Running but not Ready for %s", p.NotReadyFor)
		if p.Probe != "" {
			return detail + "; last probe failure: " + p.Probe
		}
		if p.ReadyMessage != "" {
			return detail + "; " + p.ReadyMessage
		}
		return detail
	case facts.PodExited:
		return fmt.Sprintf("its containers exited and the controller of Kubernetes %s never recreates a Succeeded pod", p.Release)
	case facts.ClaimPending:
		return fmt.Sprintf("PersistentVolumeClaim %q is Pending: %s", p.Claim.Name, claimWhy(*p.Claim))
	}
	if p.Reason == facts.CrashLoopBackOff {
		return join(crashState(p), p.Waiting, lastExit(p.LastExit))
	}
	if p.LastExit != nil && p.Waiting == "" {
		return lastExit(p.LastExit)
	}
	return p.Waiting
}

// crashState says how often a crash-looping container restarted and where it is in the loop.
func crashState(p facts.Startup) string {
	if p.Restarts == 0 {
		return ""
	}
	s := fmt.Sprintf("restarted %d times", p.Restarts)
	switch {
	case p.Kind != facts.ContainerCrashLoop:
	case p.State == facts.StateTerminated:
		s += ", exited again and waits for the kubelet's back-off to restart it"
	case p.State == facts.StateRunning:
		s += ", running again, but not yet for longer than its last run lasted"
	}
	return s
}

func lastExit(e *facts.Exit) string {
	if e == nil {
		return ""
	}
	last := fmt.Sprintf("last exit code %d", e.Code)
	if e.Reason != "" {
		last += " (" + e.Reason + ")"
	}
	if e.Message != "" {
		last += ": " + lastLine(e.Message)
	}
	return last
}

// blocks words the pods a stuck pod blocks ("; it blocks web-1 (not created), ...") and
// writes them in the details.
func (w words) blocks(blocked []facts.Blocked) string {
	if len(blocked) == 0 {
		return ""
	}
	out := make([]string, len(blocked))
	for i, b := range blocked {
		out[i] = b.Pod + " (" + blockedWhy[b.Why] + ")"
	}
	w.f.Details.Blocks = out
	return "; it blocks " + strings.Join(out, ", ")
}

var blockedWhy = map[facts.BlockedWhy]string{facts.NotCreated: "not created", facts.NotUpdated: "not updated", facts.NotReady: "not ready"}

func podNames(blocked []facts.Blocked) []string {
	out := make([]string, len(blocked))
	for i, b := range blocked {
		out[i] = b.Pod
	}
	return out
}

// join joins the non-blank parts with "; ".
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// lastLine keeps the last line of a termination message, where programs write the error.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
