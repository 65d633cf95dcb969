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
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
)

// Exit codes are public API.
const (
	ExitOK       = 0
	ExitFindings = 1
	ExitError    = 2
	ExitTimeout  = 3
	// ExitInterrupted: a signal (SIGINT, SIGTERM) stopped wait before a verdict (128+SIGINT,
	// as shells report an interrupted command).
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

// Main runs the command line and returns the process exit code.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	silenceKlog()
	streams := genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut}
	root := NewRootCommand(streams)
	root.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := root.ExecuteContext(ctx)
	if os.Getenv("STSDIAG_REQUEST_STATS") != "" {
		fmt.Fprintf(errOut, "stsdiag: %d HTTP requests\n", requests.Load())
	}
	if err == nil {
		return ExitOK
	}
	code := ExitError
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		fmt.Fprintf(errOut, "error: %s\n", oneLine(err.Error()))
	}
	return code
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
wait as a CI gate; watch runs in the cluster.

Exit codes: 0 nothing wrong (or everything repaired), 1 findings or something left unrepaired,
2 could not evaluate, 3 a wait timed out, 130 a wait interrupted by a signal.`,
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
	root.AddCommand(NewCheckCommand(configFlags, streams))
	root.AddCommand(NewFixCommand(configFlags, streams))
	root.AddCommand(NewWaitCommand(configFlags, streams))
	root.AddCommand(NewWatchCommand(configFlags, streams))
	root.AddCommand(NewVersionCommand(streams))
	return root
}

func silenceKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// options is the Complete/Validate/Run shape every command's options follow.
type options interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runE runs a command's options; errors before Run are bad input (exit 2).
func runE(o options) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
			return withCode(ExitError, err)
		}
		if err := o.Validate(); err != nil {
			return withCode(ExitError, err)
		}
		return o.Run(c.Context())
	}
}
