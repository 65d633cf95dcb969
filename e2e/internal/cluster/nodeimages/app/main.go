// Command app is the workload of the real-node e2e suite, built static (CGO_ENABLED=0) into a
// one-layer image by e2e/internal/cluster. Its behaviour comes from its arguments:
//
//	app serve [-unready]      serve HTTP on :8080; /ready answers 503 with -unready, else 200
//	app serve -delay D        the same, but /ready answers 503 until D (a Go duration) has passed
//	                          since start: a slow but healthy start
//	app exit CODE MESSAGE...  print MESSAGE on stderr and exit with CODE
//	app wait                  block until terminated (an init container that never completes)
package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
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
		unready := len(args) > 1 && args[1] == "-unready"
		var readyAt time.Time
		if len(args) > 2 && args[1] == "-delay" {
			d, err := time.ParseDuration(args[2])
			if err != nil {
				fmt.Fprintln(os.Stderr, "app: -delay:", err)
				os.Exit(2)
			}
			readyAt = time.Now().Add(d)
			fmt.Printf("app: ready in %s\n", d)
		}
		http.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
			if unready || time.Now().Before(readyAt) {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "app") })
		fmt.Println("app: serving on :8080")
		if err := http.ListenAndServe(":8080", nil); err != nil {
			fmt.Fprintln(os.Stderr, "app:", err)
			os.Exit(1)
		}
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
