package e2e

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
)

type result struct {
	stdout, stderr string
	code           int
}

// stsdiagRun runs the built binary as a user would, against the cluster's kubeconfig.
func stsdiagRun(t *testing.T, cfg *envconf.Config, args ...string) result {
	t.Helper()
	return runCmd(t, cfg, stsdiag, args...)
}

// pluginRun runs `kubectl stsdiag ...`, relying on kubectl's plugin discovery through PATH.
func pluginRun(t *testing.T, cfg *envconf.Config, args ...string) result {
	t.Helper()
	return runCmd(t, cfg, "kubectl", append([]string{"stsdiag"}, args...)...)
}

func runCmd(t *testing.T, cfg *envconf.Config, bin string, args ...string) result {
	t.Helper()
	r := harness.Run(t, cfg.KubeconfigFile(), binDir, nil, bin, args...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

func decodeReport(t *testing.T, r result) apiv1.Report {
	t.Helper()
	return harness.DecodeReport(t, r.stdout)
}

func clientset(t *testing.T, cfg *envconf.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// imageStreams installs the ImageStream CRD (if no test did yet) and returns a client for it.
func imageStreams(ctx context.Context, t *testing.T, cfg *envconf.Config) imageclient.Interface {
	t.Helper()
	if err := cluster.InstallImageStreamCRD(ctx, cfg.Client().RESTConfig()); err != nil {
		t.Fatal(err)
	}
	images, err := imageclient.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return images
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

// onTerminal runs the built binary on a pseudo-terminal as a person would, waits for fix's
// confirmation prompt, runs meanwhile (what happens while the person reads the plan), answers
// and returns the whole output and the exit error.
func onTerminal(t *testing.T, cfg *envconf.Config, answer string, meanwhile func(), args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(stsdiag, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cfg.KubeconfigFile(), "NO_COLOR=1")
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer tty.Close()
	var mu sync.Mutex
	var out strings.Builder
	prompted, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		r := bufio.NewReader(tty)
		once := sync.Once{}
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			mu.Lock()
			out.WriteByte(b)
			if strings.Contains(out.String(), "Apply these actions? [y/N]") {
				once.Do(func() { close(prompted) })
			}
			mu.Unlock()
		}
	}()
	select {
	case <-prompted:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("no prompt")
	}
	meanwhile()
	if _, err := io.WriteString(tty, answer); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	select { // the output is read to its end once the process is gone
	case <-drained:
	case <-time.After(5 * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	return out.String(), err
}
