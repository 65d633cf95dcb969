// Package cmd holds the stsdiag commands: flags, wiring and exit codes over the library packages.
package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/stsdiag/stsdiag/internal/connect"
	"github.com/stsdiag/stsdiag/internal/render"
)

// Exit codes are public API.
const (
	ExitOK       = 0
	ExitFindings = 1
	ExitError    = 2
	ExitTimeout  = 3
	// ExitInconclusive: canary's analysis could not tell whether the new pods serve well; the
	// canary paused where it was (result Inconclusive).
	ExitInconclusive = 4
	// ExitInterrupted: a signal (SIGINT, SIGTERM) stopped a command before it finished
	// (128+SIGINT, as shells report an interrupted command). watch, a service, stops with 0.
	ExitInterrupted = 130
)

// exitError carries an exit code up to Main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode marks err with an exit code; a nil err with code 1 or 3 means "no message".
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// Main runs the command line and returns the process exit code. SIGINT and SIGTERM cancel the
// command's context; a command that has not returned interruptGrace later, or a second signal,
// ends the process (exitIfStuck).
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go exitIfStuck(ctx, done, errOut, interruptGrace, os.Exit)
	return run(ctx, args, genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut})
}

// interruptGrace is how long a command may take to stop once a signal cancelled its context.
// Not every request takes a context (client-go's discovery does not), and a request to an API
// server that accepts the connection and never answers waits forever without
// --request-timeout: Ctrl-C must still end the command, as it ends kubectl.
const interruptGrace = 10 * time.Second

// exitIfStuck exits with ExitInterrupted when ctx is cancelled (a signal) and done is not closed
// (the command did not return) within grace or before another signal.
func exitIfStuck(ctx context.Context, done <-chan struct{}, errOut io.Writer, grace time.Duration, exit func(int)) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-again:
	case <-timer.C:
	}
	fmt.Fprintf(errOut, "error: interrupted, and the command did not stop within %s (is a request to the API server hanging?)\n", grace)
	exit(ExitInterrupted)
}

// run runs the command line with ctx and returns the exit code.
func run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	silenceKlog()
	stopProfiles := startProfiles(streams.ErrOut)
	root := NewRootCommand(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	stopProfiles()
	if os.Getenv("STSDIAG_REQUEST_STATS") != "" {
		n, bytes := connect.RequestStats()
		fmt.Fprintf(streams.ErrOut, "stsdiag: %d HTTP requests, %d response bytes\n", n, bytes)
	}
	code, err := exitCode(err)
	if err != nil {
		render.Error(streams.ErrOut, err)
	}
	return code
}

// exitCode is the exit code of a command's error and the message to print, if any.
func exitCode(err error) (int, error) {
	if err == nil {
		return ExitOK, nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, ee.err
	}
	return ExitError, err
}

// NewRootCommand builds `kubectl stsdiag`.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-stsdiag",
		Short: "Find StatefulSet rollouts that will never finish on their own, explain why, and repair them safely",
		Long: `stsdiag finds StatefulSet rollouts that Kubernetes will never finish on its own
(kubernetes/kubernetes#67250: a pod of an old, broken revision stuck at startup under
OrderedReady + RollingUpdate), image references an OpenShift ImageStream should have resolved,
stale revisions of deleted owners, and the other reasons StatefulSet pods do not start.

Run it as a kubectl or oc plugin: kubectl stsdiag check to diagnose, fix to repair safely,
wait as a CI gate, preflight before an apply, migrate to change the fields Kubernetes forbids
changing in place; watch runs in the cluster.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl stsdiag",
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(ExitError, err) })
	configFlags.AddFlags(root.PersistentFlags())
	var verbosity int
	root.PersistentFlags().IntVarP(&verbosity, "v", "v", 0, "Log level of client-go's log on stderr, as kubectl's -v: 6 each request with its status and time, 8 the bodies too (0: none)")
	root.PersistentPreRun = func(*cobra.Command, []string) { klogTo(streams.ErrOut, verbosity) }
	root.AddCommand(newCheckCommand(configFlags, streams))
	root.AddCommand(newPreflightCommand(configFlags, streams))
	root.AddCommand(newFixCommand(configFlags, streams))
	root.AddCommand(newWaitCommand(configFlags, streams))
	root.AddCommand(newCanaryCommand(configFlags, streams))
	root.AddCommand(newExplainCommand(configFlags, streams))
	root.AddCommand(newWatchCommand(configFlags, streams))
	root.AddCommand(newMigrateCommand(configFlags, streams))
	root.AddCommand(newVersionCommand(streams))
	root.Long += "\n\n" + exitCodesHelp("")
	for _, c := range root.Commands() {
		// Each command's --help ends with what each exit code means there (ExitCodes).
		if c.Long == "" {
			c.Long = c.Short + "."
		}
		c.Long = strings.TrimRight(c.Long, "\n") + "\n\n" + exitCodesHelp(c.Name())
		// pflag prints notices such as "Flag --stuck-grace has been deprecated" on the flag
		// set's output; cobra would copy them to stdout, where the documents go.
		c.Flags().SetOutput(streams.ErrOut)
	}
	return root
}

func silenceKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	_ = fs.Set("v", "0")
	klog.SetOutput(io.Discard)
}

// klogTo sends client-go's log (klog) at verbosity v and above to w: -v. Set before any client is
// built: client-go decides when it builds a transport whether to wrap it in its request logger.
func klogTo(w io.Writer, v int) {
	if v <= 0 {
		return
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", strconv.Itoa(v))
	_ = fs.Set("skip_headers", "false")
	klog.SetOutput(w)
}

// runner is a command's options, built from its flags and checked: Run does the work.
type runner interface {
	Run(ctx context.Context) error
}

// completer is a command's options that build their API clients once their flags are checked
// (kubectl's Complete: its WaitOptions carry their clients): Run uses the clients the options
// carry, so a test runs a command's Run over fake clients.
type completer interface {
	complete() error
}

// runE builds a command's options from its flags and the arguments (kubectl's Flags.ToOptions:
// every parse and check happens there, nothing after), builds their clients, then runs them. An
// error building them is bad input (exit 2), as is a kubeconfig that gives no clients.
func runE[O runner](toOptions func(args []string) (O, error)) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		o, err := toOptions(args)
		if err != nil {
			return withCode(ExitError, err)
		}
		if cm, ok := any(o).(completer); ok {
			if err := cm.complete(); err != nil {
				return withCode(ExitError, err)
			}
		}
		return onSignal(c.Context(), o.Run(c.Context()))
	}
}

// onSignal makes a run that failed once a signal cancelled ctx, or failed with a cancellation
// however wrapped, exit 130 with no message: whatever the error says then (a timeout, a failed
// LIST) is a consequence of the interruption. A run that succeeded keeps its exit 0.
func onSignal(ctx context.Context, err error) error {
	if err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)) {
		return withCode(ExitInterrupted, nil)
	}
	return err
}
