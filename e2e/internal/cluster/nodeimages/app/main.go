// Command app is the workload of the real-node e2e suite, built static (CGO_ENABLED=0) into a
// one-layer image by e2e/internal/cluster. Its behaviour comes from its arguments:
//
//	app serve [FLAGS]         serve HTTP on :8080 (flags below, combinable in any order)
//	app exit CODE MESSAGE...  print MESSAGE on stderr and exit with CODE
//	app wait                  block until terminated (an init container that never completes)
//
// The flags of serve:
//
//	-unready      /ready answers 503 for ever (else 200)
//	-delay D      /ready answers 503 until D (a Go duration) has passed since start: a slow but
//	              healthy start
//	-errors R     the fraction R (0..1, default 0) of the requests to /work answered 500, spread
//	              evenly (R = 0.5: every second one)
//	-rps N        requests per second the app sends itself to /work on localhost (default 20; 0: none)
//	-service S    destination_service of istio_requests_total (default $APP_SERVICE, else "app")
//	-write PATH   at start, write PATH (its start time and hostname) unless it exists: a data
//	              file on a volume, which a container that keeps its volume finds again
//
// serve always generates its own traffic (-rps) and exposes /metrics in Prometheus' text format:
//
//	app_requests_total{code="200"|"500"}      requests /work answered, by status code
//	istio_requests_total{reporter="source",destination_service=S,response_code="200"|"500"}
//	                                          the same requests as the client saw them, named as
//	                                          Istio's metric is, so that Argo Rollouts' documented
//	                                          success-rate query runs unchanged
//
// Both series of each metric exist from the start (at 0), so that a ratio of two sums is defined
// (0, not an empty vector) before the first error.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	// PID 1 ignores SIGTERM unless it handles it: exit at once so pods terminate promptly.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		os.Exit(0)
	}()
	args := os.Args[1:]
	if len(args) == 0 {
		args = []string{"serve"}
	}
	switch args[0] {
	case "serve":
		serve(args[1:])
	case "exit":
		code := 1
		if len(args) > 1 {
			if n, err := strconv.Atoi(args[1]); err == nil {
				code = n
			}
		}
		if len(args) > 2 {
			fmt.Fprintln(os.Stderr, strings.Join(args[2:], " "))
		}
		os.Exit(code)
	case "wait":
		fmt.Println("app: waiting")
		select {}
	default:
		fmt.Fprintf(os.Stderr, "app: unknown mode %q\n", args[0])
		os.Exit(2)
	}
}

func serve(args []string) {
	fs := flag.NewFlagSet("app serve", flag.ContinueOnError)
	unready := fs.Bool("unready", false, "/ready answers 503 for ever")
	delay := fs.Duration("delay", 0, "/ready answers 503 until this long after start")
	errorRatio := fs.Float64("errors", 0, "fraction (0..1) of /work requests answered 500")
	rps := fs.Int("rps", 20, "requests per second the app sends itself to /work")
	defaultService := os.Getenv("APP_SERVICE")
	if defaultService == "" {
		defaultService = "app"
	}
	service := fs.String("service", defaultService, "destination_service label of istio_requests_total")
	write := fs.String("write", "", "write this file at start unless it exists")
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	if *write != "" {
		writeOnce(*write)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "app: serve: unexpected arguments %q\n", fs.Args())
		os.Exit(2)
	}
	if *errorRatio < 0 || *errorRatio > 1 {
		fmt.Fprintf(os.Stderr, "app: -errors %g: want 0..1\n", *errorRatio)
		os.Exit(2)
	}
	if *rps < 0 {
		fmt.Fprintf(os.Stderr, "app: -rps %d: want 0 or more\n", *rps)
		os.Exit(2)
	}
	var readyAt time.Time
	if *delay > 0 {
		readyAt = time.Now().Add(*delay)
		fmt.Printf("app: ready in %s\n", *delay)
	}

	reg := prometheus.NewRegistry()
	served := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "app_requests_total", Help: "Requests to /work answered, by HTTP status code.",
	}, []string{"code"})
	istio := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "istio_requests_total", Help: "Requests to /work as their client saw them, labelled as Istio's metric.",
	}, []string{"reporter", "destination_service", "response_code"})
	reg.MustRegister(served, istio)
	for _, code := range []string{"200", "500"} {
		served.WithLabelValues(code)
		istio.WithLabelValues("source", *service, code)
	}

	// Errors are spread evenly: each request adds R to a credit, and one is answered 500 each
	// time the credit reaches 1, so that any window of requests holds the ratio R ± 1 request.
	var mu sync.Mutex
	credit := 0.0
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		if *unready || time.Now().Before(readyAt) {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/work", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		credit += *errorRatio
		fail := credit >= 1-1e-9
		if fail {
			credit--
		}
		mu.Unlock()
		if fail {
			served.WithLabelValues("500").Inc()
			http.Error(w, "injected error", http.StatusInternalServerError)
			return
		}
		served.WithLabelValues("200").Inc()
		fmt.Fprintln(w, "done")
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "app") })

	l, err := net.Listen("tcp", ":8080")
	if err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
	if *rps > 0 {
		go traffic(*rps, func(code int) { istio.WithLabelValues("source", *service, strconv.Itoa(code)).Inc() })
	}
	fmt.Printf("app: serving on :8080 (errors %g, %d requests/s to /work, service %q)\n", *errorRatio, *rps, *service)
	if err := http.Serve(l, mux); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

// traffic sends rps requests a second to the app's own /work and reports each answer's status.
func traffic(rps int, seen func(code int)) {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(time.Second / time.Duration(rps))
	defer tick.Stop()
	for range tick.C {
		resp, err := client.Get("http://127.0.0.1:8080/work")
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		seen(resp.StatusCode)
	}
}

// writeOnce writes path with the start time and the hostname unless it exists.
func writeOnce(path string) {
	host, _ := os.Hostname()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if os.IsExist(err) {
		fmt.Printf("app: %s exists\n", path)
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "app: -write: %v\n", err)
		os.Exit(2)
	}
	fmt.Fprintf(f, "written by %s at %s\n", host, time.Now().UTC().Format(time.RFC3339Nano))
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "app: -write: %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("app: wrote %s\n", path)
}
