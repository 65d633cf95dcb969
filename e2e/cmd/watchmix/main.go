// Command watchmix measures what `stsdiag watch -A` holds on a cluster whose pods are mostly
// not StatefulSets' (issue 36: "watch -A holds what it needs"), against a binary whose informers
// hold every pod (-old, e.g. built from the commit before) and the decoded floor (listfloor
// -mode decoded: the bare LISTs of check's kinds, decoded and dropped).
//
// It starts kube-apiserver and etcd alone (cluster.APIServerOnly) and writes the mix with its
// statuses: -pods pods in -namespaces namespaces, -sts-share of them StatefulSets' (-per-set
// each, labelled and owned as the StatefulSet controller does, on Nodes that are Ready), the rest
// owned by ReplicaSets, Jobs and DaemonSets; 1% of the StatefulSets unsettled (a pod crash
// looping, the status saying so). Then, -reps times each, alternating: the floor under peakrss,
// and each binary's `watch -A --no-conditions` until /metrics reports
// stsdiag_startup_seconds{phase="diagnosed"}, its VmHWM read from /proc then (with how much of
// the RSS then was the binary's own pages, RssFile), its findings (stsdiag_findings) checked —
// each unsettled StatefulSet's CurrentRevisionFailing, the same from both — and stopped.
//
// Both binaries are run from copies written anew (e2e/internal/installed): the pages of an
// executable mapped in count in its RSS, and how many of them depends on how the file came into
// the page cache (a binary fresh from the Go linker had ~70 MiB of its text resident at once
// here, the same file copied ~49 MiB, with the same heap), so the two are measured alike.
//
// -hold writes the cluster, prints its kubeconfig and keeps it until interrupted, for profiling.
//
//	go run ./cmd/watchmix -pods 6000 -old /tmp/kubectl-stsdiag-main -new ../bin/kubectl-stsdiag
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/installed"
)

func main() {
	pods := flag.Int("pods", 6000, "pods in the cluster")
	share := flag.Float64("sts-share", 0.2, "share of the pods owned by StatefulSets")
	perSet := flag.Int("per-set", 5, "replicas of each StatefulSet")
	namespaces := flag.Int("namespaces", 60, "namespaces")
	reps := flag.Int("reps", 3, "measurements of each")
	oldBin := flag.String("old", "", "kubectl-stsdiag whose watch -A holds every pod")
	newBin := flag.String("new", "", "kubectl-stsdiag under test")
	extraEnv := flag.String("env", "", "extra environment of both binaries' watch, NAME=VALUE[,NAME=VALUE] (e.g. GOGC=100: Go's default, which watch otherwise lowers)")
	hold := flag.Bool("hold", false, "after writing the cluster, print its kubeconfig and keep it until interrupted (no measurements; -old and -new not needed), for profiling")
	flag.Parse()
	if *hold {
		*reps, *oldBin, *newBin = 0, "-", "-"
	}
	if *oldBin == "" || *newBin == "" {
		fmt.Fprintln(os.Stderr, "watchmix: -old and -new are required")
		os.Exit(2)
	}
	var extra []string
	if *extraEnv != "" {
		extra = strings.Split(*extraEnv, ",")
	}
	if err := run(*pods, *share, *perSet, *namespaces, *reps, *oldBin, *newBin, *hold, extra); err != nil {
		fmt.Fprintln(os.Stderr, "watchmix:", err)
		os.Exit(1)
	}
}

func run(pods int, share float64, perSet, namespaces, reps int, oldBin, newBin string, hold bool, extraEnv []string) error {
	ctx := context.Background()
	tools, err := os.MkdirTemp("", "watchmix-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tools)
	for _, t := range []string{"peakrss", "listfloor"} {
		build := exec.Command("go", "build", "-o", filepath.Join(tools, t), "./cmd/"+t)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return err
		}
	}
	c := cluster.New(filepath.Join(tools, "logs"))
	c.APIServerOnly = true
	kubeconfig, err := c.Create(ctx)
	if err != nil {
		return err
	}
	defer c.Destroy(context.Background())
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	start := time.Now()
	m, err := populate(ctx, kube, pods, share, perSet, namespaces)
	if err != nil {
		return err
	}
	fmt.Printf("cluster: %d pods (%d of %d StatefulSets, %d of them unsettled; %d of ReplicaSets, Jobs, DaemonSets) in %d namespaces, written in %s\n",
		m.pods, m.stsPods, m.sets, m.unsettled, m.pods-m.stsPods, namespaces, time.Since(start).Round(time.Second))
	// Each unsettled StatefulSet (db0 .. in team-00 ..) has its last pod crash looping.
	wantFindings := map[string]int{}
	for s := 0; s < m.unsettled; s++ {
		wantFindings[fmt.Sprintf("CurrentRevisionFailing %s", fmt.Sprintf("team-%02d", s%namespaces))]++
	}

	if hold {
		fmt.Printf("cluster held until interrupted: KUBECONFIG=%s\n", kubeconfig)
		sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		<-sig.Done()
		return nil
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig)
	for _, bin := range []*string{&oldBin, &newBin} {
		path, remove, err := installed.Copy(*bin)
		if err != nil {
			return err
		}
		defer remove()
		*bin = path
	}
	var floorWall []float64
	var floorRSS []int64
	samples := map[string][]watchSample{}
	for i := 0; i < reps; i++ {
		wall, rss, err := floor(env, tools)
		if err != nil {
			return err
		}
		floorWall, floorRSS = append(floorWall, wall), append(floorRSS, rss)
		for _, b := range []struct{ name, bin string }{{"old", oldBin}, {"new", newBin}} {
			s, err := measureWatch(append(env, extraEnv...), b.bin)
			if err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			if fmt.Sprint(s.findings) != fmt.Sprint(wantFindings) {
				return fmt.Errorf("%s: findings %v, want %v", b.name, s.findings, wantFindings)
			}
			samples[b.name] = append(samples[b.name], s)
			fmt.Printf("  rep %d %s: synced %.2fs, diagnosed %.2fs, VmHWM %d MiB (RSS then: %d MiB file, %d MiB anon), CPU %.2fs, findings as expected\n",
				i+1, b.name, s.synced, s.diagnosed, s.rssKiB>>10, s.fileKiB>>10, s.anonKiB>>10, s.cpu)
		}
		fmt.Printf("  rep %d floor: %.2fs, peak RSS %d MiB\n", i+1, wall, rss>>10)
	}
	fw, fr := medianF(floorWall), medianI(floorRSS)
	o, n := median(samples["old"]), median(samples["new"])
	fmt.Printf("\n| | diagnosed (median) | synced | peak RSS (median) | CPU to diagnosed |\n|---|---|---|---|---|\n")
	fmt.Printf("| decoded floor (listfloor -mode decoded) | %.2fs (wall) | | %d MiB | |\n", fw, fr>>10)
	fmt.Printf("| watch -A, informers over all pods (-old) | %.2fs | %.2fs | %d MiB | %.2fs |\n", o.diagnosed, o.synced, o.rssKiB>>10, o.cpu)
	fmt.Printf("| watch -A, StatefulSets' pods (-new) | %.2fs | %.2fs | %d MiB | %.2fs |\n", n.diagnosed, n.synced, n.rssKiB>>10, n.cpu)
	fmt.Printf("\nnew/old peak RSS %.2f× (target ≤ 0.3×); new start-up (diagnosed) / floor %.2f× (target ≤ 0.5×); old %.2f×\n",
		float64(n.rssKiB)/float64(o.rssKiB), n.diagnosed/fw, o.diagnosed/fw)
	return nil
}

type mix struct{ pods, stsPods, sets, unsettled int }

// populate writes the namespaces (each with its default ServiceAccount), 10 Ready Nodes, the
// StatefulSets and their revisions, and the pods, each created then given its status.
func populate(ctx context.Context, kube kubernetes.Interface, pods int, share float64, perSet, namespaces int) (mix, error) {
	var m mix
	for i := 0; i < 10; i++ {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("node-%d", i)}}}
		created, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return m, err
		}
		created.Status = corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
		if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return m, err
		}
	}
	for i := 0; i < namespaces; i++ {
		ns := fmt.Sprintf("team-%02d", i)
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return m, err
		}
		if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			return m, err
		}
	}
	m.sets = int(float64(pods)*share) / perSet
	m.unsettled = max(1, m.sets/100)
	type work func() error
	var jobs []work
	var mu sync.Mutex
	for s := 0; s < m.sets; s++ {
		ns, name := fmt.Sprintf("team-%02d", s%namespaces), fmt.Sprintf("db%d", s)
		broken := s < m.unsettled
		jobs = append(jobs, func() error {
			set, err := writeSet(ctx, kube, ns, name, perSet, broken)
			if err != nil {
				return err
			}
			for o := 0; o < perSet; o++ {
				p, crashing := stsPod(set, o, broken && o == perSet-1)
				if err := writePod(ctx, kube, p, crashing); err != nil {
					return err
				}
			}
			mu.Lock()
			m.stsPods += perSet
			mu.Unlock()
			return nil
		})
	}
	others := pods - m.sets*perSet
	for i := 0; i < others; i++ {
		ns := fmt.Sprintf("team-%02d", i%namespaces)
		jobs = append(jobs, func() error { p, crashing := otherPod(ns, i); return writePod(ctx, kube, p, crashing) })
	}
	m.pods = m.sets*perSet + others
	next := make(chan work)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				if err := j(); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return m, err
	default:
	}
	return m, nil
}

var containers = func() []corev1.Container {
	env := []corev1.EnvVar{}
	for i := 0; i < 8; i++ {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", i), Value: fmt.Sprintf("value-of-setting-%d-for-this-service", i)})
	}
	env = append(env, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10, FailureThreshold: 3}
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
	return []corev1.Container{
		{Name: "app", Image: "registry.example.com/team/app:1.4.2", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}, Env: env, Resources: res,
			ReadinessProbe: probe, LivenessProbe: probe, VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}, {Name: "data", MountPath: "/data"}}},
		{Name: "proxy", Image: "registry.example.com/mesh/proxy:1.22.0", Args: []string{"proxy", "sidecar", "--log-level=warn"}, Resources: res,
			Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 15000}}},
	}
}()

func podSpec(node int) corev1.PodSpec {
	return corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", node%10), Containers: containers, TerminationGracePeriodSeconds: ptr.To[int64](30),
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		AutomountServiceAccountToken: ptr.To(false),
		Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}}}
}

func podStatus(pod *corev1.Pod, i int, crashing bool) corev1.PodStatus {
	t := metav1.NewTime(time.Now().Add(-time.Hour))
	ready := corev1.ConditionTrue
	if crashing {
		ready = corev1.ConditionFalse
	}
	st := corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.0.0.1", PodIP: fmt.Sprintf("10.244.%d.%d", i/250%250, i%250+1), StartTime: &t, QOSClass: corev1.PodQOSBurstable,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t}, {Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: t}, {Type: corev1.PodReady, Status: ready, LastTransitionTime: t}}}
	for _, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image + "@sha256:" + strings.Repeat("ab", 32), Ready: true, Started: ptr.To(true),
			ContainerID: "containerd://" + strings.Repeat("0123456789abcdef", 4), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}}
		if crashing && c.Name == "app" {
			cs.Ready, cs.Started, cs.RestartCount = false, ptr.To(false), 7
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"}}
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				StartedAt: metav1.NewTime(time.Now().Add(-2 * time.Minute)), FinishedAt: metav1.NewTime(time.Now().Add(-2*time.Minute + 3*time.Second))}}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	return st
}

func writeSet(ctx context.Context, kube kubernetes.Interface, ns, name string, replicas int, broken bool) (*appsv1.StatefulSet, error) {
	labels := map[string]string{"app": name}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(0)}}}
	created, err := kube.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	// The controller's revision data: the template as a patch (getPatch, stateful_set_utils.go).
	tmpl, err := json.Marshal(map[string]any{"spec": map[string]any{"template": created.Spec.Template}})
	if err != nil {
		return nil, err
	}
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(created, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Revision: 1, Data: runtime.RawExtension{Raw: tmpl}}
	if _, err := kube.AppsV1().ControllerRevisions(ns).Create(ctx, rev, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	ready := int32(replicas)
	if broken {
		ready--
	}
	created.Status = appsv1.StatefulSetStatus{ObservedGeneration: created.Generation, Replicas: int32(replicas), ReadyReplicas: ready, AvailableReplicas: ready,
		CurrentReplicas: int32(replicas), UpdatedReplicas: int32(replicas), CurrentRevision: name + "-1", UpdateRevision: name + "-1"}
	return kube.AppsV1().StatefulSets(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
}

// stsPod is an ordinal's pod as the StatefulSet controller creates it.
func stsPod(set *appsv1.StatefulSet, ordinal int, crashing bool) (*corev1.Pod, bool) {
	name := fmt.Sprintf("%s-%d", set.Name, ordinal)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: set.Namespace,
		Labels: map[string]string{"app": set.Name, appsv1.ControllerRevisionHashLabelKey: set.Name + "-1", appsv1.StatefulSetPodNameLabel: name,
			"apps.kubernetes.io/pod-index": strconv.Itoa(ordinal)},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Spec: withHostname(podSpec(ordinal), name)}, crashing
}

func withHostname(s corev1.PodSpec, name string) corev1.PodSpec { s.Hostname = name; return s }

// otherPod is a pod of a ReplicaSet (7 in 10), a Job (1 in 10) or a DaemonSet (2 in 10).
func otherPod(ns string, i int) (*corev1.Pod, bool) {
	kind, owner, labels := "ReplicaSet", fmt.Sprintf("front%d-7d9f8c6b5", i%40), map[string]string{"app": fmt.Sprintf("front%d", i%40), "pod-template-hash": "7d9f8c6b5"}
	switch i % 10 {
	case 7:
		kind, owner, labels = "Job", fmt.Sprintf("batch-%d", i%25), map[string]string{"job-name": fmt.Sprintf("batch-%d", i%25), "batch.kubernetes.io/controller-uid": "u"}
	case 8, 9:
		kind, owner, labels = "DaemonSet", "node-agent", map[string]string{"app": "node-agent", appsv1.ControllerRevisionHashLabelKey: "5c6b7d8f9", "pod-template-generation": "3"}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: owner + "-", Namespace: ns, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: owner, UID: types.UID("uid-" + owner), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: podSpec(i)}, false
}

func writePod(ctx context.Context, kube kubernetes.Interface, pod *corev1.Pod, crashing bool) error {
	created, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = podStatus(created, int(created.CreationTimestamp.UnixNano()%60000), crashing)
	_, err = kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// floor runs listfloor -mode decoded (no image API) under peakrss: its wall time and peak RSS.
func floor(env []string, tools string) (float64, int64, error) {
	cmd := exec.Command(filepath.Join(tools, "peakrss"), filepath.Join(tools, "listfloor"), "-mode", "decoded", "-openshift=false")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("listfloor: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`peakrss: wall=([0-9.]+) maxrss_kib=(\d+)`).FindSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("no peakrss line:\n%s", out)
	}
	wall, _ := strconv.ParseFloat(string(m[1]), 64)
	rss, _ := strconv.ParseInt(string(m[2]), 10, 64)
	return wall, rss, nil
}

type watchSample struct {
	synced, diagnosed float64
	rssKiB            int64
	// fileKiB and anonKiB split the RSS when VmHWM was read: the executable's pages, the rest.
	fileKiB, anonKiB int64
	// findings counts stsdiag_findings by "code namespace".
	findings map[string]int
	// cpu is the process's user and system time when it was read (s).
	cpu float64
}

// measureWatch runs watch -A until it reports its first diagnosis of every StatefulSet, then
// reads its VmHWM and stops it.
func measureWatch(env []string, bin string) (watchSample, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return watchSample{}, err
	}
	addr := l.Addr().String()
	l.Close()
	h, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return watchSample{}, err
	}
	health := h.Addr().String()
	h.Close()
	cmd := exec.Command(bin, "watch", "-A", "--no-conditions", "--metrics-insecure", "--metrics-addr", addr, "--health-addr", health)
	var log strings.Builder
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &log, &log
	if err := cmd.Start(); err != nil {
		return watchSample{}, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		synced, diagnosed, findings, err := startup("http://" + addr + "/metrics")
		if err == nil && diagnosed > 0 {
			st, err := status(cmd.Process.Pid)
			if err != nil {
				return watchSample{}, err
			}
			cpu, err := cpuSeconds(cmd.Process.Pid)
			return watchSample{synced: synced, diagnosed: diagnosed, rssKiB: st["VmHWM"], fileKiB: st["RssFile"], anonKiB: st["RssAnon"], findings: findings, cpu: cpu}, err
		}
		if time.Now().After(deadline) {
			return watchSample{}, fmt.Errorf("not diagnosed in 5m:\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// findingLine is a line of stsdiag_findings: its code, namespace and value.
var findingLine = regexp.MustCompile(`^stsdiag_findings\{code="([^"]+)",namespace="([^"]+)"\} (\d+)$`)

func startup(url string) (synced, diagnosed float64, findings map[string]int, err error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return 0, 0, nil, err
	}
	defer resp.Body.Close()
	findings = map[string]int{}
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		line := s.Text()
		for phase, dst := range map[string]*float64{"synced": &synced, "diagnosed": &diagnosed} {
			if rest, ok := strings.CutPrefix(line, `stsdiag_startup_seconds{phase="`+phase+`"} `); ok {
				*dst, err = strconv.ParseFloat(strings.TrimSpace(rest), 64)
				if err != nil {
					return 0, 0, nil, err
				}
			}
		}
		if m := findingLine.FindStringSubmatch(line); m != nil {
			if n, _ := strconv.Atoi(m[3]); n > 0 {
				findings[m[1]+" "+m[2]] += n
			}
		}
	}
	return synced, diagnosed, findings, s.Err()
}

// status reads VmHWM, RssFile and RssAnon (KiB) from /proc/PID/status.
func status(pid int) (map[string]int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "VmHWM" && name != "RssFile" && name != "RssAnon") {
			continue
		}
		if out[name], err = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64); err != nil {
			return nil, err
		}
	}
	if _, ok := out["VmHWM"]; !ok {
		return nil, errors.New("no VmHWM")
	}
	return out, nil
}

// cpuSeconds is a process's user and system time: utime and stime, fields 14 and 15 of
// /proc/PID/stat (proc(5)), in clock ticks of 100 Hz (USER_HZ on Linux).
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, data)
	}
	var ticks int64
	for _, s := range f[11:13] { // fields 14 and 15: the 12th and 13th after the name
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return float64(ticks) / 100, nil
}

func median(s []watchSample) watchSample {
	var d, sy, c []float64
	var r []int64
	for _, x := range s {
		d, sy, r, c = append(d, x.diagnosed), append(sy, x.synced), append(r, x.rssKiB), append(c, x.cpu)
	}
	return watchSample{synced: medianF(sy), diagnosed: medianF(d), rssKiB: medianI(r), cpu: medianF(c)}
}

func medianF(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func medianI(v []int64) int64 {
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
