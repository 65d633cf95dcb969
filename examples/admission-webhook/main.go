// Command admission-webhook is a validating admission webhook that warns — never refuses — when a
// StatefulSet update cannot take effect: a pod of the StatefulSet is stuck at startup and, under
// OrderedReady, the controller waits for it forever instead of replacing it with the new template
// (kubernetes#67250). `kubectl apply` prints the warning, with the delete that lets the update
// roll out. Built on stsdiag's public packages only: the namespace is read with stuck/read and
// diagnosed with stuck.
//
// Register it for UPDATE of apps/v1 statefulsets, failurePolicy Ignore (a warning must never
// block a write), with a ServiceAccount that may list pods, controllerrevisions,
// persistentvolumeclaims, events and services in the namespaces it serves:
//
//	go run ./admission-webhook --tls-cert-file tls.crt --tls-private-key-file tls.key
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/facts"
	"github.com/stsdiag/stsdiag/stuck/read"
)

func main() {
	addr := flag.String("addr", ":8443", "address to serve on")
	cert := flag.String("tls-cert-file", "", "serving certificate")
	key := flag.String("tls-private-key-file", "", "serving key")
	flag.Parse()
	cfg, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/validate", &webhook{clients: read.Clients{Kube: kube}})
	log.Fatal(http.ListenAndServeTLS(*addr, *cert, *key, nil))
}

// webhook answers AdmissionReviews of StatefulSet updates.
type webhook struct{ clients read.Clients }

func (h *webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 3<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 8*time.Second)
	defer cancel()
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, Warnings: h.warnings(ctx, review.Request)}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// warnings are the reasons the update cannot take effect by itself; none when its template did
// not change, or the namespace cannot be read (a warning webhook never fails a write).
func (h *webhook) warnings(ctx context.Context, req *admissionv1.AdmissionRequest) []string {
	if req.Operation != admissionv1.Update || req.Kind.Group != "apps" || req.Kind.Kind != "StatefulSet" {
		return nil
	}
	var before, after appsv1.StatefulSet
	if json.Unmarshal(req.OldObject.Raw, &before) != nil || json.Unmarshal(req.Object.Raw, &after) != nil ||
		equality.Semantic.DeepEqual(before.Spec.Template, after.Spec.Template) {
		return nil
	}
	objs, err := read.List{Clients: h.clients, Scope: read.Scope{Namespace: req.Namespace, Names: []string{req.Name}}}.Objects(ctx)
	if err != nil {
		log.Printf("%s/%s: %v", req.Namespace, req.Name, err)
		return nil
	}
	var out []string
	for _, f := range stuck.Diagnose(objs, stuck.DefaultOptions()).Findings {
		if f.StatefulSet != req.Name || !blocksTheUpdate(f) {
			continue
		}
		out = append(out, fmt.Sprintf("%s is stuck at startup (%s) and the StatefulSet controller waits for it instead of replacing it: "+
			"this update takes effect once it is deleted: %s (kubernetes#67250)", f.Pod, f.Reason, f.Remedy))
	}
	return out
}

// blocksTheUpdate reports whether a finding is a pod stuck at startup that the controller, under
// OrderedReady, waits for forever: the update's rollout stops at it, whatever the new template.
func blocksTheUpdate(f stuck.Finding) bool {
	switch fx := f.Facts.(type) {
	case facts.StaleStuck:
		return fx.Why.Kind == facts.WaitsForReady
	case facts.Failing:
		return fx.Ordered
	}
	return false
}
