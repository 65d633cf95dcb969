// Command helm-upgrade upgrades a Helm release with Helm 4's SDK and waits with its kstatus
// watcher, stsdiag's StatefulSet status reader in front of kstatus's own (stuck/kstatus): an
// upgrade whose StatefulSet rollout cannot finish — kubernetes#67250, an image that does not
// exist, a pod the controller cannot create — fails naming the pod, instead of waiting out the
// timeout.
//
//	go run ./helm-upgrade -n shop --release web --chart ./web --set image=registry.example/web:1.2
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	stsdiagkstatus "github.com/stsdiag/stsdiag/stuck/kstatus"
)

func main() {
	flags := genericclioptions.NewConfigFlags(true)
	fs := pflag.NewFlagSet("helm-upgrade", pflag.ExitOnError)
	flags.AddFlags(fs)
	release := fs.String("release", "", "release name")
	chartDir := fs.String("chart", "", "chart directory")
	set := fs.String("set", "", "values, key=value,key=value")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the release's resources")
	_ = fs.Parse(os.Args[1:])
	if *release == "" || *chartDir == "" {
		fmt.Fprintln(os.Stderr, "error: --release and --chart are required")
		os.Exit(2)
	}
	if err := upgrade(context.Background(), flags, *release, *chartDir, *set, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Println("upgraded; every resource is Current")
}

// upgrade upgrades the release and waits, stsdiag's reader judging its StatefulSets.
func upgrade(ctx context.Context, flags *genericclioptions.ConfigFlags, release, chartDir, set string, timeout time.Duration) error {
	ns := "default"
	if flags.Namespace != nil && *flags.Namespace != "" {
		ns = *flags.Namespace
	}
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, ns, "secret"); err != nil {
		return err
	}
	mapper, err := flags.ToRESTMapper()
	if err != nil {
		return err
	}
	chart, err := loader.LoadDir(chartDir)
	if err != nil {
		return err
	}
	values := map[string]any{}
	if strings.TrimSpace(set) != "" {
		if err := strvals.ParseInto(set, values); err != nil {
			return fmt.Errorf("--set: %w", err)
		}
	}
	u := action.NewUpgrade(cfg)
	u.Namespace, u.Timeout = ns, timeout
	u.WaitStrategy = kube.StatusWatcherStrategy
	u.WaitOptions = []kube.WaitOption{kube.WithKStatusReaders(stsdiagkstatus.NewStatusReader(mapper))}
	_, err = u.RunWithContext(ctx, release, chart, values)
	return err
}
