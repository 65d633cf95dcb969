// Command imagepolicy-webhook runs OpenShift's ImagePolicy admission plugin
// (github.com/openshift/apiserver-library-go pkg/admission/imagepolicy) as a mutating and validating
// admission webhook, for a vanilla kube-apiserver with openshift-apiserver aggregated.
//
// The plugin is registered, configured and initialised the way OpenShift's kube-apiserver does it
// (openshift/kubernetes openshift-kube-apiserver/openshiftkubeapiserver/patch.go: the imagepolicy
// initializer with KubeImageMutators and the internal registry hostname, admissionrestconfig with a
// loopback REST config, the generic initializer with the external informer factory; no plugin config
// file, so the defaults: resolveImages Attempt and local names for pods, RCs, apps and batch). As in
// kube-apiserver, the request object is converted to its internal version and the plugin's Admit
// (mutating webhook) and Validate (validating webhook) run on it. The run-level namespace skip
// OpenShift wraps the plugin in (admission/namespaceconditions) is expressed by the webhook
// configurations' namespaceSelector, not here.
//
// Built by e2e/openshift-bins.sh in its own module; not part of stsdiag's module.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/openshift/apiserver-library-go/pkg/admission/imagepolicy"
	imagepolicyapi "github.com/openshift/apiserver-library-go/pkg/admission/imagepolicy/apis/imagepolicy/v1"
	"github.com/openshift/apiserver-library-go/pkg/admission/imagepolicy/imagereferencemutators"
	"github.com/openshift/library-go/pkg/apiserver/admission/admissionrestconfig"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster (the plugin's loopback client)")
	bind := flag.String("bind", "127.0.0.1:9443", "address to serve HTTPS on")
	cert := flag.String("tls-cert-file", "", "serving certificate")
	key := flag.String("tls-private-key-file", "", "serving key")
	registry := flag.String("internal-registry-hostname", "image-registry.openshift-image-registry.svc:5000",
		"imagePolicyConfig.internalRegistryHostname")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("error: %v", err)
	}
	// kube-apiserver's loopback client is not limited to client-go's default 5 QPS.
	cfg.QPS, cfg.Burst = 1000, 2000
	kube := kubernetes.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactory(kube, 10*time.Minute)
	stop := make(chan struct{})

	plugins := admission.NewPlugins()
	imagepolicy.Register(plugins)
	inits := admission.PluginInitializers{
		initializer.New(kube, nil, factory, nil, nil, stop, nil),
		imagepolicy.NewInitializer(imagereferencemutators.KubeImageMutators{}, *registry),
		admissionrestconfig.NewInitializer(*cfg),
	}
	plugin, err := plugins.InitPlugin(imagepolicyapi.PluginName, nil, inits)
	if err != nil {
		log.Fatalf("error: %v", err)
	}
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	h := &handler{plugin: plugin}
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, true) })
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, false) })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	log.Printf("imagepolicy webhook serving on %s (registry %s)", *bind, *registry)
	srv := &http.Server{Addr: *bind, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServeTLS(*cert, *key); err != nil {
		log.Fatalf("error: %v", err)
	}
}

type handler struct{ plugin admission.Interface }

func (h *handler) serve(w http.ResponseWriter, r *http.Request, mutate bool) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("bad AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	resp := h.admit(r.Context(), review.Request, mutate)
	resp.UID = review.Request.UID
	review.Response = resp
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

func deny(err error) *admissionv1.AdmissionResponse {
	if s, ok := err.(apierrors.APIStatus); ok {
		st := s.Status()
		return &admissionv1.AdmissionResponse{Result: &st}
	}
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{Status: metav1.StatusFailure, Message: err.Error(), Code: http.StatusInternalServerError}}
}

// internal decodes raw (an external object) and converts it to its internal version.
func internal(raw []byte) (runtime.Object, schema.GroupVersionKind, error) {
	if len(raw) == 0 {
		return nil, schema.GroupVersionKind{}, nil
	}
	ext, gvk, err := legacyscheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	in, err := legacyscheme.Scheme.ConvertToVersion(ext, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
	return in, *gvk, err
}

// external converts an internal object back to gv and encodes it as JSON.
func external(obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	ext, err := legacyscheme.Scheme.ConvertToVersion(obj, gv)
	if err != nil {
		return nil, err
	}
	return json.Marshal(ext)
}

func (h *handler) admit(ctx context.Context, req *admissionv1.AdmissionRequest, mutate bool) *admissionv1.AdmissionResponse {
	op := admission.Operation(req.Operation)
	if !h.plugin.Handles(op) {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	obj, gvk, err := internal(req.Object.Raw)
	if err != nil {
		return deny(err)
	}
	old, _, err := internal(req.OldObject.Raw)
	if err != nil {
		return deny(err)
	}
	var before []byte
	if mutate {
		if before, err = external(obj.DeepCopyObject(), gvk.GroupVersion()); err != nil {
			return deny(err)
		}
	}
	dryRun := req.DryRun != nil && *req.DryRun
	extra := map[string][]string{}
	for k, v := range req.UserInfo.Extra {
		extra[k] = v
	}
	attrs := admission.NewAttributesRecord(obj, old, gvk, req.Namespace, req.Name,
		schema.GroupVersionResource(req.Resource), req.SubResource, op, nil, dryRun,
		&user.DefaultInfo{Name: req.UserInfo.Username, UID: req.UserInfo.UID, Groups: req.UserInfo.Groups, Extra: extra})
	if !mutate {
		if v, ok := h.plugin.(admission.ValidationInterface); ok {
			if err := v.Validate(ctx, attrs, nil); err != nil {
				return deny(err)
			}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	if m, ok := h.plugin.(admission.MutationInterface); ok {
		if err := m.Admit(ctx, attrs, nil); err != nil {
			return deny(err)
		}
	}
	after, err := external(obj, gvk.GroupVersion())
	if err != nil {
		return deny(err)
	}
	ops, err := jsonpatch.CreatePatch(before, after)
	if err != nil {
		return deny(err)
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true}
	if len(ops) > 0 {
		patch, _ := json.Marshal(ops)
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
		fmt.Fprintf(os.Stderr, "%s %s %s/%s: %s\n", req.Operation, req.Resource.Resource, req.Namespace, req.Name, patch)
	}
	return resp
}
