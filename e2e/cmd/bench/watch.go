package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/synth"
)

// watchLoad is the load phase of `stsdiag watch`.
type watchLoad struct {
	rate     float64       // pod status updates per second to aim at
	duration time.Duration // at most this long (fewer when the healthy sets run out)
	workers  int           // goroutines writing the updates
	logPath  string        // watch's stderr
	// memoryLimit, if set, runs watch in a memory cgroup with this limit, as a container's
	// memory limit would (watch holds its Go heap to 90% of it).
	memoryLimit int64
}

// watchResult is what the load phase measured.
type watchResult struct {
	ready         time.Duration // process start → /readyz 200
	initialEvents int           // Events for the synthetic cluster's findings
	initialTime   time.Duration // process start → the last of them
	initialRate   float64       // initial Events / (first of them → last), Events/s posted
	synced        time.Duration // process start → caches synced (stsdiag_startup_seconds)
	diagnosed     time.Duration // process start → first diagnosis of every StatefulSet
	updates       int
	updateRate    float64       // updates / (first scheduled → last response)
	updateP50     time.Duration // an update's request → its response, median (the API server's pace)
	events        int           // CurrentRevisionFailing Events matched to an update
	eventRate     float64       // events / (first scheduled update → last event)
	p50, p99, max time.Duration
	missing       []string // updated pods whose Event never came
	rssKiB        int64    // watch's VmHWM
	findingsTotal float64  // stsdiag_findings_total at the end (all codes)
}

// eventLog follows the Events stsdiag posts and keeps when each arrived at this watch.
type eventLog struct {
	mu      sync.Mutex
	total   int
	first   time.Time
	last    time.Time
	arrived map[string]time.Time // namespace/StatefulSet → first CurrentRevisionFailing Event
	message map[string]string
	changed chan struct{}
}

func (l *eventLog) add(e *corev1.Event, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total++
	if l.total == 1 {
		l.first = now
	}
	l.last = now
	if e.Reason == string(apiv1.CurrentRevisionFailing) && e.InvolvedObject.Kind == "StatefulSet" {
		key := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		if _, ok := l.arrived[key]; !ok {
			l.arrived[key], l.message[key] = now, e.Message
		}
	}
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

func (l *eventLog) counts() (int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.last
}

// follow watches the Events whose source is stsdiag from now on, until ctx ends. The time kept
// for an Event is when it arrived here, not its timestamps.
func (l *eventLog) follow(ctx context.Context, kube kubernetes.Interface) error {
	opts := metav1.ListOptions{FieldSelector: "source=stsdiag"}
	list, err := kube.CoreV1().Events("").List(ctx, opts)
	if err != nil {
		return err
	}
	if len(list.Items) > 0 {
		return fmt.Errorf("%d stsdiag Events exist before watch started", len(list.Items))
	}
	rv := list.ResourceVersion
	open := func() (watch.Interface, error) {
		o := opts
		o.ResourceVersion, o.AllowWatchBookmarks = rv, true
		return kube.CoreV1().Events("").Watch(ctx, o)
	}
	w, err := open()
	if err != nil {
		return err
	}
	go func() {
		for {
			for ev := range w.ResultChan() {
				e, ok := ev.Object.(*corev1.Event)
				if !ok {
					continue
				}
				rv = e.ResourceVersion
				if ev.Type == watch.Added {
					l.add(e, time.Now())
				}
			}
			if ctx.Err() != nil {
				return
			}
			for { // the server closed the watch: go on from the last version seen
				if w, err = open(); err == nil || ctx.Err() != nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if ctx.Err() != nil {
				return
			}
		}
	}()
	return nil
}

// measureWatch starts `stsdiag watch -A` (report mode) on the synthetic cluster, waits for it to
// be ready and to report the cluster's findings, then turns Running and Ready pods of healthy sets
// into ImagePullBackOff pods at the given rate (each a new CurrentRevisionFailing finding, one pod
// per set) and measures the time from each update's response to its Event's arrival.
func measureWatch(ctx context.Context, cfg *rest.Config, env []string, stsdiag string, syn *synth.Cluster, load watchLoad) (*watchResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	protoCfg := rest.CopyConfig(cfg)
	protoCfg.ContentType = "application/vnd.kubernetes.protobuf"
	protoCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(protoCfg)
	if err != nil {
		return nil, err
	}
	events := &eventLog{arrived: map[string]time.Time{}, message: map[string]string{}, changed: make(chan struct{}, 1)}
	if err := events.follow(ctx, kube); err != nil {
		return nil, fmt.Errorf("watching Events: %w", err)
	}

	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(load.logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.Create(load.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(stsdiag, "watch", "-A", "--metrics-addr", addr, "--health-addr", addr, "--metrics-insecure")
	if load.memoryLimit > 0 {
		cgroup, err := limitedCgroup(load.memoryLimit)
		if err != nil {
			return nil, err
		}
		defer os.Remove(cgroup)
		// Joins the cgroup, then becomes watch (same process): watch starts inside its limit.
		cmd = exec.Command("/bin/sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cgroup, stsdiag, "watch", "-A",
			"--metrics-addr", addr, "--health-addr", addr, "--metrics-insecure")
	}
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logFile, logFile
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	defer stop()
	res := &watchResult{}

	// Ready: caches synced and workers running.
	for {
		if ok, _ := httpOK("http://" + addr + "/readyz"); ok {
			break
		}
		select {
		case err := <-exited:
			stopped = true
			return nil, fmt.Errorf("stsdiag watch exited before it was ready (%v); see %s", err, load.logPath)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(started) > 5*time.Minute {
			return nil, fmt.Errorf("stsdiag watch not ready after 5m; see %s", load.logPath)
		}
	}
	res.ready = time.Since(started)

	// The synthetic cluster's own findings are reported first: wait for all their Events, so the
	// load below measures new findings, not that backlog.
	want := 0
	for _, n := range syn.Expected {
		want += n
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n, last := events.counts()
		if n >= want {
			res.initialEvents, res.initialTime = n, last.Sub(started)
			events.mu.Lock()
			if span := last.Sub(events.first).Seconds(); span > 0 {
				res.initialRate = float64(n-1) / span
			}
			events.mu.Unlock()
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stsdiag watch posted %d Events for the synthetic cluster's %d findings in 3m; see %s", n, want, load.logPath)
		}
		select {
		case <-events.changed:
		case <-time.After(time.Second):
		}
	}
	// watch's own start-up (process start → caches synced → every StatefulSet diagnosed once).
	for {
		synced, diagnosed, err := startup("http://" + addr + "/metrics")
		if err == nil && diagnosed > 0 {
			res.synced, res.diagnosed = synced, diagnosed
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no stsdiag_startup_seconds{phase=\"diagnosed\"} after 3m (%v); see %s", err, load.logPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // let the work queue drain

	// The load: one pod per healthy set, at a fixed schedule (open loop).
	targets := loadTargets(syn, int(load.rate*load.duration.Seconds()))
	if len(targets) == 0 {
		return nil, errors.New("no healthy StatefulSet to update")
	}
	writer, err := kubernetes.NewForConfig(cfg) // QPS 5000: never the bottleneck
	if err != nil {
		return nil, err
	}
	done := make([]time.Time, len(targets))
	sent := make([]time.Time, len(targets))
	next := make(chan int, len(targets))
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var updateErr error
	for w := 0; w < load.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				t := targets[k]
				sent[k] = time.Now()
				body, err := json.Marshal(map[string]any{"status": synth.PullBackOff(t.image)})
				if err == nil {
					_, err = writer.CoreV1().Pods(t.namespace).Patch(ctx, t.pod, types.MergePatchType, body, metav1.PatchOptions{}, "status")
				}
				if err != nil {
					errMu.Lock()
					updateErr = errors.Join(updateErr, fmt.Errorf("pod %s/%s: %w", t.namespace, t.pod, err))
					errMu.Unlock()
					continue
				}
				done[k] = time.Now()
			}
		}()
	}
	first := time.Now()
	interval := time.Duration(float64(time.Second) / load.rate)
	for k := range targets {
		time.Sleep(time.Until(first.Add(time.Duration(k) * interval)))
		next <- k
	}
	close(next)
	wg.Wait()
	if updateErr != nil {
		return nil, fmt.Errorf("pod status updates failed: %w", updateErr)
	}
	var lastDone time.Time
	for _, t := range done {
		if t.After(lastDone) {
			lastDone = t
		}
	}
	res.updates = len(targets)
	took := make([]time.Duration, len(targets))
	for k := range targets {
		took[k] = done[k].Sub(sent[k])
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	res.updateP50 = quantile(took, 0.5)
	res.updateRate = float64(len(targets)) / lastDone.Sub(first).Seconds()

	// Every update's Event, or 10 s after the last update.
	deadline = lastDone.Add(10 * time.Second)
	for {
		events.mu.Lock()
		all := true
		for _, t := range targets {
			if _, ok := events.arrived[t.namespace+"/"+t.set]; !ok {
				all = false
				break
			}
		}
		events.mu.Unlock()
		if all || time.Now().After(deadline) {
			break
		}
		select {
		case <-events.changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
	res.rssKiB, err = vmHWM(cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	res.findingsTotal, _ = findingsTotal("http://" + addr + "/metrics")
	stop()

	events.mu.Lock()
	defer events.mu.Unlock()
	var latencies []time.Duration
	var lastEvent time.Time
	for k, t := range targets {
		at, ok := events.arrived[t.namespace+"/"+t.set]
		if !ok {
			res.missing = append(res.missing, t.namespace+"/"+t.pod)
			continue
		}
		if msg := events.message[t.namespace+"/"+t.set]; !strings.HasPrefix(msg, t.pod+": ") {
			return nil, fmt.Errorf("the CurrentRevisionFailing Event on %s/%s is not about %s: %q", t.namespace, t.set, t.pod, msg)
		}
		latencies = append(latencies, max(at.Sub(done[k]), 0))
		if at.After(lastEvent) {
			lastEvent = at
		}
	}
	res.events = len(latencies)
	if len(latencies) > 0 {
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		res.p50, res.p99, res.max = quantile(latencies, 0.50), quantile(latencies, 0.99), latencies[len(latencies)-1]
		res.eventRate = float64(len(latencies)) / lastEvent.Sub(first).Seconds()
	}
	return res, nil
}

// quantile is the nearest-rank q-quantile of sorted values.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func httpOK(url string) (bool, error) {
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// vmHWM is a process's peak resident set size in KiB.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// findingsTotal sums stsdiag_findings_total over its labels.
func findingsTotal(url string) (float64, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "stsdiag_findings_total") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum, s.Err()
}

// startup is watch's start-up: process start → the caches synced and every StatefulSet diagnosed.
func (w *watchResult) startup() time.Duration { return max(w.synced, w.diagnosed) }

// startup reads stsdiag_startup_seconds' phases synced and diagnosed (0 while not set).
func startup(url string) (synced, diagnosed time.Duration, err error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		line := s.Text()
		var dst *time.Duration
		switch {
		case strings.HasPrefix(line, `stsdiag_startup_seconds{phase="synced"} `):
			dst = &synced
		case strings.HasPrefix(line, `stsdiag_startup_seconds{phase="diagnosed"} `):
			dst = &diagnosed
		default:
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, 0, err
		}
		*dst = time.Duration(v * float64(time.Second))
	}
	return synced, diagnosed, s.Err()
}

// target is a pod the load turns into an ImagePullBackOff pod, one of a healthy set.
type target struct {
	set, namespace, pod, image string
}

// loadTargets are the pods the load changes: one per healthy set, at most rate × duration.
func loadTargets(syn *synth.Cluster, limit int) []target {
	var targets []target
	for i, set := range syn.StatefulSets {
		if synth.Kind(i) != "healthy" || len(targets) >= limit {
			continue
		}
		ordinal := i % int(*set.Spec.Replicas)
		targets = append(targets, target{set: set.Name, namespace: set.Namespace,
			pod: fmt.Sprintf("%s-%d", set.Name, ordinal), image: set.Spec.Template.Spec.Containers[0].Image})
	}
	return targets
}

// restoreTargets writes back the synthetic status of the pods any earlier load changed
// and deletes stsdiag's Events, so that a cluster held by -hold can be measured again with -kubeconfig.
func restoreTargets(ctx context.Context, cfg *rest.Config, syn *synth.Cluster) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	status := map[string]corev1.PodStatus{}
	for i := range syn.Pods {
		status[syn.Pods[i].Namespace+"/"+syn.Pods[i].Name] = syn.Pods[i].Status
	}
	next := make(chan target)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs error
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range next {
				body, err := json.Marshal(map[string]any{"status": status[t.namespace+"/"+t.pod]})
				if err == nil {
					_, err = kube.CoreV1().Pods(t.namespace).Patch(ctx, t.pod, types.MergePatchType, body, metav1.PatchOptions{}, "status")
				}
				if err != nil {
					mu.Lock()
					errs = errors.Join(errs, fmt.Errorf("restoring pod %s/%s: %w", t.namespace, t.pod, err))
					mu.Unlock()
				}
			}
		}()
	}
	// Any earlier load's targets (its rate and length may have been other than this one's): the
	// healthy sets' pods that are waiting now.
	waiting := map[string]bool{}
	err = pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return kube.CoreV1().Pods("").List(ctx, o)
	}).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		p := obj.(*corev1.Pod)
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting != nil {
				waiting[p.Namespace+"/"+p.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		close(next)
		wg.Wait()
		return err
	}
	for _, t := range loadTargets(syn, len(syn.StatefulSets)) {
		if waiting[t.namespace+"/"+t.pod] {
			next <- t
		}
	}
	close(next)
	wg.Wait()
	if errs != nil {
		return errs
	}
	// And the Events stsdiag posted then (the load's watch of Events starts from none).
	for _, ns := range syn.Namespaces {
		err := kube.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "source=stsdiag"})
		if err != nil {
			return fmt.Errorf("deleting stsdiag's Events in %s: %w", ns, err)
		}
	}
	return nil
}

// limitedCgroup makes a memory cgroup with the limit (cgroup v2's memory.max, or v1's
// memory.limit_in_bytes) and returns its directory; remove it once its process has exited.
func limitedCgroup(limit int64) (string, error) {
	root, file := "/sys/fs/cgroup", "memory.max"
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		root, file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
	}
	dir := filepath.Join(root, fmt.Sprintf("stsdiag-bench-watch-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("a memory cgroup for watch's limit (needs root): %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		_ = os.Remove(dir)
		return "", fmt.Errorf("setting %s: %w", file, err)
	}
	return dir, nil
}
