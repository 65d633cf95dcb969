package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/stsdiag/stsdiag/internal/analysis"
)

// prometheusFlags say which Prometheus an analysis template's metrics are measured in, and how
// to reach it: canary's --analysis and watch's annotated canaries (stsdiag.io/canary-analysis).
type prometheusFlags struct {
	Prometheus, TokenFile, CAFile string
	Insecure                      bool
}

func (f *prometheusFlags) AddFlags(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.Prometheus, "prometheus", "", "Prometheus to query instead of each metric's address: an http(s) URL, or service/NAMESPACE/[SCHEME:]NAME[:PORT] through the API server proxy")
	fs.StringVar(&f.TokenFile, "prometheus-token-file", "", "File holding a bearer token for Prometheus (e.g. OpenShift's Thanos querier: oc whoami -t), read again when it changes")
	fs.StringVar(&f.CAFile, "prometheus-ca-file", "", "PEM bundle to trust for Prometheus' certificate instead of the system's")
	fs.BoolVar(&f.Insecure, "prometheus-insecure-skip-tls-verify", false, "Do not verify Prometheus' certificate")
}

// given reports whether any of the flags was given.
func (f *prometheusFlags) given() bool {
	return f.Prometheus != "" || f.TokenFile != "" || f.CAFile != "" || f.Insecure
}

// ToDialer checks the flags and returns the Dialer of the metrics: --prometheus (a URL, or a
// Service through the API server proxy of the kubeconfig) replacing each metric's address, the
// token file (read now, to refuse one that cannot be, and again at each query), the CA bundle.
func (f *prometheusFlags) ToDialer(configFlags *genericclioptions.ConfigFlags) (*analysis.Dialer, error) {
	d := &analysis.Dialer{CAFile: f.CAFile, InsecureSkipTLSVerify: f.Insecure, BearerTokenFile: f.TokenFile}
	if f.TokenFile != "" {
		if _, err := analysis.ReadToken(f.TokenFile); err != nil {
			return nil, fmt.Errorf("--prometheus-token-file: %w", err)
		}
	}
	if f.Prometheus != "" {
		addr, err := analysis.ParseAddress(f.Prometheus)
		if err != nil {
			return nil, fmt.Errorf("--prometheus: %w", err)
		}
		var config *rest.Config
		if addr.URL == "" {
			if config, err = configFlags.ToRESTConfig(); err != nil {
				return nil, fmt.Errorf("loading kubeconfig: %w", err)
			}
		}
		if d.Override, err = addr.Connection(config); err != nil {
			return nil, fmt.Errorf("--prometheus: %w", err)
		}
	}
	return d, nil
}
