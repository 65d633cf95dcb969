package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestCanaryBadInput: one error line, exit 2, nothing on stdout, before any API call.
func TestCanaryBadInput(t *testing.T) {
	kubeconfig := kubeconfigFor(t, "https://127.0.0.1:1")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"canary", "--steps", "1"}, "error: name the StatefulSet to canary\n"},
		{[]string{"canary", "web"}, "error: --steps is required, e.g. --steps 1,50%\n"},
		{[]string{"canary", "web", "--steps", "2,1"}, "error: step \"1\": steps must increase (1 comes after 2)\n"},
		{[]string{"canary", "web", "--steps", "0%"}, "error: step \"0%\": a percentage must be a whole number from 1% to 100%\n"},
		{[]string{"canary", "web", "--steps", "1", "--image", "web"}, "error: --image \"web\": want CONTAINER=REF\n"},
		{[]string{"canary", "web", "--steps", "1", "--image", "web=a", "--image", "web=b"}, "error: --image names container \"web\" twice\n"},
		{[]string{"canary", "web", "--steps", "1", "--hold", "-1s"}, "error: --hold must not be negative\n"},
		{[]string{"canary", "web", "--steps", "1", "--timeout", "0s"}, "error: --timeout must be positive\n"},
		{[]string{"canary", "web", "db", "--steps", "1"}, ""},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append(c.args, "--kubeconfig", kubeconfig), genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
			if code != ExitError || out.Len() != 0 || strings.Count(errOut.String(), "\n") != 1 || !strings.HasPrefix(errOut.String(), "error: ") {
				t.Fatalf("exit %d, stdout %q, stderr %q: want exit 2 and one error line", code, out.String(), errOut.String())
			}
			if c.want != "" && errOut.String() != c.want {
				t.Errorf("stderr %q, want %q", errOut.String(), c.want)
			}
		})
	}
}
