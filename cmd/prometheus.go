package cmd

import (
	"github.com/spf13/cobra"

	"github.com/stsdiag/stsdiag/internal/connect"
)

// prometheusFlags say which Prometheus an analysis template's metrics are measured in, and how
// to reach it: canary's --analysis and watch's annotated canaries (stsdiag.io/canary-analysis).
type prometheusFlags struct {
	connect.Prometheus
}

func (f *prometheusFlags) AddFlags(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.Address, "prometheus", "", "Prometheus to query instead of each metric's address: an http(s) URL, or service/NAMESPACE/[SCHEME:]NAME[:PORT] through the API server proxy")
	fs.StringVar(&f.TokenFile, "prometheus-token-file", "", "File holding a bearer token for Prometheus (e.g. OpenShift's Thanos querier: oc whoami -t), read again when it changes")
	fs.StringVar(&f.CAFile, "prometheus-ca-file", "", "PEM bundle to trust for Prometheus' certificate instead of the system's")
	fs.BoolVar(&f.Insecure, "prometheus-insecure-skip-tls-verify", false, "Do not verify Prometheus' certificate")
	fs.StringVar(&f.Secret, "prometheus-secret", "", "[NAMESPACE/]NAME of a Secret saying how to reach Prometheus: keys address, token, ca.crt, insecureSkipTLSVerify (\"true\"); the flags above win")
}

// given reports whether any of the flags was given.
func (f *prometheusFlags) given() bool {
	return f.Address != "" || f.TokenFile != "" || f.CAFile != "" || f.Insecure || f.Secret != ""
}
