// Package preflight is the preflight use case: before an apply, for every StatefulSet of the
// manifests, whether the rollout the apply starts would finish by itself — judged against the
// cluster it is about to meet with reads and server-side dry runs only (dryRun=All: nothing is
// persisted, no Event is recorded), and HEADs of image manifests in their registries. The
// judgement itself is pure (package predict); this package reads, asks and hands it the answers.
package preflight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/preflight/predict"
	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// FieldManager is the field manager of the dry-run apply, unless Options.FieldManager says
// another.
const FieldManager = "stsdiag-preflight"

// Options are what a preflight runs with.
type Options struct {
	Clients  read.Clients
	Manifest *Manifest
	// FieldManager of the dry-run apply: the one the real apply uses predicts fields it
	// removes (server-side apply drops only what the same manager applied before).
	FieldManager string
	// SkipImages asks no registry (air-gapped runners).
	SkipImages bool
	Registry   Registry
	OpenShift  openshift.Mode
	Diagnosis  stuck.Options
	// Parallel bounds the StatefulSets asked about at once.
	Parallel int
	Now      func() time.Time

	// asked holds the registries' answers by image and pull secrets (head).
	asked *sync.Map
}

// ForbiddenError is a read or dry run the API server refused for lack of permission.
type ForbiddenError struct{ Err error }

func (e *ForbiddenError) Error() string { return e.Err.Error() }
func (e *ForbiddenError) Unwrap() error { return e.Err }

// Run judges every StatefulSet of the manifest.
func Run(ctx context.Context, o Options) (*model.Preflight, error) {
	if o.FieldManager == "" {
		o.FieldManager = FieldManager
	}
	if o.Registry == nil {
		o.Registry = Remote{}
	}
	if o.Parallel <= 0 {
		o.Parallel = 16
	}
	o.asked = &sync.Map{}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	if o.OpenShift == "" {
		o.OpenShift = openshift.ModeAuto
	}
	cluster, warnings, err := readCluster(ctx, o.Clients, o.OpenShift)
	if err != nil {
		return nil, err
	}
	cluster.Now = now()
	pods := &podsOn{c: o.Clients, ctx: ctx}
	cluster.PodsOn = pods.read
	// Each namespace's StatefulSets are asked about as soon as the namespace is read, while the
	// others are still being read.
	sets := make([]*predict.Set, len(o.Manifest.StatefulSets))
	setWarnings := make([][]string, len(sets))
	asks, actx := errgroup.WithContext(ctx)
	asks.SetLimit(o.Parallel)
	trust := cluster.ControllerManager == nil || cluster.ControllerManager.State(cluster.Now) != stuck.LeaseNotRenewed
	namespaces, more, err := o.readNamespaces(actx, cluster.OpenShift, trust, func(ns *predict.Namespace) {
		for i, ms := range o.Manifest.StatefulSets {
			if ms.Typed.Namespace == ns.Name {
				asks.Go(func() error {
					var err error
					sets[i], setWarnings[i], err = o.ask(actx, cluster, ns, ms)
					return err
				})
			}
		}
	})
	if err := asks.Wait(); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	warnings = append(warnings, more...)
	for _, w := range setWarnings {
		warnings = append(warnings, w...)
	}
	res := predict.Judge(cluster, namespaces, sets, predict.Options{Diagnosis: o.Diagnosis})
	warnings = append(warnings, res.Warnings...)
	return &model.Preflight{OpenShift: cluster.OpenShift, StatefulSets: res.Sets, Findings: res.Findings, Warnings: dedupe(warnings),
		Server: &apiv1.ServerInfo{Version: cluster.ServerVersion, Rules: res.Rules.Version, AssumedFeatureGates: res.Rules.Gates}}, nil
}

// readNamespaces reads each namespace of the input once, adds what the manifests add to it and
// hands it to ready.
func (o Options) readNamespaces(ctx context.Context, openShift, trustStatuses bool, ready func(*predict.Namespace)) (map[string]*predict.Namespace, []string, error) {
	sets := map[string][]*appsv1.StatefulSet{}
	for _, s := range o.Manifest.StatefulSets {
		sets[s.Typed.Namespace] = append(sets[s.Typed.Namespace], s.Typed)
	}
	var mu sync.Mutex
	var warnings []string
	seed := func(ns *predict.Namespace) {
		ns.ManifestServices = o.Manifest.Services[ns.Name]
		ns.ManifestQuotas = o.Manifest.Quotas[ns.Name]
		ns.ManifestStreams = o.Manifest.ImageStreams[ns.Name]
	}
	out, more, err := readNamespaces(ctx, o.Clients, sets, openShift, trustStatuses, seed, func(ns *predict.Namespace) {
		name := ns.Name
		if !ns.Exists && slices.Contains(o.Manifest.Namespaces, name) {
			mu.Lock()
			warnings = append(warnings, fmt.Sprintf("namespace %s does not exist yet (the manifests create it): the API server's validation and admission were not asked about its StatefulSets and pods", name))
			mu.Unlock()
		}
		ready(ns)
	})
	return out, append(more, warnings...), err
}

// ask asks the API server about one StatefulSet of the input (a dry-run apply, a dry-run create
// of the first pod of each revision and its claims) and the registries about its images.
func (o Options) ask(ctx context.Context, c predict.Cluster, ns *predict.Namespace, ms ManifestSet) (*predict.Set, []string, error) {
	s := &predict.Set{Source: ms.Source, Manifest: ms.Typed}
	for i := range ns.Objects.StatefulSets {
		if live := &ns.Objects.StatefulSets[i]; live.Name == ms.Typed.Name {
			s.Live = live
		}
	}
	var warnings []string
	applied, template, err := o.applyDryRun(ctx, ns, ms)
	switch {
	case err != nil && !ns.Exists && slices.Contains(o.Manifest.Namespaces, ns.Name):
		// The namespace comes with the manifests: nothing to ask yet; judge the manifest as written.
		applied, template, s.Unasked = ms.Typed.DeepCopy(), nil, true
		if raw, ok, _ := unstructured.NestedFieldNoCopy(ms.Object.Object, "spec", "template"); ok {
			template, _ = json.Marshal(raw)
		}
	case err != nil:
		var refusal *predict.ApplyRefusal
		if refusal, err = applyRefusal(err, ns); err != nil {
			return nil, nil, err
		}
		s.Refused = refusal
		return s, nil, nil
	}
	s.Applied = applied
	revisions := ns.Objects.Revisions
	if s.Revision, err = predict.UpdateRevision(applied, template, revisions); err != nil {
		return nil, nil, fmt.Errorf("StatefulSet %s/%s: %w", ns.Name, ms.Typed.Name, err)
	}
	var currentTemplate *corev1.PodTemplateSpec
	if s.Live != nil && s.Live.Status.CurrentRevision != "" {
		s.Current = s.Live.Status.CurrentRevision
		for i := range revisions {
			if revisions[i].Name == s.Current {
				_, currentTemplate, _ = controller.RevisionTemplate(&revisions[i])
			}
		}
	}
	s.Plan = predict.Plan(applied, s.Current, currentTemplate, s.Revision.Name, ownedPods(s, ns), claimNames(ns))
	if ns.Exists {
		var w []string
		s.Admission, w = o.admission(ctx, ns, s)
		warnings = append(warnings, w...)
	}
	streams := func(namespace, name string) *imagev1.ImageStream { return stream(ns, namespace, name) }
	var labels map[string]string
	if len(ns.Objects.Namespaces) > 0 {
		labels = ns.Objects.Namespaces[0].Labels
	}
	s.Pulls = predict.Pulls(ms.Typed, applied, s.Live, streams, c.OpenShift, labels)
	s.Images = o.images(ctx, ns, s)
	return s, warnings, nil
}

// applyDryRun sends the manifest's StatefulSet as a server-side apply with dryRun=All, and
// returns it as the API server would store it, with its spec.template as JSON.
func (o Options) applyDryRun(ctx context.Context, ns *predict.Namespace, ms ManifestSet) (*appsv1.StatefulSet, []byte, error) {
	if !ns.Exists {
		return nil, nil, apierrors.NewNotFound(corev1.Resource("namespaces"), ns.Name)
	}
	obj := ms.Object.DeepCopy()
	unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(obj.Object, "status")
	got, err := o.Clients.Dynamic.Resource(ms.Mapping).Namespace(ns.Name).Apply(ctx, obj.GetName(), obj,
		metav1.ApplyOptions{FieldManager: o.FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, nil, err
	}
	var set appsv1.StatefulSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, &set); err != nil {
		return nil, nil, fmt.Errorf("the dry-run apply of %s/%s returned: %w", ns.Name, obj.GetName(), err)
	}
	raw, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "template")
	template, err := json.Marshal(raw)
	return &set, template, err
}

// applyRefusal reads the API server's refusal of a dry-run apply. Missing permission is no
// verdict on the manifest: an error.
func applyRefusal(err error, ns *predict.Namespace) (*predict.ApplyRefusal, error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil, fmt.Errorf("cannot reach the API server: %w", err)
	}
	if noPermission(err) {
		return nil, &ForbiddenError{fmt.Errorf("%s (preflight dry-runs the apply: create and patch statefulsets, deploy/preflight-clusterrole.yaml)", text.FirstLine(err))}
	}
	r := &predict.ApplyRefusal{Error: text.FirstLine(err), Reason: predict.ApplyOther}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			r.Causes = append(r.Causes, strings.TrimSpace(c.Field+": "+c.Message))
			if strings.Contains(c.Message, "field is immutable") {
				r.Reason = predict.ApplyImmutable
			}
		}
	}
	refusal := facts.NewRefusal(facts.KindPod, "", "", "", err.Error())
	switch {
	case r.Reason == predict.ApplyImmutable:
	case apierrors.IsNotFound(err) && !ns.Exists:
		r.Reason = predict.ApplyNamespaceMissing
	case refusal.Reason == facts.AdmissionDenied:
		r.Reason, r.Policy, r.PolicyKind, r.Denial = predict.ApplyAdmissionDenied, refusal.Policy, refusal.PolicyKind, refusal.Denial
	case apierrors.IsInvalid(err):
		r.Reason = predict.ApplyInvalid
	}
	return r, nil
}

// noPermission tells the authorizer's refusal from an admission plugin's (both are 403): only
// the authorizer says "cannot <verb> resource" (k8s.io/apiserver
// pkg/endpoints/handlers/responsewriters/errors.go:60-80@v0.37.2).
func noPermission(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot ")
}

// ownedPods are the pods the live StatefulSet owns, by ordinal.
func ownedPods(s *predict.Set, ns *predict.Namespace) map[int]*corev1.Pod {
	out := map[int]*corev1.Pod{}
	if s.Live == nil {
		return out
	}
	for i := range ns.Objects.Pods {
		pod := &ns.Objects.Pods[i]
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != s.Live.UID {
			continue
		}
		if o, ok := controller.ParseOrdinal(s.Live.Name, pod.Name); ok {
			out[o] = pod
		}
	}
	return out
}

// admission dry-runs the first planned pod of each revision, and its new claims, as the
// controller would create them (claims first: createPersistentVolumeClaims before the pod,
// stateful_pod_control.go@v1.37.2). A pod of that name that exists already (a replacement) ends
// in AlreadyExists once admission admitted it: the API server's store refuses the name only after
// the validating admission (registry Store.Create). A missing ServiceAccount that the manifests
// create is asked about again without it (the namespace's default ServiceAccount).
func (o Options) admission(ctx context.Context, ns *predict.Namespace, s *predict.Set) (map[string]*predict.PodAnswer, []string) {
	out := map[string]*predict.PodAnswer{}
	var warnings []string
	for _, p := range s.Plan {
		if out[p.Revision] != nil {
			continue
		}
		a := &predict.PodAnswer{Pod: p.Name}
		out[p.Revision] = a
		for i := range p.Claims {
			got, err := o.Clients.Kube.CoreV1().PersistentVolumeClaims(ns.Name).Create(ctx, &p.Claims[i],
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: o.FieldManager})
			c := predict.ClaimAnswer{Claim: p.Claims[i].Name}
			switch {
			case err == nil:
				c.Admitted = got
			case apierrors.IsAlreadyExists(err):
			case noPermission(err):
				warnings = append(warnings, "claims not asked about: "+text.FirstLine(err))
			default:
				c.Error = err.Error()
			}
			a.Claims = append(a.Claims, c)
		}
		pod := p.Pod.DeepCopy()
		got, err := o.createDryRun(ctx, pod)
		if err != nil && o.serviceAccountComes(ns.Name, pod, err) {
			pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount = "", ""
			got, err = o.createDryRun(ctx, pod)
		}
		switch {
		case err == nil:
			a.Admitted = got
		case apierrors.IsAlreadyExists(err):
		case noPermission(err):
			warnings = append(warnings, "pods not asked about (admission, PodSecurity, SCC, webhooks): "+text.FirstLine(err))
			delete(out, p.Revision)
		default:
			a.Error = err.Error()
		}
	}
	return out, warnings
}

func (o Options) createDryRun(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return o.Clients.Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: o.FieldManager})
}

// serviceAccountComes: admission refuses the pod's ServiceAccount, which the manifests create.
func (o Options) serviceAccountComes(namespace string, pod *corev1.Pod, err error) bool {
	r := facts.NewRefusal(facts.KindPod, pod.Name, pod.Name, "", err.Error())
	return r.Reason == facts.ServiceAccountMissing && slices.Contains(o.Manifest.ServiceAccounts[namespace], r.ServiceAccount)
}

// images asks the registries about the images the new pods of the update revision pull.
func (o Options) images(ctx context.Context, ns *predict.Namespace, s *predict.Set) []predict.Image {
	pulls := false
	for _, p := range s.Plan {
		pulls = pulls || p.Revision == s.Revision.Name
	}
	var secrets []corev1.Secret
	if pulls && !o.SkipImages {
		secrets = o.pullSecrets(ctx, ns, s)
	}
	out := make([]predict.Image, len(s.Pulls))
	var g errgroup.Group
	for i, p := range s.Pulls {
		img := predict.Image{Container: p.Container, Init: p.Init, Image: p.Image, Pulled: p.Written, Check: p.Check, NoStream: p.NoStream}
		if p.Digest != "" && !strings.Contains(img.Pulled, "@") {
			img.Pulled += "@" + p.Digest
		}
		out[i] = img
		if img.Check != "" {
			continue
		}
		if !pulls || o.SkipImages {
			out[i].Check = apiv1.ImageSkipped
			continue
		}
		g.Go(func() error {
			a := o.head(ctx, p.Written, secrets)
			out[i].Check, out[i].Registry, out[i].Pulled, out[i].Answer = a.Check, a.Registry, a.Pulled, a.Answer
			if a.Digest != "" && !strings.Contains(out[i].Pulled, "@") {
				out[i].Pulled += "@" + a.Digest
			}
			out[i].SecretsTried = len(secrets) > 0
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// head asks the registry once per image and set of pull secrets, however many StatefulSets
// use it.
func (o Options) head(ctx context.Context, image string, secrets []corev1.Secret) RegistryAnswer {
	key := image
	for _, s := range secrets {
		key += " " + s.Namespace + "/" + s.Name
	}
	call, _ := o.asked.LoadOrStore(key, &headCall{})
	c := call.(*headCall)
	c.once.Do(func() { c.answer = o.Registry.Head(ctx, image, secrets) })
	return c.answer
}

// headCall is one question to a registry, asked once.
type headCall struct {
	once   sync.Once
	answer RegistryAnswer
}

// pullSecrets are the Secrets the kubelet would pull the pods' images with: the admitted pod's
// imagePullSecrets (the ServiceAccount admission plugin adds the ServiceAccount's to a pod that
// names none), else the template's. A secret that cannot be read is left out.
func (o Options) pullSecrets(ctx context.Context, ns *predict.Namespace, s *predict.Set) []corev1.Secret {
	refs := s.Applied.Spec.Template.Spec.ImagePullSecrets
	if a := s.Admission[s.Revision.Name]; a != nil && a.Admitted != nil {
		refs = a.Admitted.Spec.ImagePullSecrets
	}
	var out []corev1.Secret
	for _, ref := range refs {
		secret, err := o.Clients.Kube.CoreV1().Secrets(ns.Name).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			out = append(out, *secret)
		}
	}
	return out
}

func claimNames(ns *predict.Namespace) map[string]bool {
	out := map[string]bool{}
	for _, c := range ns.Objects.PVCs {
		out[c.Name] = true
	}
	return out
}

func stream(ns *predict.Namespace, namespace, name string) *imagev1.ImageStream {
	if namespace != ns.Name {
		return nil
	}
	for _, list := range [][]imagev1.ImageStream{ns.Objects.ImageStreams, ns.ManifestStreams} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
