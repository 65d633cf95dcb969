// Command bench measures `stsdiag check -A` against the cost of just listing the same objects
// with kubectl, on a local kube-apiserver filled with a synthetic cluster (e2e/internal/synth), then
// `stsdiag watch -A` under a stream of pod status updates (watch.go).
//
// It runs in e2e/, its module (`make bench`):
//
//	cd e2e && go run ./cmd/bench -sets 200 -replicas 5 -reps 5 -stsdiag ../bin/kubectl-stsdiag
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/installed"
	"github.com/stsdiag/stsdiag/e2e/internal/synth"
	"github.com/stsdiag/stsdiag/internal/gather"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type sample struct {
	seconds  float64
	rssKiB   int64 // the process's own peak RSS (peakrss)
	requests int
	bytes    int64 // listfloor -mode raw: body bytes read
	// What the API server sent (apiserver_response_sizes) and spent (its CPU seconds) while
	// the command ran.
	sent      int64
	serverCPU float64
	// sentBy is sent by verb, resource and scope (breakdown).
	sentBy string
}

// tools are the helper binaries the bench builds: peakrss and listfloor.
type tools struct{ peakrss, listfloor string }

func run() error {
	sets := flag.Int("sets", 200, "StatefulSets")
	replicas := flag.Int("replicas", 5, "replicas per StatefulSet")
	reps := flag.Int("reps", 5, "repetitions of each measurement")
	stsdiag := flag.String("stsdiag", "../bin/kubectl-stsdiag", "kubectl-stsdiag binary")
	workers := flag.Int("workers", 32, "parallel creates")
	watchRate := flag.Float64("watch-rate", 500, "pod status updates per second while measuring watch (issue 24's target: 500)")
	watchSeconds := flag.Float64("watch-seconds", 15, "longest load on watch, in seconds (fewer when the healthy sets run out, one pod each; 0: skip watch)")
	useKubeconfig := flag.String("kubeconfig", "", "measure the cluster of this kubeconfig, made by -hold with the same -sets and -replicas, instead of creating one")
	profile := flag.String("profile", "", "write CPU and heap profiles of one more check -A and of watch to this directory (make bench PROFILE=1)")
	hold := flag.Bool("hold", false, "after creating the cluster and checking its findings, print its kubeconfig and keep it until interrupted (no measurements)")
	watchMemoryLimit := flag.String("watch-memory-limit", "", "run watch in a memory cgroup with this limit, as a container's (e.g. 1600Mi; needs root)")
	watchGoEnv := flag.String("watch-env", "", "extra environment of watch only, NAME=VALUE[,NAME=VALUE] (e.g. GOMEMLIMIT=1400MiB, GOGC=50)")
	kubectlMaxPods := flag.Int("kubectl-max-pods", 20000, "skip the kubectl baseline above this many pods (kubectl get -o json needed 12 GiB at 100k pods)")
	mix := flag.String("mix", "statefulsets", "the synthetic cluster: statefulsets (every pod a StatefulSet's: synth.Generate) or realistic (issue 36: synth.Realistic, 5 × sets × replicas pods, 20% of them StatefulSets', 1% of StatefulSets unsettled; no kubectl baseline, no watch)")
	gzip := flag.Bool("gzip", false, "let the measured commands ask for gzip (the API server compresses answers over 128 KiB); off, they read a copy of the kubeconfig with disable-compression, so the bytes measured are the objects' own")
	preflightSets := flag.Int("preflight-sets", 200, "StatefulSets in the manifest stream preflight judges against the cluster (0: skip; -mix statefulsets only)")
	timingTargets := flag.Bool("timing-targets", true, "fail on the realistic mix's time, CPU and memory targets (issue 36) too, not only on its bytes, requests and findings")
	flag.Parse()
	realistic := *mix == "realistic"
	if !realistic && *mix != "statefulsets" {
		return fmt.Errorf("-mix %q: want statefulsets or realistic", *mix)
	}
	if realistic {
		*watchSeconds = 0 // watch -A's targets are measured on the StatefulSet cluster
	}
	// The binary as users run it: a copy, not the linker's output (package installed).
	bin, removeCopy, err := installed.Copy(*stsdiag)
	if err != nil {
		return err
	}
	defer removeCopy()
	*stsdiag = bin

	tl, err := buildTools()
	if err != nil {
		return err
	}
	if err := rssControl(tl); err != nil {
		return err
	}

	ctx := context.Background()
	syn := synth.Generate(*sets, *replicas, max(1, *sets/10))
	if realistic {
		syn = synth.Realistic(*sets, *replicas)
	}
	kubeconfig := *useKubeconfig
	n := syn.Objects()
	if kubeconfig == "" {
		c := cluster.New("_artifacts/bench")
		c.APIServerOnly = true
		start := time.Now()
		if kubeconfig, err = c.Create(ctx); err != nil {
			return err
		}
		defer c.Destroy(context.Background())
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return err
		}
		cfg.QPS, cfg.Burst = 5000, 5000
		if err := cluster.InstallImageStreamCRD(ctx, cfg); err != nil {
			return err
		}
		fmt.Printf("kube-apiserver + etcd up in %s\n", time.Since(start).Round(100*time.Millisecond))
		start = time.Now()
		if n, err = populate(ctx, cfg, syn, *workers); err != nil {
			return err
		}
		fmt.Printf("created %d objects (%s) in %s\n", n, describe(syn, *sets, *replicas), time.Since(start).Round(100*time.Millisecond))
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 5000, 5000

	srv, err := findAPIServer(cfg)
	if err != nil {
		return err
	}
	measured := kubeconfig
	if !*gzip {
		if measured, err = measuredKubeconfig(kubeconfig); err != nil {
			return err
		}
	}
	env := append(os.Environ(), "KUBECONFIG="+measured, "STSDIAG_REQUEST_STATS=1")
	load := watchLoad{rate: *watchRate, duration: time.Duration(*watchSeconds * float64(time.Second)),
		workers: 64, logPath: "_artifacts/bench/watch.log"}
	if *useKubeconfig != "" && !realistic {
		// An earlier run's watch load changed pods of the held cluster: undo it.
		start := time.Now()
		if err := restoreTargets(ctx, cfg, syn); err != nil {
			return err
		}
		fmt.Printf("restored the statuses of the pods a watch load changes, deleted stsdiag's Events, in %s\n", time.Since(start).Round(100*time.Millisecond))
	}
	if *hold {
		if err := verifyFindings(env, *stsdiag, syn); err != nil {
			return err
		}
		fmt.Printf("cluster held until interrupted: KUBECONFIG=%s\n", kubeconfig)
		sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		<-sig.Done()
		return nil
	}
	withKubectl := *sets**replicas <= *kubectlMaxPods && !realistic
	var kubectl, check, full, raw, decoded []sample
	for i := 0; i < *reps; i++ {
		r, err := measure(tl, srv, env, tl.listfloor, "-mode", "raw")
		if err != nil {
			return err
		}
		d, err := measure(tl, srv, env, tl.listfloor, "-mode", "decoded")
		if err != nil {
			return err
		}
		s, err := measure(tl, srv, env, *stsdiag, "check", "-A", "-o", "json", "--fail-on", "never")
		if err != nil {
			return err
		}
		f, err := measure(tl, srv, env, *stsdiag, "check", "-A", "--full", "-o", "json", "--fail-on", "never")
		if err != nil {
			return err
		}
		raw, decoded, check, full = append(raw, r), append(decoded, d), append(check, s), append(full, f)
		if withKubectl {
			k, err := measure(tl, srv, env, "kubectl", "get", "statefulsets,pods,controllerrevisions,persistentvolumeclaims,imagestreams", "-A", "-o", "json")
			if err != nil {
				return err
			}
			kubectl = append(kubectl, k)
		}
	}
	if err := verifyFindings(env, *stsdiag, syn); err != nil {
		return err
	}
	watchEnv := env
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			return err
		}
		p := func(name string) string { return filepath.Join(*profile, name) }
		checkEnv := append(env[:len(env):len(env)], "STSDIAG_CPUPROFILE="+p("check.cpu.pprof"), "STSDIAG_HEAPPROFILE="+p("check.heap.pprof"))
		if _, err := measure(tl, nil, checkEnv, *stsdiag, "check", "-A", "-o", "json", "--fail-on", "never"); err != nil {
			return err
		}
		watchEnv = append(env[:len(env):len(env)], "STSDIAG_CPUPROFILE="+p("watch.cpu.pprof"), "STSDIAG_HEAPPROFILE="+p("watch.heap.pprof"))
		fmt.Printf("profiles of check -A and watch in %s (go tool pprof -top %s %s)\n", *profile, *stsdiag, p("check.cpu.pprof"))
	}
	if *watchMemoryLimit != "" {
		q, err := resource.ParseQuantity(*watchMemoryLimit)
		if err != nil {
			return fmt.Errorf("-watch-memory-limit: %w", err)
		}
		load.memoryLimit = q.Value()
		fmt.Printf("watch runs in a cgroup with memory.max %s\n", *watchMemoryLimit)
	}
	if *watchGoEnv != "" {
		watchEnv = append(watchEnv[:len(watchEnv):len(watchEnv)], strings.Split(*watchGoEnv, ",")...)
		fmt.Printf("watch runs with %s\n", *watchGoEnv)
	}
	// After the check measurements: preflight adds nodes, the watch load changes pods.
	var preflightFailures []string
	if *preflightSets > 0 && !realistic {
		if preflightFailures, err = measurePreflight(ctx, tl, srv, cfg, env, *stsdiag, syn, *preflightSets, *reps); err != nil {
			return fmt.Errorf("preflight: %w", err)
		}
	}
	var w *watchResult
	if *watchSeconds > 0 {
		w, err = measureWatch(ctx, cfg, watchEnv, *stsdiag, syn, load)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
	}
	podsPerSecond := "—"
	if !realistic {
		if podsPerSecond, err = pureDiagnosis(*sets, *replicas); err != nil {
			return err
		}
	}

	pods := len(syn.Pods)
	sMin, sMed := stats(check)
	fMin, fMed := stats(full)
	_, rawMed := stats(raw)
	dMin, decMed := stats(decoded)
	rss, fullRSS, rawRSS, decRSS := medianRSS(check), medianRSS(full), medianRSS(raw), medianRSS(decoded)
	fmt.Printf("\nmachine: %d CPUs, %s/%s, %s; %d repetitions (medians; peak RSS: each process's own, median); %s\n\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, cpuModel(), *reps,
		map[bool]string{true: "clients asked for gzip", false: "uncompressed (clients send no Accept-Encoding)"}[*gzip])
	large := pods >= 10000
	if !realistic {
		fmt.Printf("| size | objects | raw LIST bodies (not decoded) | bare LISTs decoded | stsdiag check -A --full -o json (min / median) | full / decoded LISTs | full / raw | peak RSS raw / decoded / full | RSS full / decoded | kubectl get -A -o json (median, peak RSS) | check -A / kubectl | requests full / LISTs | pure diagnosis, 1 core |\n")
		fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		kubectlCell, kubectlRatio := fmt.Sprintf("skipped (> %d pods)", *kubectlMaxPods), "—"
		if withKubectl {
			_, kMed := stats(kubectl)
			kubectlCell, kubectlRatio = fmt.Sprintf("%.2fs, %s", kMed, mib(medianRSS(kubectl))), fmt.Sprintf("%.3f", sMed/kMed)
		}
		fmt.Printf("| %d×%d | %d | %.2fs (%.0f MB) | %.2fs | %.2fs / %.2fs | %.2f | %.2f | %s / %s / %s | %.2f | %s | %s | %d / %d | %s pods/s |\n\n",
			*sets, *replicas, n, rawMed, float64(raw[0].bytes)/1e6, decMed, fMin, fMed, fMed/decMed, fMed/rawMed,
			mib(rawRSS), mib(decRSS), mib(fullRSS), float64(fullRSS)/float64(decRSS), kubectlCell, kubectlRatio,
			full[0].requests, decoded[0].requests, podsPerSecond)
	}
	// Issue 36's table: what the API server sent and spent, and the clients' time and memory,
	// for the bare LISTs (decoded), check -A (triaged) and check -A --full.
	listBytes, checkBytes, fullBytes := medianBytes(decoded), medianBytes(check), medianBytes(full)
	listCPU, checkCPU, fullCPU := medianCPU(decoded), medianCPU(check), medianCPU(full)
	fmt.Printf("| cluster | pods (objects) | deep namespaces | bytes sent: LISTs / check -A / --full | check / LISTs | time decoded LISTs / check -A / --full (min / median) | check / LISTs | peak RSS LISTs / check -A / --full | API server CPU-s: LISTs / check -A / --full | check / LISTs | requests LISTs / check -A / --full |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %s %d×%d | %d (%d) | %d of %d | %s / %s / %s | **%.3f** | %.2f/%.2fs / %.2f/%.2fs / %.2f/%.2fs | **%.3f** | %s / %s / %s | %.2f / %.2f / %.2f | **%.3f** | %d / %d / %d |\n",
		*mix, *sets, *replicas, pods, n, len(syn.Deep), len(syn.Namespaces), mb(listBytes), mb(checkBytes), mb(fullBytes), float64(checkBytes)/float64(listBytes),
		dMin, decMed, sMin, sMed, fMin, fMed, sMed/decMed, mib(decRSS), mib(rss), mib(fullRSS), listCPU, checkCPU, fullCPU, checkCPU/listCPU,
		decoded[0].requests, check[0].requests, full[0].requests)

	fmt.Printf("\nbytes sent for check -A: %s\n", check[0].sentBy)
	if w != nil {
		// Start-up is until both the caches are synced and every StatefulSet is diagnosed: watch -A
		// diagnoses as its caches' first LISTs read, so the second may come first.
		fmt.Printf("\n| size | watch start-up: synced / diagnosed (both / decoded LISTs) | ready / initial %d Events (Events/s posted) | pod status updates (rate, response p50) | CurrentRevisionFailing Events (rate) | lost | update → Event p50 / p99 / max | watch peak RSS |\n", w.initialEvents)
		fmt.Printf("|---|---|---|---|---|---|---|---|\n")
		fmt.Printf("| %d×%d | %.2fs / %.2fs (%.2f×) | %.1fs / %.1fs (%.0f/s) | %d (%.0f/s, %s) | %d (%.0f/s) | %d | %s / %s / %s | %.0f MiB |\n",
			*sets, *replicas, w.synced.Seconds(), w.diagnosed.Seconds(), w.startup().Seconds()/decMed,
			w.ready.Seconds(), w.initialTime.Seconds(), w.initialRate,
			w.updates, w.updateRate, ms(w.updateP50), w.events, w.eventRate, len(w.missing), ms(w.p50), ms(w.p99), ms(w.max),
			float64(w.rssKiB)/1024)
		fmt.Printf("stsdiag_findings_total at the end: %.0f (initial %d + %d updates)\n", w.findingsTotal, w.initialEvents, w.updates)
	}

	var failures []string
	if realistic {
		failures = append(failures, mixTargets(5**sets**replicas, float64(checkBytes)/float64(listBytes), sMed/decMed, rss, checkCPU/listCPU, *timingTargets)...)
	} else {
		// Issue 24's targets, for the read of everything (--full).
		maxRatio := 1.0
		if large {
			maxRatio = 0.1
		}
		if withKubectl {
			if _, kMed := stats(kubectl); fMed/kMed > maxRatio {
				failures = append(failures, fmt.Sprintf("check -A --full took %.2f× the kubectl baseline (target ≤ %.1f×)", fMed/kMed, maxRatio))
			}
		}
		if large && pods <= 10000 && fullRSS > 300*1024 {
			failures = append(failures, fmt.Sprintf("check -A --full: peak RSS %d MiB at %d pods (target ≤ 300 MiB)", fullRSS/1024, pods))
		}
		// The floor targets (issue 24) hold from 100k pods, where fixed costs (start-up, discovery)
		// no longer dominate.
		if pods >= 100000 {
			if r := fMed / decMed; r > 0.9 {
				failures = append(failures, fmt.Sprintf("check -A --full took %.2f× the decoded LISTs (target ≤ 0.9×)", r))
			}
			if r := float64(fullRSS) / float64(decRSS); r > 0.6 {
				failures = append(failures, fmt.Sprintf("check -A --full's peak RSS is %.2f× the decoded LISTs' (target ≤ 0.6×)", r))
			}
		}
	}
	failures = append(failures, requestTargets(syn, decoded[0].requests, check, full)...)
	failures = append(failures, preflightFailures...)
	if w != nil {
		if w.updateRate < 100 {
			failures = append(failures, fmt.Sprintf("watch load: %.0f pod updates/s (target ≥ 100/s)", w.updateRate))
		}
		// Issue 24's targets for watch at the envelope, from 10k pods (where the load lasts long
		// enough to measure a rate): the load as asked (500/s by default), ≥ 500 Events/s posted
		// (the initial findings' Events, posted as fast as watch can).
		if large && w.updateRate < 0.9**watchRate {
			failures = append(failures, fmt.Sprintf("watch load: %.0f pod updates/s (target ≥ 0.9 × -watch-rate %.0f)", w.updateRate, *watchRate))
		}
		if large && w.initialRate < 500 {
			failures = append(failures, fmt.Sprintf("watch: %.0f Events/s posted (target ≥ 500/s)", w.initialRate))
		}
		if pods >= 100000 {
			if r := w.startup().Seconds() / decMed; r > 1.0 {
				failures = append(failures, fmt.Sprintf("watch start-up (to the caches synced and every StatefulSet diagnosed) took %.2f× the decoded LISTs (target ≤ 1.0×)", r))
			}
			if w.rssKiB > 1536*1024 {
				failures = append(failures, fmt.Sprintf("watch: peak RSS %d MiB at %d pods (target ≤ 1536 MiB)", w.rssKiB/1024, pods))
			}
		}
		if len(w.missing) > 0 {
			failures = append(failures, fmt.Sprintf("watch: no Event within 10 s for %d of %d updates (first: %s)", len(w.missing), w.updates, w.missing[0]))
		}
		if w.p99 > time.Second {
			failures = append(failures, fmt.Sprintf("watch: p99 update → Event %s (target ≤ 1 s)", ms(w.p99)))
		}
		if large && pods <= 10000 && w.rssKiB > 400*1024 {
			failures = append(failures, fmt.Sprintf("watch: peak RSS %d MiB at %d pods (target ≤ 400 MiB)", w.rssKiB/1024, *sets**replicas))
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("targets missed: %s", strings.Join(failures, "; "))
	}
	fmt.Println("\nfindings match the known mix; all targets met")
	return nil
}

// populate creates the synthetic objects with parallel workers and writes their statuses: owners
// before what they own (the owner references take the UIDs the server gave).
func populate(ctx context.Context, cfg *rest.Config, syn *synth.Cluster, workers int) (int, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	images, err := imageclient.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	for _, ns := range syn.Namespaces {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return 0, err
		}
		if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			return 0, err
		}
	}
	uids := sync.Map{} // kind/namespace/name → UID
	count := 0
	phase := func(what string, items int, do func(i int) error) error {
		count += items
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		next := make(chan int)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if err := do(i); err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				}
			}()
		}
		for i := 0; i < items; i++ {
			next <- i
		}
		close(next)
		wg.Wait()
		select {
		case err := <-errs:
			return fmt.Errorf("%s: %w", what, err)
		default:
			return nil
		}
	}
	created := func(kind string, obj metav1.Object) {
		uids.Store(kind+"/"+obj.GetNamespace()+"/"+obj.GetName(), obj.GetUID())
	}
	owned := func(ns string, refs []metav1.OwnerReference) []metav1.OwnerReference {
		out := append([]metav1.OwnerReference(nil), refs...)
		for i := range out {
			if uid, ok := uids.Load(out[i].Kind + "/" + ns + "/" + out[i].Name); ok {
				out[i].UID = uid.(types.UID)
			}
		}
		return out
	}
	phases := []struct {
		what  string
		items int
		do    func(i int) error
	}{
		{"nodes", len(syn.Nodes), func(i int) error {
			node := syn.Nodes[i].DeepCopy()
			c, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			c.Status = syn.Nodes[i].Status
			_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, c, metav1.UpdateOptions{})
			return err
		}},
		{"deployments", len(syn.Deployments), func(i int) error {
			d := syn.Deployments[i].DeepCopy()
			d.UID = ""
			c, err := kube.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
			if err == nil {
				created("Deployment", c)
			}
			return err
		}},
		{"daemonsets", len(syn.DaemonSets), func(i int) error {
			d := syn.DaemonSets[i].DeepCopy()
			d.UID = ""
			c, err := kube.AppsV1().DaemonSets(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
			if err == nil {
				created("DaemonSet", c)
			}
			return err
		}},
		{"jobs", len(syn.Jobs), func(i int) error {
			j := syn.Jobs[i].DeepCopy()
			j.UID = ""
			c, err := kube.BatchV1().Jobs(j.Namespace).Create(ctx, j, metav1.CreateOptions{})
			if err == nil {
				created("Job", c)
			}
			return err
		}},
		{"replicasets", len(syn.ReplicaSets), func(i int) error {
			rs := syn.ReplicaSets[i].DeepCopy()
			rs.UID = ""
			rs.OwnerReferences = owned(rs.Namespace, rs.OwnerReferences)
			c, err := kube.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
			if err == nil {
				created("ReplicaSet", c)
			}
			return err
		}},
		{"statefulsets", len(syn.StatefulSets), func(i int) error {
			set := syn.StatefulSets[i].DeepCopy()
			set.UID, set.Generation = "", 0
			c, err := kube.AppsV1().StatefulSets(set.Namespace).Create(ctx, set, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			created("StatefulSet", c)
			c.Status = syn.StatefulSets[i].Status
			c.Status.ObservedGeneration = c.Generation
			_, err = kube.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
			return err
		}},
		{"services", len(syn.Services), func(i int) error {
			svc := syn.Services[i].DeepCopy()
			_, err := kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
			return err
		}},
		{"controllerrevisions", len(syn.Revisions), func(i int) error {
			rev := syn.Revisions[i].DeepCopy()
			rev.OwnerReferences = owned(rev.Namespace, rev.OwnerReferences)
			_, err := kube.AppsV1().ControllerRevisions(rev.Namespace).Create(ctx, rev, metav1.CreateOptions{})
			return err
		}},
		{"pods", len(syn.Pods), func(i int) error {
			pod := syn.Pods[i].DeepCopy()
			pod.UID = ""
			pod.OwnerReferences = owned(pod.Namespace, pod.OwnerReferences)
			status := pod.Status
			pod.Status = corev1.PodStatus{}
			c, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			c.Status = status
			_, err = kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
			return err
		}},
		{"persistentvolumeclaims", len(syn.PVCs), func(i int) error {
			pvc := syn.PVCs[i].DeepCopy()
			status := pvc.Status
			c, err := kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			c.Status = status
			_, err = kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
			return err
		}},
		{"events", len(syn.Events), func(i int) error {
			// After what they are about, at the time they are created: a FailedCreate Event
			// explains a missing pod only if it came after the pods before it.
			e := syn.Events[i].DeepCopy()
			e.InvolvedObject.UID = ""
			if uid, ok := uids.Load(e.InvolvedObject.Kind + "/" + e.Namespace + "/" + e.InvolvedObject.Name); ok {
				e.InvolvedObject.UID = uid.(types.UID)
			}
			now := metav1.Now()
			e.FirstTimestamp, e.LastTimestamp = now, now
			_, err := kube.CoreV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
			return err
		}},
		{"imagestreams", len(syn.ImageStreams), func(i int) error {
			is := syn.ImageStreams[i].DeepCopy()
			status := is.Status
			c, err := images.ImageV1().ImageStreams(is.Namespace).Create(ctx, is, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			c.Status = status
			_, err = images.ImageV1().ImageStreams(is.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
			return err
		}},
	}
	for _, p := range phases {
		if err := phase(p.what, p.items, p.do); err != nil {
			return 0, err
		}
	}
	return count, nil
}

var (
	requestsLine = regexp.MustCompile(`stsdiag: (\d+) HTTP requests`)
	floorLine    = regexp.MustCompile(`listfloor: objects=\d+ bytes=(\d+) requests=(\d+)`)
	peakLine     = regexp.MustCompile(`peakrss: wall=([\d.]+) maxrss_kib=(\d+)`)
)

// measure runs a command under peakrss with its output discarded and returns its wall time, its
// own peak RSS, the HTTP requests it counted (stsdiag, listfloor) and, with srv, the bytes the
// API server sent and the CPU time it spent meanwhile (the bench makes no request then).
func measure(tl tools, srv *apiServer, env []string, bin string, args ...string) (sample, error) {
	cmd := exec.Command(tl.peakrss, append([]string{bin}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	var sent0 int64
	var by0 map[string]float64
	var cpu0 float64
	var err error
	if srv != nil {
		if sent0, by0, err = srv.sentBytes(context.Background()); err != nil {
			return sample{}, err
		}
		if cpu0, err = srv.cpuSeconds(); err != nil {
			return sample{}, err
		}
	}
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%s %v: %w\n%s", bin, args, err, stderr.String())
	}
	var s sample
	if srv != nil {
		cpu1, err := srv.cpuSeconds()
		if err != nil {
			return sample{}, err
		}
		sent1, by1, err := srv.sentBytes(context.Background())
		if err != nil {
			return sample{}, err
		}
		s.sent, s.serverCPU, s.sentBy = sent1-sent0, cpu1-cpu0, breakdown(by0, by1)
	}
	m := peakLine.FindStringSubmatch(stderr.String())
	if m == nil {
		return sample{}, fmt.Errorf("%s %v: no peakrss line in %q", bin, args, stderr.String())
	}
	s.seconds, _ = strconv.ParseFloat(m[1], 64)
	s.rssKiB, _ = strconv.ParseInt(m[2], 10, 64)
	if m := requestsLine.FindStringSubmatch(stderr.String()); m != nil {
		s.requests, _ = strconv.Atoi(m[1])
	}
	if m := floorLine.FindStringSubmatch(stderr.String()); m != nil {
		s.bytes, _ = strconv.ParseInt(m[1], 10, 64)
		s.requests, _ = strconv.Atoi(m[2])
	}
	return s, nil
}

// buildTools builds peakrss and listfloor into a temporary directory (the Go build cache makes
// this quick after the first time).
func buildTools() (tools, error) {
	dir, err := os.MkdirTemp("", "stsdiag-bench-")
	if err != nil {
		return tools{}, err
	}
	tl := tools{peakrss: filepath.Join(dir, "peakrss"), listfloor: filepath.Join(dir, "listfloor")}
	for bin, pkg := range map[string]string{tl.peakrss: "./cmd/peakrss", tl.listfloor: "./cmd/listfloor"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return tools{}, fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	}
	return tl, nil
}

// rssControl proves the peak RSS method: with 512 MiB held by the bench, os/exec's rusage of
// `true` reports about that much (Linux counts the parent's memory map the child had before
// exec), while peakrss reports `true`'s own few MiB.
func rssControl(tl tools) error {
	ballast := make([]byte, 512<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		return err
	}
	var naive int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		naive = ru.Maxrss
	}
	s, err := measure(tl, nil, nil, "true")
	runtime.KeepAlive(ballast)
	ballast = nil
	debug.FreeOSMemory()
	if err != nil {
		return err
	}
	fmt.Printf("peak RSS control, the bench holding 512 MiB: `true` reads %s by os/exec's rusage, %s by peakrss\n", mib(naive), mib(s.rssKiB))
	if s.rssKiB > 16<<10 {
		return fmt.Errorf("peakrss reads %s for `true` under a 512 MiB bench (want ≤ 16 MiB): the RSS figures would include the bench", mib(s.rssKiB))
	}
	return nil
}

func mib(kib int64) string { return fmt.Sprintf("%.0f MiB", float64(kib)/1024) }

// medianRSS is the median of the samples' peak RSS.
func medianRSS(samples []sample) int64 {
	var v []int64
	for _, s := range samples {
		v = append(v, s.rssKiB)
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}

// report is what verifyFindings compares of check's JSON report: the StatefulSets' summaries
// and the findings' identity (their messages and details may name durations).
type report struct {
	StatefulSets json.RawMessage `json:"statefulSets"`
	Findings     []struct {
		Code        string `json:"code"`
		Severity    string `json:"severity"`
		Reason      string `json:"reason"`
		Namespace   string `json:"namespace"`
		StatefulSet string `json:"statefulSet"`
		Pod         string `json:"pod"`
		Container   string `json:"container"`
		Image       string `json:"image"`
	} `json:"findings"`
	Warnings []string `json:"warnings"`
}

// verifyFindings runs check -A, triaged and --full: each must find exactly the synthetic
// cluster's known findings, and both must report the same StatefulSets and findings.
func verifyFindings(env []string, stsdiag string, syn *synth.Cluster) error {
	var reports []report
	for _, args := range [][]string{{"check", "-A", "-o", "json", "--fail-on", "never"}, {"check", "-A", "--full", "-o", "json", "--fail-on", "never"}} {
		cmd := exec.Command(stsdiag, args...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%s %v: %w", stsdiag, args, err)
		}
		var rep report
		if err := json.Unmarshal(out, &rep); err != nil {
			return err
		}
		got := map[string]int{}
		for _, f := range rep.Findings {
			got[f.Code]++
		}
		if fmt.Sprint(got) != fmt.Sprint(syn.Expected) {
			return fmt.Errorf("%v: findings %v, want the known mix %v", args, got, syn.Expected)
		}
		reports = append(reports, rep)
	}
	triaged, full := reports[0], reports[1]
	a, _ := json.Marshal(triaged)
	b, _ := json.Marshal(full)
	if !bytes.Equal(a, b) {
		return fmt.Errorf("check -A and check -A --full differ:\n%s\n%s", a, b)
	}
	fmt.Printf("findings: %v (the known mix), check -A and --full alike (%d StatefulSets, %d findings)\n",
		syn.Expected, len(syn.StatefulSets), len(triaged.Findings))
	return nil
}

// requestTargets checks the requests check -A made, triaged and --full, against what the
// synthetic objects call for, and that every repetition made as many.
func requestTargets(syn *synth.Cluster, floor int, check, full []sample) []string {
	var failures []string
	pages := func(n, size int) int { return max(1, (n+size-1)/size) }
	streams := pages(len(syn.ImageStreams), 500)
	// Triaged (gather.Triage): kube-controller-manager's Lease (1 GET: NotFound here, where no
	// controller manager runs, so the statuses are trusted); discovery of the image API and of
	// the server version (2); cluster-wide and whole, StatefulSets, Services, StorageClasses,
	// Nodes, Namespaces (the image API is served) and the ControllerRevisions as metadata (6),
	// the ImageStreams in pages of 500; then StatefulSets (again, whole), Pods,
	// ControllerRevisions, PVCs and Warning Events (5) in every namespace holding an unsettled
	// StatefulSet (synth.Cluster.Deep; no revision
	// here is orphaned); no owner lookup (no StatefulSet is terminating). Services: the headless
	// ones, and a GET of each other Service a StatefulSet names (not headless, or missing), or
	// past 20 of them a LIST of all (gather.Triage's governingServices).
	headless := map[string]bool{}
	for _, svc := range syn.Services {
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			headless[svc.Namespace+"/"+svc.Name] = true
		}
	}
	gets := 0
	for _, set := range syn.StatefulSets {
		if n := set.Spec.ServiceName; n != "" && !headless[set.Namespace+"/"+n] {
			headless[set.Namespace+"/"+n] = true
			gets++
		}
	}
	if gets > 20 {
		gets = 1
	}
	triaged := 1 + 2 + 6 + streams + 5*len(syn.Deep) + gets
	if check[0].requests != triaged {
		failures = append(failures, fmt.Sprintf("check -A made %d requests, want %d (Lease 1, discovery 2, 6 kinds cluster-wide, ImageStreams by 500: %d, 5 in each of %d deep namespaces, governing Services not headless: %d)",
			check[0].requests, triaged, streams, len(syn.Deep), gets))
	}
	// --full (gather.EachNamespace): the Lease, discovery 2, StorageClasses, Nodes and Namespaces
	// whole, the ImageStreams by 500, and the namespaced kinds in pages of gather.DefaultPageSize:
	// StatefulSets, Pods, ControllerRevisions, PVCs, Warning Events, Services (and the kubernetes
	// Service).
	ps := int(gather.DefaultPageSize)
	paged := pages(len(syn.StatefulSets), ps) + pages(len(syn.Pods), ps) + pages(len(syn.Revisions), ps) + pages(len(syn.PVCs), ps) +
		pages(len(syn.Events), ps) + pages(len(syn.Services)+1, ps)
	if want := 1 + 2 + 3 + streams + paged; full[0].requests != want {
		failures = append(failures, fmt.Sprintf("check -A --full made %d requests, want %d (Lease 1, discovery 2, 3 cluster-scoped kinds, ImageStreams by 500, namespaced kinds by %d: %d)", full[0].requests, want, ps, paged))
	}
	if want := floor + 1 + 2 + paged - 6; full[0].requests != want {
		failures = append(failures, fmt.Sprintf("check -A --full made %d requests, the bare LISTs %d: want %d (the LISTs + the Lease + 2 discovery + the namespaced kinds' further pages)", full[0].requests, floor, want))
	}
	for _, runs := range [][]sample{check, full} {
		for _, s := range runs[1:] {
			if s.requests != runs[0].requests {
				failures = append(failures, fmt.Sprintf("request count varies: %d vs %d", s.requests, runs[0].requests))
			}
		}
	}
	return failures
}

// mixTargets are issue 36's targets for check -A on the realistic mix (20% of pods owned by
// StatefulSets, 1% of these unsettled), from its smallest size (6k pods): bytes ≤ 0.1× the bare
// LISTs'; time ≤ 0.3× the decoded LISTs' (≤ 0.15× from 50k pods); peak RSS ≤ 150 MiB; the API
// server's CPU ≤ 0.2× the LISTs'. The last three only with timing.
func mixTargets(nominalPods int, bytesRatio, timeRatio float64, rssKiB int64, cpuRatio float64, timing bool) []string {
	if nominalPods < 6000 {
		return nil
	}
	failures := []string{}
	if bytesRatio > 0.1 {
		failures = append(failures, fmt.Sprintf("check -A: the API server sent %.3f× the bare LISTs' bytes (target ≤ 0.1×)", bytesRatio))
	}
	if !timing {
		return failures
	}
	maxTime := 0.3
	if nominalPods >= 50000 {
		maxTime = 0.15
	}
	if timeRatio > maxTime {
		failures = append(failures, fmt.Sprintf("check -A took %.3f× the decoded LISTs (target ≤ %.2f× at %d pods)", timeRatio, maxTime, nominalPods))
	}
	if rssKiB > 150*1024 {
		failures = append(failures, fmt.Sprintf("check -A: peak RSS %s (target ≤ 150 MiB)", mib(rssKiB)))
	}
	if cpuRatio > 0.2 {
		failures = append(failures, fmt.Sprintf("check -A cost the API server %.3f× the CPU of the bare LISTs (target ≤ 0.2×)", cpuRatio))
	}
	return failures
}

// describe says what the synthetic cluster holds.
func describe(c *synth.Cluster, sets, replicas int) string {
	if len(c.Deployments) == 0 {
		return fmt.Sprintf("%d StatefulSets × %d replicas, their revisions, PVCs, ImageStreams", sets, replicas)
	}
	owners := map[string]int{}
	for _, p := range c.Pods {
		owners[p.OwnerReferences[0].Kind]++
	}
	return fmt.Sprintf("realistic mix: %d pods — %d of %d StatefulSets (%d unsettled, in %d namespaces), %d of ReplicaSets of %d Deployments, %d of %d Jobs, %d of %d DaemonSets on %d nodes — in %d namespaces; %d Services, %d ControllerRevisions, %d PVCs, %d Warning Events, %d ImageStreams",
		len(c.Pods), owners["StatefulSet"], len(c.StatefulSets), (len(c.StatefulSets)+synth.UnsettledEvery-1)/synth.UnsettledEvery, len(c.Deep),
		owners["ReplicaSet"], len(c.Deployments), owners["Job"], len(c.Jobs), owners["DaemonSet"], len(c.DaemonSets), len(c.Nodes),
		len(c.Namespaces), len(c.Services), len(c.Revisions), len(c.PVCs), len(c.Events), len(c.ImageStreams))
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

func medianBytes(samples []sample) int64 {
	var v []int64
	for _, s := range samples {
		v = append(v, s.sent)
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}

func medianCPU(samples []sample) float64 {
	var v []float64
	for _, s := range samples {
		v = append(v, s.serverCPU)
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

var podsPerSecondRE = regexp.MustCompile(`([\d.]+) pods/s`)

// pureDiagnosis runs the Go benchmark of the diagnosis on one core for the same size.
func pureDiagnosis(sets, replicas int) (string, error) {
	name := fmt.Sprintf("BenchmarkDiagnose/%dx%d$", sets, replicas)
	out, err := exec.Command("go", "test", "./internal/synth", "-run", "^$", "-bench", name, "-cpu", "1", "-benchtime", "3s").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go test -bench: %w\n%s", err, out)
	}
	m := podsPerSecondRE.FindStringSubmatch(string(out))
	if m == nil {
		return "n/a (size not in BenchmarkDiagnose)", nil
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return fmt.Sprintf("%.2fM", v/1e6), nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func stats(samples []sample) (minimum, median float64) {
	var v []float64
	for _, s := range samples {
		v = append(v, s.seconds)
	}
	sort.Float64s(v)
	return v[0], v[len(v)/2]
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "model name") {
			return strings.TrimSpace(line[strings.Index(line, ":")+1:])
		}
	}
	return "unknown CPU"
}
