package connect

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stsdiag/stsdiag/internal/analysis"
)

// Prometheus says which Prometheus an analysis template's metrics are measured in, and how to
// reach it (--prometheus, --prometheus-token-file, --prometheus-ca-file,
// --prometheus-insecure-skip-tls-verify, --prometheus-secret).
type Prometheus struct {
	Address, TokenFile, CAFile, Secret string
	Insecure                           bool
}

// Dialer checks the flags and returns the Dialer of the metrics: --prometheus (a URL, or a
// Service through the API server proxy of the kubeconfig) replacing each metric's address, the
// token file (read now, to refuse one that cannot be, and again at each query), the CA bundle.
func (f Prometheus) Dialer(configFlags *genericclioptions.ConfigFlags) (*analysis.Dialer, error) {
	d := &analysis.Dialer{CAFile: f.CAFile, InsecureSkipTLSVerify: f.Insecure, BearerTokenFile: f.TokenFile}
	if f.TokenFile != "" {
		if _, err := analysis.ReadToken(f.TokenFile); err != nil {
			return nil, fmt.Errorf("--prometheus-token-file: %w", err)
		}
	}
	address := f.Address
	if f.Secret != "" {
		s, err := prometheusSecret(configFlags, f.Secret)
		if err != nil {
			return nil, err
		}
		if address == "" {
			address = string(s.Data["address"])
		}
		if d.BearerTokenFile == "" {
			d.BearerToken = strings.TrimSpace(string(s.Data["token"]))
		}
		if d.CAFile == "" {
			d.CAData = s.Data["ca.crt"]
		}
		d.InsecureSkipTLSVerify = d.InsecureSkipTLSVerify || string(s.Data["insecureSkipTLSVerify"]) == "true"
	}
	if address != "" {
		addr, err := analysis.ParseAddress(address)
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

// prometheusSecret reads --prometheus-secret ([NAMESPACE/]NAME; the kubeconfig's namespace by
// default) with one GET.
func prometheusSecret(configFlags *genericclioptions.ConfigFlags, ref string) (*corev1.Secret, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok {
		name = ns
		var err error
		if ns, _, err = configFlags.ToRawKubeConfigLoader().Namespace(); err != nil {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--prometheus-secret %q: want [NAMESPACE/]NAME", ref)
	}
	config, err := configFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultRequestTimeout)
	defer cancel()
	s, err := kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("--prometheus-secret %s/%s: %w", ns, name, err)
	}
	if len(s.Data["address"]) == 0 && len(s.Data["token"]) == 0 && len(s.Data["ca.crt"]) == 0 {
		return nil, fmt.Errorf("--prometheus-secret %s/%s: no key address, token or ca.crt", ns, name)
	}
	return s, nil
}
