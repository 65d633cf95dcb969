package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	// binDir holds the kubectl-stsdiag built for this run; it goes first on PATH so that
	// `kubectl stsdiag` finds it.
	binDir  string
	logDir  string
	stsdiag string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	binDir, err = os.MkdirTemp("", "stsdiag-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	start := time.Now()
	if stsdiag, err = harness.Build(binDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logDir, _ = filepath.Abs(filepath.Join("_artifacts", "logs"))
	_ = os.RemoveAll(logDir)
	local = cluster.New(logDir)
	testenv = env.NewWithConfig(envconf.New().WithParallelTestEnabled())
	testenv.Setup(
		envfuncs.CreateCluster(local, "stsdiag"),
		func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
			fmt.Fprintf(os.Stderr, "e2e: control plane ready in %s (logs: %s)\n", time.Since(start).Round(100*time.Millisecond), logDir)
			return ctx, nil
		},
	)
	testenv.Finish(envfuncs.DestroyCluster("stsdiag"))
	code := testenv.Run(m)
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: FAILED; control plane component logs are in %s\n", logDir)
	}
	fmt.Fprintf(os.Stderr, "e2e: suite took %s\n", time.Since(start).Round(100*time.Millisecond))
	return code
}
