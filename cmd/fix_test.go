package cmd

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/fix"
	"github.com/stsdiag/stsdiag/internal/model"
)

func TestConfirmOnTerminal(t *testing.T) {
	for answer, want := range map[string]bool{"y\n": true, "yes\n": true, "n\n": false, "\n": false} {
		t.Run(strings.TrimSpace(answer), func(t *testing.T) {
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pseudo-terminal here: %v", err)
			}
			defer ptmx.Close()
			defer tty.Close()
			var out, errOut bytes.Buffer
			o := &fixOptions{IOStreams: genericiooptions.IOStreams{In: tty, Out: &out, ErrOut: &errOut}}
			if _, err := ptmx.Write([]byte(answer)); err != nil {
				t.Fatal(err)
			}
			got, err := askOnTerminal(context.Background(), o.IOStreams, "Apply these actions?")
			if err != nil || got != want {
				t.Errorf("answer %q: confirmed %v (%v), want %v", answer, got, err, want)
			}
			if errOut.String() != "Apply these actions? [y/N] " || out.Len() != 0 {
				t.Errorf("the question must go to stderr alone: stderr %q, stdout %q", errOut.String(), out.String())
			}
		})
	}
}

func TestNoTerminalRefuses(t *testing.T) {
	o := &fixOptions{IOStreams: genericiooptions.IOStreams{In: strings.NewReader("y\n"), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	if ok, err := askOnTerminal(context.Background(), o.IOStreams, "Apply these actions?"); ok || err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("without a terminal fix must refuse and point to --yes: %v %v", ok, err)
	}
}

// TestConfirmInterrupted: Ctrl-C at the question ends it at once (it used to wait for Enter).
func TestConfirmInterrupted(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	o := &fixOptions{IOStreams: genericiooptions.IOStreams{In: tty, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() {
		_, err := askOnTerminal(ctx, o.IOStreams, "Apply these actions?")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want an interruption (context.Canceled)", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the question still waits for Enter 3s after the signal")
	}
}

// fakeFix plans one DeletePod and follows fix.Run's contract: OnPlan, Confirm (an error skips
// every action), Progress per applied action, the rollout log.
func fakeFix(ctx context.Context, o fix.Options) (*model.FixResult, error) {
	plan := &model.FixResult{DryRun: o.DryRun}
	plan.Actions = []model.Action{{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "web", Pod: "web-0", UID: "u1"}, Cause: apiv1.StaleRevisionStuck}}
	o.OnPlan(plan, nil)
	if o.Confirm != nil {
		ok, err := o.Confirm(plan)
		if err != nil {
			plan.Actions[0].Result, plan.Actions[0].Message = apiv1.ResultSkipped, "not confirmed"
			return plan, nil
		}
		if !ok {
			return plan, fix.ErrNotConfirmed
		}
	}
	plan.Actions[0].Result, plan.Actions[0].Message = apiv1.ResultDone, "deleted"
	if o.Progress != nil {
		o.Progress(plan.Actions[0])
	}
	if o.RolloutLog != nil {
		_, _ = o.RolloutLog.Write([]byte("shop/web: 3/3 updated, 3 ready: rollout complete\n"))
	}
	plan.Rollout = apiv1.RolloutComplete
	return plan, nil
}

func newTestFix(t *testing.T, streams genericiooptions.IOStreams, args ...string) *fixOptions {
	t.Helper()
	flags := newFixFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), streams)
	if err := flags.command().ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	o, err := flags.ToOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	o.repairFix = fakeFix
	return o
}

// TestFixInterruptedAtTheQuestionExits130: a signal at "Apply these actions?" ends fix at once
// with exit 130, nothing applied.
func TestFixInterruptedAtTheQuestionExits130(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	var out bytes.Buffer
	o := newTestFix(t, genericiooptions.IOStreams{In: tty, Out: &out, ErrOut: &bytes.Buffer{}})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	done := make(chan int, 1)
	go func() {
		code, _ := exitCode(onSignal(ctx, o.Run(ctx)))
		done <- code
	}()
	select {
	case code := <-done:
		if code != ExitInterrupted {
			t.Errorf("exit %d, want 130", code)
		}
		if !strings.Contains(out.String(), "Not applied: interrupted") {
			t.Errorf("stdout %q: want the plan not applied, interrupted", out.String())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("fix still waits for Enter 3s after the signal")
	}
}

// TestFixStreams: in the human format the plan, the action results and the summary are stdout;
// the rollout progress of --wait is stderr.
func TestFixStreams(t *testing.T) {
	var out, errOut bytes.Buffer
	o := newTestFix(t, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, "--yes", "--wait", "--timeout", "1m")
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "Plan (1 action):\n  1. delete pod/web-0 -n shop (uid u1)\n" +
		"done     delete pod/web-0 -n shop (uid u1): deleted\n" +
		"1 action: 1 done, 0 skipped, 0 failed; 0 findings left unrepaired; rollout complete.\n"
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	if errOut.String() != "shop/web: 3/3 updated, 3 ready: rollout complete\n" {
		t.Errorf("stderr %q: want the rollout progress alone", errOut.String())
	}
}

// fix --wait takes its duration from --timeout, as wait and canary do; --wait=DURATION, the
// former form, still works with a notice on stderr.
func TestFixWaitTimeout(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		want   time.Duration
		notice string
		err    string
	}{
		{args: nil, want: 0},
		{args: []string{"--wait"}, want: 5 * time.Minute},
		{args: []string{"--wait", "--timeout", "2m"}, want: 2 * time.Minute},
		{args: []string{"--wait=3m"}, want: 3 * time.Minute, notice: "Flag --wait=3m has been deprecated, use --wait --timeout 3m\n"},
		{args: []string{"--timeout", "2m"}, err: "--timeout needs --wait"},
		{args: []string{"--wait=3m", "--timeout", "2m"}, err: "--wait=DURATION and --timeout both give the time: use --wait --timeout DURATION"},
		{args: []string{"--wait=soon"}, err: `invalid --wait "soon": --wait takes no value (the duration is --timeout, default 5m)`},
	} {
		var errOut bytes.Buffer
		flags := newFixFlags(configFlagsFor(kubeconfigFor(t, "https://127.0.0.1:1")), genericiooptions.IOStreams{Out: &bytes.Buffer{}, ErrOut: &errOut})
		if err := flags.command().ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		o, err := flags.ToOptions(nil)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case o.fix.Wait != tc.want || errOut.String() != tc.notice:
			t.Errorf("%v: wait %s, stderr %q; want %s, %q", tc.args, o.fix.Wait, errOut.String(), tc.want, tc.notice)
		}
	}
}
