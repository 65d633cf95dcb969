// Package node is the real-node e2e suite (make e2e-node): the control plane of e2e/internal/cluster
// with a real node instead of kwok — Debian's containerd, runc and CNI plugins and the kubelet of
// the control plane's release, pulling images the suite builds from a registry in this process.
// Each scenario proves its premise on what the real kubelet did (its reasons and messages, as
// literals), then asserts stsdiag's verdict through the built binary, then repairs it with fix.
// kwok's suite (package e2e) stays for scale and for the fast scenarios.
package node

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"

	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
)

var (
	testenv env.Environment
	local   *cluster.Cluster
	binDir  string
	stsdiag string
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e-node: error: a real node needs root (containerd, mounts, cgroups, a bridge)")
		return 1
	}
	var err error
	if binDir, err = os.MkdirTemp("", "stsdiag-e2e-node-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	start := time.Now()
	if stsdiag, err = harness.Build(binDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logDir, _ := filepath.Abs(filepath.Join("..", "_artifacts", "node-logs"))
	_ = os.RemoveAll(logDir)
	local = cluster.New(logDir)
	local.RealNode = true
	testenv = env.NewWithConfig(envconf.New().WithParallelTestEnabled())
	testenv.Setup(
		envfuncs.CreateCluster(local, "stsdiag-node"),
		func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
			fmt.Fprintf(os.Stderr, "e2e-node: control plane and node %s Ready in %s (registry %s, logs: %s)\n",
				cluster.RealNodeName, time.Since(start).Round(100*time.Millisecond), local.Registry(), logDir)
			return ctx, nil
		},
	)
	var once sync.Once
	teardown := func(ctx context.Context) (err error) {
		once.Do(func() {
			t0 := time.Now()
			err = local.Destroy(ctx)
			fmt.Fprintf(os.Stderr, "e2e-node: teardown in %s\n", time.Since(t0).Round(100*time.Millisecond))
		})
		return err
	}
	testenv.Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, teardown(ctx)
	})
	// Interrupted (Ctrl-C, or CI ending the run), the node is still taken down: its containers,
	// mounts, bridge and sysctls outlive this process otherwise.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "e2e-node: %s: tearing the node down\n", s)
		_ = teardown(context.Background())
		os.Exit(130)
	}()
	code := testenv.Run(m)
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e-node: FAILED; component logs (kubelet, containerd, registry) are in %s\n", logDir)
	}
	fmt.Fprintf(os.Stderr, "e2e-node: suite took %s\n", time.Since(start).Round(100*time.Millisecond))
	return code
}
