package stuck

import (
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// The kubelet's crash loop, as its status shows it (read in k8s.io/kubernetes):
//   - Every exit of a container the pod restarts (a StatefulSet's pods are restartPolicy Always;
//     an init container that exited 0 is complete, kubelet_pods.go:2733-2738@v1.37.2) is
//     followed by a restart after a back-off counted from the exit: 0, 10 s, 20 s, 40 s ... up to
//     5 min (doBackOff, kuberuntime_manager.go:2077-2109; kubelet.go:173 and
//     apis/config/v1beta1/defaults.go:45@v1.37.2). A run longer than 10 min resets the back-off
//     (HasExpiredFunc, kubelet.go:1088-1090@v1.37.2): the kubelet itself no longer counts it as
//     part of a loop.
//   - `waiting: CrashLoopBackOff` is the last sync's error, shown only by a status written by a
//     sync that ran during a back-off (reasonCache, kubelet_pods.go:2768-2790@v1.37.2). Up to
//     1.33 a failed sync was retried after 10 s (pod_workers.go:1498-1500@v1.33.13), so the
//     reason showed during every back-off; since 1.34 (kubernetes#133066) the worker sleeps
//     until the back-off ends (pod_workers.go:1536-1546@v1.37.2) and restarts the container at
//     once: while back-offs are shorter than the 1-minute resync the status says `terminated`
//     (reason Error) between runs, `running` (and, without a readiness probe, Ready) for the
//     second each run lasts, and `CrashLoopBackOff` only from about the 5th restart.
//   - lastState is the run before the current one (kubelet_pods.go:2722-2726@v1.37.2).
//
// So a crash loop is judged on the restart count and the runs' times, whatever the state's
// reason string says.
const (
	// crashLoopRestarts is the restart count from which short runs back to back are a loop:
	// an image that exits at once reaches it about 30 s after it first started (back-offs
	// 0, 10 s, 20 s). One or two restarts are a dependency not up yet as often as a bug.
	crashLoopRestarts = 3
	// loopRun is the longest run that still counts as part of a loop: the kubelet resets the
	// back-off after a run of 10 minutes (kubelet.go:1088-1090@v1.37.2).
	loopRun = 10 * time.Minute
	// runGrace is how much longer than its previous run a restarted container must run before
	// it counts as recovered.
	runGrace = 10 * time.Second
	// mountSettle is how long a scheduled pod may fail to mount a volume before it is
	// reported: the kubelet retries the mount with a back-off from 0.5 s, so an object created
	// just after the StatefulSet is found within seconds.
	mountSettle = 30 * time.Second
)

// containerProblem is why a container is stuck at startup, nil if it is not: a waiting reason
// that means it will not start, or a crash loop. runsToCompletion is true for a regular init
// container (not a sidecar): its exit 0 is its completion.
func (ix *index) containerProblem(st corev1.ContainerStatus, runsToCompletion bool) *facts.Startup {
	if w := st.State.Waiting; w != nil && startupReasons[w.Reason] {
		p := &facts.Startup{Kind: facts.ContainerWaiting, Reason: w.Reason, Waiting: w.Message, Restarts: st.RestartCount}
		if t := st.LastTerminationState.Terminated; t != nil {
			p.LastExit = exitOf(t)
		}
		if w.Reason == facts.CrashLoopBackOff {
			p.State = facts.StateWaiting
			p.RunStarted, p.RunEnded = runOf(st)
			p.LastRun = lastRunLength(st)
		}
		p.Missing = missingConfig(w.Message)
		return p
	}
	state, ok := ix.crashLooping(st, runsToCompletion)
	if !ok {
		return nil
	}
	p := &facts.Startup{Kind: facts.ContainerCrashLoop, Reason: facts.CrashLoopBackOff, Restarts: st.RestartCount, State: state}
	if w := st.State.Waiting; w != nil {
		p.Waiting = w.Message
	}
	if t := latestExit(st); t != nil {
		p.LastExit = exitOf(t)
	}
	p.RunStarted, p.RunEnded = runOf(st)
	p.LastRun = lastRunLength(st)
	return p
}

// lastRunLength is how long the container's newest terminated run lasted; zero when its times
// are unknown.
func lastRunLength(st corev1.ContainerStatus) time.Duration {
	t := latestExit(st)
	if t == nil || t.StartedAt.IsZero() || t.FinishedAt.IsZero() {
		return 0
	}
	return t.FinishedAt.Sub(t.StartedAt.Time)
}

// runOf bounds the container's latest run: the current one while it runs (ended zero), else
// the newest termination's.
func runOf(st corev1.ContainerStatus) (started, ended time.Time) {
	if r := st.State.Running; r != nil {
		return r.StartedAt.Time, time.Time{}
	}
	if t := latestExit(st); t != nil {
		return t.StartedAt.Time, t.FinishedAt.Time
	}
	return time.Time{}, time.Time{}
}

// crashLooping reports whether the container is in a crash loop, and the state it is seen in:
// restarted at least crashLoopRestarts times, and either exited now after a short run that
// followed another short run, or restarted after a short run and not (yet) running for longer
// than that run did. A container that runs to completion (a regular init container) is done,
// not looping, once it exited 0.
func (ix *index) crashLooping(st corev1.ContainerStatus, runsToCompletion bool) (string, bool) {
	if st.RestartCount < crashLoopRestarts {
		return "", false
	}
	last := st.LastTerminationState.Terminated
	switch {
	case st.State.Terminated != nil:
		t := st.State.Terminated
		if runsToCompletion && t.ExitCode == 0 {
			return "", false // complete
		}
		// The run before must be short too: a container that ran for days and then exited
		// once restarts at once (the back-off was reset) and is no loop yet.
		return facts.StateTerminated, shortRun(t) && (last == nil || shortRun(last))
	case st.State.Running != nil:
		if last == nil || !shortRun(last) || st.State.Running.StartedAt.IsZero() || last.StartedAt.IsZero() || last.FinishedAt.IsZero() {
			return "", false
		}
		recovered := st.State.Running.StartedAt.Add(last.FinishedAt.Sub(last.StartedAt.Time) + runGrace)
		if ix.now.Before(recovered) {
			ix.wake(recovered)
			return facts.StateRunning, true
		}
		return "", false
	case st.State.Waiting != nil:
		// Waiting again after an exit (a reason this rule does not know).
		return facts.StateWaiting, last != nil && shortRun(last) && !(runsToCompletion && last.ExitCode == 0)
	}
	return "", false
}

// shortRun reports whether a terminated run lasted less than loopRun (true when its times are
// unknown).
func shortRun(t *corev1.ContainerStateTerminated) bool {
	if t.StartedAt.IsZero() || t.FinishedAt.IsZero() {
		return true
	}
	return t.FinishedAt.Sub(t.StartedAt.Time) < loopRun
}

// latestExit is the container's newest termination: the current state while it is terminated,
// else the last one.
func latestExit(st corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if st.State.Terminated != nil {
		return st.State.Terminated
	}
	return st.LastTerminationState.Terminated
}

// readyDuringLastRun reports whether a crash-looping container's pod was Ready while the
// container last ran: it is Running and Ready now, or its Ready condition turned False only
// after that run started. A container without a readiness probe is Ready as soon as it runs,
// for the second each run lasts; one whose probe never passes keeps the pod not Ready since
// it first started.
func readyDuringLastRun(pod *corev1.Pod, st corev1.ContainerStatus) bool {
	if controller.RunningAndReady(pod) {
		return true
	}
	ready, last := controller.ReadyCondition(pod), latestExit(st)
	if ready == nil || ready.LastTransitionTime.IsZero() || last == nil || last.StartedAt.IsZero() {
		return false
	}
	return !ready.LastTransitionTime.Before(&last.StartedAt)
}

func exitOf(t *corev1.ContainerStateTerminated) *facts.Exit {
	return &facts.Exit{Code: t.ExitCode, Reason: t.Reason, Message: strings.TrimSpace(t.Message)}
}

// mountFailed returns a FailedMount problem for a scheduled pod none of whose containers has
// started and whose newest `MountVolume.SetUp failed` Event (of this pod) says a Secret or
// ConfigMap (or a key of one) is missing, once the pod has been scheduled for mountSettle. The kubelet waits for every volume before it creates
// the sandbox (WaitForAttachAndMount, kubelet.go:2230@v1.37.2): the containers wait
// (ContainerCreating, PodInitializing) and the controller waits for Running. settling is true
// while the mount has failed for less than mountSettle.
func (ix *index) mountFailed(pod *corev1.Pod) (p *facts.Startup, settling bool) {
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if st.State.Running != nil || st.State.Terminated != nil || st.LastTerminationState.Terminated != nil {
			return nil, false
		}
	}
	msg := ""
	for _, e := range ix.eventsOf("Pod", pod.Namespace, pod.Name, pod.UID) {
		// The recorder prefixes a message it aggregates with others of the same reason
		// (events_cache.go:183, k8s.io/client-go@v0.35.4).
		text := strings.TrimPrefix(strings.TrimSpace(e.Message), combinedEvents)
		if e.Reason == "FailedMount" && strings.HasPrefix(text, mountSetUpFailed) {
			msg = text
			break
		}
	}
	if msg == "" {
		return nil, false
	}
	since := pod.CreationTimestamp.Time
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			since = c.LastTransitionTime.Time
		}
	}
	if !since.IsZero() && ix.now.Sub(since) < mountSettle {
		ix.wake(since.Add(mountSettle))
		return nil, true
	}
	m := mountErrorRE.FindStringSubmatch(msg)
	if m == nil {
		return nil, false
	}
	missing := missingConfig(m[2])
	if missing == nil {
		// Another mount failure (a CSI driver, NFS, a transient "not registered"): no rule
		// knows whether the template or the infrastructure is at fault; the controller's wait
		// on the pod is reported with its Events (RolloutBlocked).
		return nil, false
	}
	return &facts.Startup{Kind: facts.VolumeMountFailed, Reason: "FailedMount", Waiting: msg, Volume: m[1], Missing: missing}, false
}

// mountSetUpFailed starts the kubelet's Event of a volume it cannot set up: "MountVolume.SetUp
// failed for volume \"<name>\" : <error>" (operation_generator.go:611 and
// operation_executor.go:327-329@v1.37.2).
const mountSetUpFailed = "MountVolume.SetUp failed for volume "

const combinedEvents = "(combined from similar events): "

var mountErrorRE = regexp.MustCompile(`^MountVolume\.SetUp failed for volume "([^"]*)" : (.*)$`)

// The kubelet's words for a missing Secret or ConfigMap, or a key of one:
//   - `secret "<name>" not found`, `configmap "<name>" not found`: apierrors.NewNotFound with
//     the kubelet cache's resource (watch_based_manager.go:336, secret_manager.go:159,
//     configmap_manager.go:158@v1.37.2), for a volume or an env var;
//   - `couldn't find key <key> in ConfigMap <ns>/<name>` and `... in Secret <ns>/<name>`: an
//     env var's key (makeEnvironmentVariables, kubelet_pods.go:917 and :944@v1.37.2);
//   - `references non-existent secret key: <key>` and `configmap references non-existent
//     config key: <key>`: an items key of a volume (secret.go:285, configmap.go:300@v1.37.2).
var (
	notFoundRE   = regexp.MustCompile(`\b(secret|configmap) "([^"]+)" not found`)
	envKeyRE     = regexp.MustCompile(`couldn't find key (\S+) in (ConfigMap|Secret) [^/\s]+/(\S+)`)
	volumeKeyRE  = regexp.MustCompile(`references non-existent (secret|config) key: (\S+)`)
	volumeKindOf = map[string]string{"secret": "secret", "config": "configmap"}
)

// missingConfig reads which Secret or ConfigMap (or key of one) the kubelet's message says is
// missing; nil when it names none.
func missingConfig(msg string) *facts.Missing {
	if m := envKeyRE.FindStringSubmatch(msg); m != nil {
		return &facts.Missing{Kind: strings.ToLower(m[2]), Name: m[3], Key: m[1]}
	}
	if m := notFoundRE.FindStringSubmatch(msg); m != nil {
		return &facts.Missing{Kind: m[1], Name: m[2]}
	}
	if m := volumeKeyRE.FindStringSubmatch(msg); m != nil {
		return &facts.Missing{Kind: volumeKindOf[m[1]], Key: m[2]}
	}
	return nil
}

// isSidecar reports whether an init container is a sidecar (restartPolicy Always): the kubelet
// keeps it running and restarts it whatever its exit code (IsRestartableInitContainer,
// pkg/api/v1/pod/util.go:392@v1.37.2).
func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// imagePullReasons are the container waiting reasons of an image that cannot be pulled.
var imagePullReasons = map[string]bool{
	"ImagePullBackOff":  true,
	"ErrImagePull":      true,
	"InvalidImageName":  true,
	"ErrImageNeverPull": true,
}

// startupReasons are the container waiting reasons that mean a container will not start by
// itself ("stuck at startup"): the image-pull reasons and these.
var startupReasons = withImagePull(map[string]bool{
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"CrashLoopBackOff":           true,
	"RunContainerError":          true,
})

func withImagePull(reasons map[string]bool) map[string]bool {
	for r := range imagePullReasons {
		reasons[r] = true
	}
	return reasons
}
