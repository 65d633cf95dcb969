package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/oracle"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestOracle applies random StatefulSet histories (e2e/internal/oracle) on the real node, each in
// its own namespace, several at once; reads what the real controller and kubelet did (the ground
// truth: complete, stuck or undecided, from the API objects only); runs `check` and `wait`
// through the built binary; and scores them (stuck explained and its cause named, complete
// unflagged). Any scored history that disagrees fails the test.
//
//	ORACLE_SEEDS=7,8   seeds (default: oracle.CISeeds, what `make e2e-node` runs)
//	ORACLE_N=24        histories per seed (default 24 with ORACLE_SEEDS, else oracle.CIN)
//	ORACLE_ONLY=5,9    only these history indexes (a replay)
//	ORACLE_PARALLEL=8  histories at once
//	ORACLE_STSDIAG=F   score another binary instead of the one built (proof the oracle can fail)
//
// It prints one line per history and the score, also written to e2e/_artifacts/oracle.log; each
// failing or undecided history leaves its objects, events and answers in
// e2e/_artifacts/oracle/<id>/.
func TestOracle(t *testing.T) {
	seeds, n := oracle.CISeeds, oracle.CIN
	if s := os.Getenv("ORACLE_SEEDS"); s != "" {
		var err error
		if seeds, err = oracle.ParseSeeds(s); err != nil {
			t.Fatalf("ORACLE_SEEDS: %v", err)
		}
		n = 24
	}
	n = envInt(t, "ORACLE_N", n)
	parallel := envInt(t, "ORACLE_PARALLEL", 8)
	only, err := oracle.ParseOnly(os.Getenv("ORACLE_ONLY"))
	if err != nil {
		t.Fatalf("ORACLE_ONLY: %v", err)
	}
	bin := stsdiag
	if b := os.Getenv("ORACLE_STSDIAG"); b != "" {
		if !filepath.IsAbs(b) {
			b = filepath.Join("..", "..", b) // relative to the repository, where make runs
		}
		if bin, err = filepath.Abs(b); err != nil {
			t.Fatal(err)
		}
	}
	var histories []oracle.History
	for _, s := range seeds {
		for _, h := range oracle.Generate(s, n) {
			if only == nil || only[h.Index] {
				histories = append(histories, h)
			}
		}
	}
	if len(histories) == 0 {
		t.Fatalf("no history: seeds %v, n %d, only %v", seeds, n, only)
	}
	f := features.New("oracle").Assess("random histories scored against the real node", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		// Its own client: eight histories polling every second outrun client-go's default 5 QPS,
		// and PodSecurity's warnings about the restricted namespaces are expected.
		rc := rest.CopyConfig(cfg.Client().RESTConfig())
		rc.QPS, rc.Burst, rc.WarningHandler = 100, 200, rest.NoWarnings{}
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		o := &oracleRun{cs: cs, kubeconfig: cfg.KubeconfigFile(), bin: bin,
			images: oracle.Images{App: local.Image(cluster.AppImage), Missing: local.Image("app:nope")}}
		o.artifacts, _ = filepath.Abs(filepath.Join("..", "_artifacts", "oracle"))
		_ = os.RemoveAll(o.artifacts)
		logPath := filepath.Join(filepath.Dir(o.artifacts), "oracle.log")
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer logFile.Close()
		var mu sync.Mutex
		say := func(line string) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Println(line)
			fmt.Fprintln(logFile, line)
		}
		say(fmt.Sprintf("oracle: %d history(ies) (seeds %v, n %d%s), %d at once, scoring %s", len(histories), seeds, n, onlyWord(only), parallel, bin))
		start := time.Now()
		results := make([]historyResult, len(histories))
		sem := make(chan struct{}, parallel)
		var wg, cleanups sync.WaitGroup
		for i, h := range histories {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				results[i] = o.run(ctx, h)
				<-sem
				cleanups.Add(1)
				go func() { defer cleanups.Done(); o.cleanup(h.Namespace()) }()
				say(results[i].line())
			}()
		}
		wg.Wait()
		var tally oracle.Tally
		var failed []string
		for _, r := range results {
			if r.err != nil {
				failed = append(failed, r.h.ID()+" (error)")
				continue
			}
			tally.Add(r.h.ID(), r.verdict)
			if r.verdict.Scored && !r.verdict.Pass {
				failed = append(failed, r.h.ID())
			}
		}
		say("oracle: " + tally.String(time.Since(start)))
		cleanups.Wait()
		if len(failed) > 0 {
			t.Errorf("%d of %d histories disagree with the real system: %s (replay one: make oracle SEED=<seed> N=%d ONLY=<index>; details in %s)",
				len(failed), len(histories), strings.Join(failed, ", "), n, o.artifacts)
		}
		return ctx
	}).Feature()
	testenv.Test(t, f)
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		t.Fatalf("%s=%q: want a number ≥ 1", name, s)
	}
	return v
}

func onlyWord(only map[int]bool) string {
	if only == nil {
		return ""
	}
	return fmt.Sprintf(", only %v", slices.Sorted(maps.Keys(only)))
}

type oracleRun struct {
	cs         kubernetes.Interface
	kubeconfig string
	bin        string
	images     oracle.Images
	artifacts  string
}

type historyResult struct {
	h       oracle.History
	verdict oracle.Verdict
	took    time.Duration
	err     error
}

func (r historyResult) line() string {
	if r.err != nil {
		return fmt.Sprintf("%s ERROR %v %s", r.h.ID(), r.err, strings.TrimPrefix(r.h.String(), r.h.ID()+" "))
	}
	return oracle.Line(r.h, r.verdict, r.took)
}

// run applies a history step by step, decides its truth, asks stsdiag, and scores it.
func (o *oracleRun) run(ctx context.Context, h oracle.History) (res historyResult) {
	res.h = h
	t0 := time.Now()
	defer func() { res.took = time.Since(t0) }()
	ns := h.Namespace()
	var timeline []string
	note := func(format string, args ...any) {
		timeline = append(timeline, fmt.Sprintf("%6.1fs ", time.Since(t0).Seconds())+fmt.Sprintf(format, args...))
	}
	if err := scenario.Namespace(ctx, o.cs, ns); err != nil {
		res.err = err
		return res
	}
	if _, err := o.cs.CoreV1().ConfigMaps(ns).Create(ctx, oracle.ConfigMapObject(h), metav1.CreateOptions{}); err != nil {
		res.err = err
		return res
	}
	var revisions []string
	var waiting *background
	var final oracle.Outcome
	var last oracle.Observation
	var tracker *oracle.Tracker
	for i, f := range h.Steps {
		if err := o.apply(ctx, h, i, note); err != nil {
			res.err = fmt.Errorf("step %d (%s): %w", i, f, err)
			return res
		}
		rev, err := o.observed(ctx, ns)
		if err != nil {
			res.err = fmt.Errorf("step %d (%s): %w", i, f, err)
			return res
		}
		revisions = append(revisions, rev)
		note("step %d %s applied: update revision %s", i, f, rev)
		if h.Strategy == appsv1.OnDeleteStatefulSetStrategyType && i > 0 {
			// OnDelete rolls when the user deletes the old pods: do it, as a user would.
			deleted, err := o.deleteOldPods(ctx, ns, rev)
			if err != nil {
				res.err = err
				return res
			}
			note("OnDelete: deleted %v", deleted)
		}
		tracker = oracle.Intermediate()
		if i == len(h.Steps)-1 {
			tracker = oracle.Final()
			// A CI job runs wait right after applying: so does the oracle.
			waiting = o.start(ctx, "wait", oracle.SetName, "-n", ns, "--timeout", "5m", "--hold", "20s", "-o", "json",
				"--openshift", "never", "--not-ready-threshold", "30s", "--terminating-threshold", "30s")
		}
		out, obs, err := o.track(ctx, ns, tracker)
		if err != nil {
			res.err = err
			if waiting != nil {
				waiting.stop()
			}
			return res
		}
		note("step %d %s: %s after %d states (%s)", i, f, out, tracker.States, tracker.Why)
		final, last = out, obs
	}
	check := oracle.Run{Exit: -1}
	var checkStderr string
	if final == oracle.Complete || final == oracle.Stuck {
		r := o.start(ctx, "check", "-n", ns, "-o", "json", "--openshift", "never", "--not-ready-threshold", "30s", "--terminating-threshold", "30s")
		check, checkStderr = r.result(2 * time.Minute)
		note("check: exit %d", check.Exit)
	}
	grace := 90 * time.Second
	if final != oracle.Complete && final != oracle.Stuck {
		grace = 0
	}
	waitRun, waitStderr := waiting.result(grace)
	note("wait: exit %d", waitRun.Exit)
	faults, terminating := oracle.Live(h, revisions, last)
	res.verdict = oracle.Score(oracle.Input{Namespace: ns, Name: oracle.SetName,
		Truth: oracle.Truth{Outcome: final, Faults: faults, Terminating: terminating}, Check: check, Wait: waitRun})
	note("live faults %v, terminating %v", faults, terminating)
	if !res.verdict.Pass {
		o.keep(ctx, h, timeline, last, check, checkStderr, waitRun, waitStderr)
	}
	return res
}

// apply makes step i: its namespace change (quota, PodSecurity label), its pod change
// (finalizer), then the StatefulSet (created by the first step, its template replaced after).
func (o *oracleRun) apply(ctx context.Context, h oracle.History, i int, note func(string, ...any)) error {
	ns := h.Namespace()
	switch h.Steps[i] {
	case oracle.Quota:
		if _, err := o.cs.CoreV1().ResourceQuotas(ns).Create(ctx, oracle.ResourceQuota(h), metav1.CreateOptions{}); err != nil {
			return err
		}
		// Admission counts against the quota's status: wait until its controller wrote it.
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			q, err := o.cs.CoreV1().ResourceQuotas(ns).Get(ctx, oracle.QuotaName, metav1.GetOptions{})
			return err == nil && len(q.Status.Hard) > 0 && q.Status.Used != nil, nil
		})
		if err != nil {
			return fmt.Errorf("quota status never written: %w", err)
		}
	case oracle.PodSecurity:
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"restricted",%q:"latest"}}}`, oracle.PodSecurityLabel, oracle.PodSecurityLabel+"-version")
		if _, err := o.cs.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
	case oracle.Finalizer:
		pods, err := o.pods(ctx, ns)
		if err != nil {
			return err
		}
		var target string
		best := int64(-1)
		for _, p := range pods {
			ord, err := strconv.ParseInt(strings.TrimPrefix(p.Name, oracle.SetName+"-"), 10, 32)
			if err == nil && p.DeletionTimestamp == nil && ord > best {
				best, target = ord, p.Name
			}
		}
		if target == "" {
			note("finalizer: no pod to hold")
			break
		}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := o.cs.CoreV1().Pods(ns).Get(ctx, target, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Finalizers = append(p.Finalizers, oracle.FinalizerName)
			_, err = o.cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
		note("finalizer on %s", target)
	}
	set := oracle.StatefulSet(h, i, o.images)
	if i == 0 {
		_, err := o.cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{})
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := o.cs.AppsV1().StatefulSets(ns).Get(ctx, oracle.SetName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Template = set.Spec.Template
		_, err = o.cs.AppsV1().StatefulSets(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// observed waits until the controller has observed the spec and returns its update revision.
func (o *oracleRun) observed(ctx context.Context, ns string) (string, error) {
	var rev string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		set, err := o.cs.AppsV1().StatefulSets(ns).Get(ctx, oracle.SetName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		rev = set.Status.UpdateRevision
		return set.Status.ObservedGeneration >= set.Generation && rev != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("the controller did not observe the StatefulSet within a minute: %w", err)
	}
	return rev, nil
}

func (o *oracleRun) pods(ctx context.Context, ns string) ([]corev1.Pod, error) {
	list, err := o.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + oracle.SetName})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func (o *oracleRun) deleteOldPods(ctx context.Context, ns, rev string) ([]string, error) {
	pods, err := o.pods(ctx, ns)
	if err != nil {
		return nil, err
	}
	var deleted []string
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Labels[appsv1.ControllerRevisionHashLabelKey] == rev {
			continue
		}
		err := o.cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return deleted, err
		}
		deleted = append(deleted, p.Name)
	}
	return deleted, nil
}

// track polls the StatefulSet and its pods every second until the tracker decides.
func (o *oracleRun) track(ctx context.Context, ns string, tr *oracle.Tracker) (oracle.Outcome, oracle.Observation, error) {
	failures := 0
	for {
		set, err := o.cs.AppsV1().StatefulSets(ns).Get(ctx, oracle.SetName, metav1.GetOptions{})
		var pods []corev1.Pod
		if err == nil {
			pods, err = o.pods(ctx, ns)
		}
		if err != nil {
			if failures++; failures > 30 || ctx.Err() != nil {
				return oracle.Pending, oracle.Observation{}, fmt.Errorf("reading the StatefulSet: %w", err)
			}
		} else {
			obs := oracle.Observation{At: time.Now(), Set: set, Pods: pods}
			if out := tr.Observe(obs); out != oracle.Pending {
				return out, obs, nil
			}
		}
		select {
		case <-ctx.Done():
			return oracle.Pending, oracle.Observation{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// background is one run of the binary.
type background struct {
	cancel         context.CancelFunc
	done           chan struct{}
	stdout, stderr bytes.Buffer
	exit           int
}

// start runs the binary with args against the cluster, in the background.
func (o *oracleRun) start(ctx context.Context, args ...string) *background {
	ctx, cancel := context.WithCancel(ctx)
	b := &background{cancel: cancel, done: make(chan struct{}), exit: -1}
	cmd := exec.CommandContext(ctx, o.bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+o.kubeconfig, "PATH="+binDir+":"+os.Getenv("PATH"), "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = &b.stdout, &b.stderr
	// Stopped, it gets SIGTERM first (wait's Interrupted, exit 130), as a cancelled CI job.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	go func() {
		defer close(b.done)
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			b.exit = 0
		case errors.As(err, &ee) && ee.ExitCode() >= 0:
			b.exit = ee.ExitCode()
		case errors.As(err, &ee):
			b.exit = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		default:
			fmt.Fprintf(&b.stderr, "oracle: running %s: %v\n", o.bin, err)
		}
	}()
	return b
}

// result waits up to grace for the run to end, stops it otherwise, and returns what it printed.
func (b *background) result(grace time.Duration) (oracle.Run, string) {
	select {
	case <-b.done:
	case <-time.After(grace):
		b.stop()
		fmt.Fprintf(&b.stderr, "oracle: still running %s after the truth was decided: stopped\n", grace)
	}
	return oracle.Run{Exit: b.exit, Stdout: b.stdout.String()}, b.stderr.String()
}

func (b *background) stop() {
	b.cancel()
	<-b.done
}

// keep writes what a failing or undecided history leaves for a person: its timeline, the last
// objects observed, the namespace's events, and both answers.
func (o *oracleRun) keep(ctx context.Context, h oracle.History, timeline []string, last oracle.Observation, check oracle.Run, checkStderr string, waitRun oracle.Run, waitStderr string) {
	dir := filepath.Join(o.artifacts, h.ID())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	write := func(name, content string) { _ = os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644) }
	write("history.txt", h.String()+"\n"+strings.Join(timeline, "\n")+"\n")
	if last.Set != nil {
		objs := []any{last.Set}
		for i := range last.Pods {
			objs = append(objs, &last.Pods[i])
		}
		var b strings.Builder
		for _, obj := range objs {
			data, _ := yaml.Marshal(obj)
			b.WriteString("---\n" + string(data))
		}
		write("objects.yaml", b.String())
	}
	if ev, err := o.cs.CoreV1().Events(h.Namespace()).List(ctx, metav1.ListOptions{}); err == nil {
		var b strings.Builder
		for _, e := range ev.Items {
			fmt.Fprintf(&b, "%s %s %s/%s %s x%d: %s\n", e.LastTimestamp.UTC().Format(time.RFC3339), e.Type, e.InvolvedObject.Kind,
				e.InvolvedObject.Name, e.Reason, e.Count, e.Message)
		}
		write("events.txt", b.String())
	}
	write("check.json", check.Stdout)
	write("check.stderr", fmt.Sprintf("exit %d\n%s", check.Exit, checkStderr))
	write("wait.json", waitRun.Stdout)
	write("wait.stderr", fmt.Sprintf("exit %d\n%s", waitRun.Exit, waitStderr))
}

// cleanup deletes a history's namespace, and releases what would hold it: the finalizer on a
// pod, and the claims' kubernetes.io/pvc-protection (no pvc-protection controller runs here).
func (o *oracleRun) cleanup(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = o.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	unhold := []byte(`{"metadata":{"finalizers":null}}`)
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if pods, err := o.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, p := range pods.Items {
				if len(p.Finalizers) > 0 {
					_, _ = o.cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, unhold, metav1.PatchOptions{})
				}
			}
		}
		if claims, err := o.cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, c := range claims.Items {
				if c.DeletionTimestamp != nil && len(c.Finalizers) > 0 {
					_, _ = o.cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, c.Name, types.MergePatchType, unhold, metav1.PatchOptions{})
				}
			}
		}
		_, err := o.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
