package cluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// OpenShift is OpenShift's image API and ImagePolicy admission on this cluster: openshift-apiserver aggregated
// for image.openshift.io/v1 (real ImageStream, ImageStreamTag, ImageStreamMapping and Image storage
// in the cluster's etcd) and OpenShift's ImagePolicy plugin run by a webhook
// (e2e/openshift-src/webhook), both built by e2e/openshift-bins.sh. See docs/e2e-openshift.md.
type OpenShift struct {
	// APIServerBin and WebhookBin are the binaries e2e/openshift-bins.sh printed.
	APIServerBin, WebhookBin string
	// Available is how long it took from the start of openshift-apiserver to APIService
	// v1.image.openshift.io Available; Ready to the first rewrite by the webhook.
	Available, Ready time.Duration

	c                    *Cluster
	dir                  string
	apiPort, webhookPort int
	caPEM                []byte
	etcdURL              string
	registryHostname     string
	startedAt            time.Time
}

// InternalRegistry is the internalRegistryHostname openshift-apiserver and the plugin are given
// (OpenShift 4's image registry service), so status.dockerImageRepository is <it>/<ns>/<name>.
const InternalRegistry = "image-registry.openshift-image-registry.svc:5000"

// OpenShiftNamespace holds the ExternalName Service of the APIService and the readiness probe's stream.
const OpenShiftNamespace = "openshift-apiserver"

// ImagePolicyWebhook is the name of both webhook configurations.
const ImagePolicyWebhook = "imagepolicy.image.openshift.io"

// runLevelOneNamespaces are skipped by the ImagePolicy plugin on OpenShift: it is in
// SkipRunLevelOnePlugins (openshift/kubernetes openshift-kube-apiserver/admission/admissionenablement/
// admission_config.go), decorated by namespaceconditions (decorator.go: these names, and the label
// selector "openshift.io/run-level notin (0,1)" of labelcondition.go). The webhook configurations'
// namespaceSelector says the same.
var runLevelOneNamespaces = []string{"default", "kube-system", "kube-public", "openshift-node", "openshift-infra", "openshift"}

// EnableOpenShift makes c start openshift-apiserver and the ImagePolicy webhook after its control
// plane (kube-apiserver gets the aggregation layer's flags).
func EnableOpenShift(c *Cluster, apiServerBin, webhookBin string) *OpenShift {
	o := &OpenShift{APIServerBin: apiServerBin, WebhookBin: webhookBin, c: c, registryHostname: InternalRegistry}
	c.APIServerArgs = o.apiServerArgs
	c.PostStart = o.start
	return o
}

// apiServerArgs writes the certificates and returns kube-apiserver's aggregation flags.
func (o *OpenShift) apiServerArgs(workDir, etcdURL string) ([]string, error) {
	o.dir, o.etcdURL = filepath.Join(workDir, "openshift"), etcdURL
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	o.apiPort, o.webhookPort = ports[0], ports[1]
	ca, err := newCA("stsdiag-e2e-ca")
	if err != nil {
		return nil, err
	}
	frontProxyCA, err := newCA("stsdiag-e2e-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	o.caPEM = ca.certPEM
	files := map[string][]byte{"ca.crt": ca.certPEM, "front-proxy-ca.crt": frontProxyCA.certPEM}
	issue := func(name string, ca *authority, cn string, client bool, sans ...string) error {
		certPEM, keyPEM, err := ca.issue(cn, client, sans)
		if err != nil {
			return err
		}
		files[name+".crt"], files[name+".key"] = certPEM, keyPEM
		return nil
	}
	if err := issue("front-proxy-client", frontProxyCA, "front-proxy-client", true); err != nil {
		return nil, err
	}
	if err := issue("openshift-apiserver", ca, "api."+OpenShiftNamespace+".svc", false,
		"localhost", "127.0.0.1", "api."+OpenShiftNamespace+".svc", "api."+OpenShiftNamespace+".svc.cluster.local"); err != nil {
		return nil, err
	}
	if err := issue("webhook", ca, "imagepolicy-webhook", false, "localhost", "127.0.0.1"); err != nil {
		return nil, err
	}
	if err := issue("etcd-client", ca, "openshift-apiserver", true); err != nil {
		return nil, err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(o.dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	p := func(name string) string { return filepath.Join(o.dir, name) }
	return []string{
		"--client-ca-file=" + p("ca.crt"),
		"--requestheader-client-ca-file=" + p("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p("front-proxy-client.crt"),
		"--proxy-client-key-file=" + p("front-proxy-client.key"),
	}, nil
}

// openShiftAPIServerConfig is the OpenShiftAPIServerConfig (openshiftcontrolplane.config.openshift.io/v1).
func (o *OpenShift) openShiftAPIServerConfig() ([]byte, error) {
	p := func(name string) string { return filepath.Join(o.dir, name) }
	cfg := map[string]any{
		"apiVersion": "openshiftcontrolplane.config.openshift.io/v1",
		"kind":       "OpenShiftAPIServerConfig",
		"servingInfo": map[string]any{
			"bindAddress": fmt.Sprintf("127.0.0.1:%d", o.apiPort), "bindNetwork": "tcp4",
			"certFile": p("openshift-apiserver.crt"), "keyFile": p("openshift-apiserver.key"),
		},
		// The same etcd as kube-apiserver (plain HTTP), under its own prefix; the TLS files must
		// load even so (the defaults under /var/run/secrets do not exist here).
		"storageConfig": map[string]any{
			"urls": []string{o.etcdURL}, "storagePrefix": "openshift.io",
			"ca": p("ca.crt"), "certFile": p("etcd-client.crt"), "keyFile": p("etcd-client.key"),
		},
		"kubeClientConfig":  map[string]any{"kubeConfig": o.c.kubeconfig},
		"imagePolicyConfig": map[string]any{"internalRegistryHostname": o.registryHostname},
		// Its informer waits for the ClusterResourceQuota CRD, which this cluster does not serve.
		"admission": map[string]any{"disabledPlugins": []string{"quota.openshift.io/ClusterResourceQuota"}},
	}
	return yaml.Marshal(cfg)
}

// start runs after the control plane: openshift-apiserver, its APIService, the webhook and its
// configurations; it returns once a dry-run create is rewritten by the plugin.
func (o *OpenShift) start(ctx context.Context) error {
	o.startedAt = time.Now()
	cfg, err := o.openShiftAPIServerConfig()
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(o.dir, "openshift-apiserver.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return err
	}
	if err := o.c.start("openshift-apiserver", o.APIServerBin, "start", "--config="+cfgPath,
		"--authentication-kubeconfig="+o.c.kubeconfig, "--authorization-kubeconfig="+o.c.kubeconfig, "-v=1"); err != nil {
		return err
	}
	if err := o.c.waitHTTPS(ctx, "openshift-apiserver", fmt.Sprintf("https://127.0.0.1:%d/healthz", o.apiPort), o.caPEM, 90*time.Second); err != nil {
		return err
	}
	if err := o.register(ctx); err != nil {
		return err
	}
	o.Available = time.Since(o.startedAt)
	if err := o.c.start("imagepolicy-webhook", o.WebhookBin, "--kubeconfig="+o.c.kubeconfig,
		fmt.Sprintf("--bind=127.0.0.1:%d", o.webhookPort), "--tls-cert-file="+filepath.Join(o.dir, "webhook.crt"),
		"--tls-private-key-file="+filepath.Join(o.dir, "webhook.key"), "--internal-registry-hostname="+o.registryHostname); err != nil {
		return err
	}
	if err := o.c.waitHTTPS(ctx, "imagepolicy-webhook", fmt.Sprintf("https://127.0.0.1:%d/healthz", o.webhookPort), o.caPEM, 60*time.Second); err != nil {
		return err
	}
	if err := o.webhookConfigurations(ctx); err != nil {
		return err
	}
	if err := o.waitRewrite(ctx); err != nil {
		return err
	}
	o.Ready = time.Since(o.startedAt)
	return nil
}

var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// register points APIService v1.image.openshift.io at openshift-apiserver through an ExternalName
// Service (Endpoints may not hold a loopback address) and waits until it is Available.
func (o *OpenShift) register(ctx context.Context) error {
	cs, err := o.c.Clientset()
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OpenShiftNamespace}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: OpenShiftNamespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "https", Port: int32(o.apiPort), TargetPort: intstr.FromInt(o.apiPort)}}},
	}
	if _, err := cs.CoreV1().Services(OpenShiftNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	dyn, err := dynamic.NewForConfig(o.c.KubernetesRestConfig())
	if err != nil {
		return err
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.image.openshift.io"},
		"spec": map[string]any{
			"group": "image.openshift.io", "version": "v1",
			"service":  map[string]any{"namespace": OpenShiftNamespace, "name": "api", "port": int64(o.apiPort)},
			"caBundle": base64.StdEncoding.EncodeToString(o.caPEM), "groupPriorityMinimum": int64(9900), "versionPriority": int64(15),
		},
	}}
	if _, err := dyn.Resource(apiServiceResource).Create(ctx, apiService, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return o.c.waitFor(ctx, "APIService v1.image.openshift.io Available", 90*time.Second, func() (bool, error) {
		got, err := dyn.Resource(apiServiceResource).Get(ctx, "v1.image.openshift.io", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Available" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

// webhookConfigurations registers the webhook for CREATE and UPDATE of pods and of every workload
// kind the plugin's default rules cover, failurePolicy Fail as the in-process plugin cannot be
// skipped, and the run-level namespace skip as a namespaceSelector.
func (o *OpenShift) webhookConfigurations(ctx context.Context) error {
	cs, err := o.c.Clientset()
	if err != nil {
		return err
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "replicationcontrollers"}},
	}, {
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments", "daemonsets", "statefulsets", "replicasets"}},
	}, {
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs", "cronjobs"}},
	}}
	fail, none, equivalent := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Equivalent
	timeout := int32(30)
	selector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "openshift.io/run-level", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"0", "1"}},
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: runLevelOneNamespaces},
	}}
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		url := fmt.Sprintf("https://127.0.0.1:%d%s", o.webhookPort, path)
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: o.caPEM}
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ImagePolicyWebhook},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: ImagePolicyWebhook, ClientConfig: client("/mutate"), Rules: rules, FailurePolicy: &fail,
			MatchPolicy: &equivalent, NamespaceSelector: selector, SideEffects: &none, TimeoutSeconds: &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ImagePolicyWebhook},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: ImagePolicyWebhook, ClientConfig: client("/validate"), Rules: rules, FailurePolicy: &fail,
			MatchPolicy: &equivalent, NamespaceSelector: selector, SideEffects: &none, TimeoutSeconds: &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// waitRewrite waits until the whole chain works: a lookup-local stream "probe" without tags in
// OpenShiftNamespace, and a dry-run StatefulSet of image probe:ready rewritten to
// <registry>/<ns>/probe:ready (the tag form: the tag has no image).
func (o *OpenShift) waitRewrite(ctx context.Context) error {
	cs, err := o.c.Clientset()
	if err != nil {
		return err
	}
	images, err := imageclient.NewForConfig(o.c.KubernetesRestConfig())
	if err != nil {
		return err
	}
	stream := &imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: OpenShiftNamespace},
		Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true}}}
	if _, err := images.ImageV1().ImageStreams(OpenShiftNamespace).Create(ctx, stream, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ImageStream %s/probe: %w", OpenShiftNamespace, err)
	}
	want := o.registryHostname + "/" + OpenShiftNamespace + "/probe:ready"
	// A StatefulSet, not a pod: a pod needs the namespace's default ServiceAccount, which the
	// controller manager may not have created yet.
	labels := map[string]string{"app": "probe"}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: OpenShiftNamespace},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "probe:ready"}}}}}}
	var last string
	err = o.c.waitFor(ctx, "the ImagePolicy webhook to rewrite probe:ready to "+want, 60*time.Second, func() (bool, error) {
		got, err := cs.AppsV1().StatefulSets(OpenShiftNamespace).Create(ctx, set, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = got.Spec.Template.Spec.Containers[0].Image
		return last == want, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %s)", err, last)
	}
	return nil
}

// waitHTTPS polls url, trusting caPEM, until it answers 200.
func (c *Cluster) waitHTTPS(ctx context.Context, name, url string, caPEM []byte, timeout time.Duration) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("bad CA PEM")
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return c.waitFor(ctx, name+" "+url, timeout, func() (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// authority is a throw-away certificate authority.
type authority struct {
	cert    *x509.Certificate
	key     *rsa.PrivateKey
	certPEM []byte
}

func newCA(cn string) (*authority, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// issue signs a serving (or, if client, a client) certificate for cn with the SANs (IPs or names).
func (a *authority) issue(cn string, client bool, sans []string) (certPEM, keyPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, s := range sans {
		if ip := net.ParseIP(s); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, s)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), nil
}

// OpenShiftBins runs script, e2e/openshift-bins.sh (milliseconds with a warm cache; a cold build
// takes minutes), and returns the openshift-apiserver and webhook binaries it printed.
func OpenShiftBins(script string) (apiServer, webhook string, err error) {
	out, err := runScript(script)
	if err != nil {
		return "", "", err
	}
	vars := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	if vars["OSAPI_BIN"] == "" || vars["WEBHOOK_BIN"] == "" {
		return "", "", fmt.Errorf("%s printed no OSAPI_BIN/WEBHOOK_BIN:\n%s", script, out)
	}
	return filepath.Join(vars["OSAPI_BIN"], "openshift-apiserver"), filepath.Join(vars["WEBHOOK_BIN"], "imagepolicy-webhook"), nil
}

// runScript runs a build script, its progress on stderr, and returns its stdout.
func runScript(script string) (string, error) {
	cmd := exec.Command(script)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", script, err)
	}
	return string(out), nil
}
