// Package openshift is the e2e suite on OpenShift's own image API and ImagePolicy admission:
// openshift-apiserver aggregated for image.openshift.io/v1 into the local v1.37 control plane, and
// OpenShift's ImagePolicy plugin running as an admission webhook (e2e/internal/cluster/openshiftapi.go,
// built by e2e/openshift-bins.sh). Every premise is what the real API and admission did; kwok still
// plays the node. `make e2e-openshift` runs it.
package openshift

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
)

// What every test of the package uses (set up once by TestMain).
var (
	// kubeconfig is the admin kubeconfig; cs, images and restConfig are clients of it.
	kubeconfig string
	restConfig *rest.Config
	cs         kubernetes.Interface
	images     imageclient.Interface
	// binDir holds the built kubectl-stsdiag (stsdiag); it goes first on PATH.
	binDir, stsdiag string
	logDir          string
	osEnv           *cluster.OpenShift
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	// The tests wait on the API and the controller, not the CPU: run them all at once unless
	// -parallel says otherwise (its default is GOMAXPROCS, 2 here).
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "32")
	}
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "e2e-openshift:", err)
		return 1
	}
	apiServer, webhook, err := cluster.OpenShiftBins("../openshift-bins.sh")
	if err != nil {
		return fail(err)
	}
	if binDir, err = os.MkdirTemp("", "stsdiag-e2e-openshift-bin-"); err != nil {
		return fail(err)
	}
	defer os.RemoveAll(binDir)
	if stsdiag, err = buildStsdiag(binDir); err != nil {
		return fail(err)
	}
	logDir, _ = filepath.Abs(filepath.Join("_artifacts", "logs"))
	_ = os.RemoveAll(logDir)
	local := cluster.New(logDir)
	osEnv = cluster.EnableOpenShift(local, apiServer, webhook)
	ctx := context.Background()
	up := time.Now()
	if kubeconfig, err = local.Create(ctx); err != nil {
		return fail(err)
	}
	defer func() { _ = local.Destroy(context.Background()) }()
	if err := local.WaitForControlPlane(ctx, nil); err != nil {
		return fail(err)
	}
	if restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return fail(err)
	}
	restConfig.QPS, restConfig.Burst = 200, 400
	cs = kubernetes.NewForConfigOrDie(restConfig)
	images = imageclient.NewForConfigOrDie(restConfig)
	fmt.Fprintf(os.Stderr, "e2e-openshift: control plane + openshift-apiserver + ImagePolicy webhook ready in %s "+
		"(openshift-apiserver start to APIService Available %s, to the first admission rewrite %s; logs: %s)\n",
		time.Since(up).Round(100*time.Millisecond), osEnv.Available.Round(100*time.Millisecond), osEnv.Ready.Round(100*time.Millisecond), logDir)
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e-openshift: FAILED; component logs are in %s\n", logDir)
	}
	fmt.Fprintf(os.Stderr, "e2e-openshift: suite took %s\n", time.Since(start).Round(100*time.Millisecond))
	return code
}
