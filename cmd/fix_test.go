package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/creack/pty"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestConfirmOnTerminal(t *testing.T) {
	for answer, want := range map[string]bool{"y\n": true, "yes\n": true, "n\n": false, "\n": false} {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminal here: %v", err)
		}
		var out bytes.Buffer
		o := &FixOptions{IOStreams: genericiooptions.IOStreams{In: tty, Out: &out}}
		if _, err := ptmx.Write([]byte(answer)); err != nil {
			t.Fatal(err)
		}
		got, err := o.askOnTerminal()
		ptmx.Close()
		tty.Close()
		if err != nil || got != want || !strings.Contains(out.String(), "Apply these actions? [y/N]") {
			t.Errorf("answer %q: confirmed %v (%v), want %v; prompt %q", answer, got, err, want, out.String())
		}
	}
}

func TestNoTerminalRefuses(t *testing.T) {
	o := &FixOptions{IOStreams: genericiooptions.IOStreams{In: strings.NewReader("y\n"), Out: &bytes.Buffer{}}}
	if ok, err := o.askOnTerminal(); ok || err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("without a terminal fix must refuse and point to --yes: %v %v", ok, err)
	}
}
