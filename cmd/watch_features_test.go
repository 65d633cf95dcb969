package cmd

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientfeatures "k8s.io/client-go/features"
)

type gates map[clientfeatures.Feature]bool

func (g gates) Enabled(f clientfeatures.Feature) bool { return g[f] }

// watch fills its informers by LISTs unless KUBE_FEATURE_WatchListClient says otherwise; other
// gates are client-go's.
func TestListInformers(t *testing.T) {
	g := listInformers{gates{clientfeatures.WatchListClient: true, clientfeatures.InformerResourceVersion: true}}
	if g.Enabled(clientfeatures.WatchListClient) {
		t.Fatal("WatchListClient on without KUBE_FEATURE_WatchListClient")
	}
	if !g.Enabled(clientfeatures.InformerResourceVersion) {
		t.Fatal("another gate changed")
	}
	t.Setenv("KUBE_FEATURE_WatchListClient", "true")
	if !g.Enabled(clientfeatures.WatchListClient) {
		t.Fatal("KUBE_FEATURE_WatchListClient=true ignored")
	}
}

// TestWatchPrometheusFlags: watch's --prometheus flags are canary's, checked before anything
// starts: one error line, exit 2.
func TestWatchPrometheusFlags(t *testing.T) {
	kubeconfig := kubeconfigFor(t, "https://127.0.0.1:1")
	missing := filepath.Join(t.TempDir(), "token")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "--prometheus-token-file", missing}, "error: --prometheus-token-file: open " + missing + ": no such file or directory\n"},
		{[]string{"watch", "--prometheus", "prometheus:9090"}, "error: --prometheus: "},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append(c.args, "--kubeconfig", kubeconfig, "--metrics-addr", "", "--health-addr", ""), genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
			if code != ExitError || out.Len() != 0 || strings.Count(errOut.String(), "\n") != 1 || !strings.HasPrefix(errOut.String(), c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q: want exit 2 and %q", code, out.String(), errOut.String(), c.want)
			}
		})
	}
}
