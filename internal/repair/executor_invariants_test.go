package repair_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/stuck"
)

// The executor is tested the way upstream tests the StatefulSet controller
// (k8s.io/kubernetes pkg/controller/statefulset/stateful_set_control_test.go@v1.37.2: every
// scenario under every policy against a fake object manager, an invariant check after every
// write): plan → apply for every scenario of testdata/stuck and testdata/resolver × dry run
// (none, client, server) × disruption (delete; evict, under a budget that refuses Running pods)
// × pod management policy (OrderedReady, Parallel) × planner policy, against a fake clientset
// whose writes a small model of the API server answers (apiModel), the proofs read from it.

var (
	dryRuns         = []apiv1.DryRunMode{apiv1.DryRunNone, apiv1.DryRunClient, apiv1.DryRunServer}
	disruptions     = []apiv1.DisruptionMode{apiv1.DisruptionDelete, apiv1.DisruptionEvict}
	podManagements  = []appsv1.PodManagementPolicyType{appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement}
	gvrPods         = corev1.SchemeGroupVersion.WithResource("pods")
	gvrStatefulSets = appsv1.SchemeGroupVersion.WithResource("statefulsets")
	gvrRevisions    = appsv1.SchemeGroupVersion.WithResource("controllerrevisions")
)

// apiModel answers the executor's writes as the API server would, and checks the invariants on
// each write as it arrives. A write that changes the cluster is recorded; a proof records after
// how many writes it read.
type apiModel struct {
	kube   *fake.Clientset
	dryRun apiv1.DryRunMode
	// budgets are the PodDisruptionBudgets the Eviction API consults.
	budgets []policyv1.PodDisruptionBudget
	// writes are the writes that changed the cluster, in order.
	writes []modelWrite
	// proof is the last proof: after how many writes it read, what it was told of, and the
	// deletes its fresh plan proves (kind/namespace/pod/uid).
	proof *proofRecord
	// refused are the pods an eviction of was refused by a budget (namespace/pod).
	refused map[string]bool
	rv      int
	bad     []string
	seen    map[string]int // what the sweep reached, for the coverage check
}

type modelWrite struct{ what, namespace, name string }

type proofRecord struct {
	afterWrites int
	told        []repair.Write
	proves      map[string]bool
}

func (m *apiModel) violate(format string, args ...any) {
	m.bad = append(m.bad, fmt.Sprintf(format, args...))
}

func (m *apiModel) nextRV() string {
	m.rv++
	return strconv.Itoa(1000 + m.rv)
}

// react is the first reactor of the fake: reads go on to the tracker, the three writes the
// executor may send are answered here, and any other write is a violation.
func (m *apiModel) react(a k8stesting.Action) (bool, runtime.Object, error) {
	verb, resource, sub := a.GetVerb(), a.GetResource().Resource, a.GetSubresource()
	switch {
	case verb == "get" || verb == "list" || verb == "watch":
		return false, nil, nil
	case m.dryRun == apiv1.DryRunClient:
		m.violate("client dry run sent %s %s/%s", verb, resource, sub)
		return true, nil, apierrors.NewBadRequest("client dry run")
	case verb == "patch" && resource == "statefulsets" && sub == "":
		return m.patch(a.(k8stesting.PatchActionImpl))
	case verb == "delete" && resource == "pods" && sub == "":
		d := a.(k8stesting.DeleteActionImpl)
		force := d.DeleteOptions.GracePeriodSeconds != nil && *d.DeleteOptions.GracePeriodSeconds == 0
		kind := apiv1.DeletePod
		if force {
			kind = apiv1.ForceDeletePod
		}
		return m.remove(kind, "delete", d.Namespace, d.Name, &d.DeleteOptions)
	case verb == "create" && resource == "pods" && sub == "eviction":
		e := a.(k8stesting.CreateActionImpl).Object.(*policyv1.Eviction)
		if e.DeleteOptions == nil {
			e.DeleteOptions = &metav1.DeleteOptions{}
		}
		return m.remove(apiv1.DeletePod, "evict", e.Namespace, e.Name, e.DeleteOptions)
	}
	// Never a PersistentVolumeClaim or StatefulSet delete, a scale, an update, a create.
	m.violate("unsafe request: %s %s/%s %s", verb, resource, sub, a.GetNamespace())
	return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", fmt.Errorf("not allowed by the model"))
}

func (m *apiModel) dryRunAll(opts []string, what string) bool {
	all := slices.Equal(opts, []string{metav1.DryRunAll})
	if m.dryRun == apiv1.DryRunServer && !all {
		m.violate("server dry run sent %s without dryRun=All (%v)", what, opts)
	}
	if m.dryRun == apiv1.DryRunNone && len(opts) > 0 {
		m.violate("%s sent with dryRun %v outside a dry run", what, opts)
	}
	return all
}

// remove is a delete or an eviction of a pod: checked (proof, precondition), then answered as
// EvictionREST.Create or the pod registry's delete would (k8s.io/kubernetes
// pkg/registry/core/pod/storage/eviction.go@v1.37.2: 404, 409 on the UID precondition, 429 with
// a DisruptionBudget cause when the budget refuses, else the pod is deleted).
func (m *apiModel) remove(kind apiv1.ActionKind, verb, namespace, name string, opts *metav1.DeleteOptions) (bool, runtime.Object, error) {
	what := fmt.Sprintf("%s pod %s/%s", verb, namespace, name)
	dryRun := m.dryRunAll(opts.DryRun, what)
	var uid string
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID == "" {
		m.violate("%s without a UID precondition", what)
	} else {
		uid = string(*opts.Preconditions.UID)
	}
	switch p := m.proof; {
	case p == nil:
		m.violate("%s never proven", what)
	case p.afterWrites != len(m.writes):
		m.violate("%s proven on data read before the last write (%s)", what, m.writes[len(m.writes)-1].what)
	case !told(p.told, m.writes):
		m.violate("%s proven by a prover told of %+v, not of the writes made: %+v", what, p.told, m.writes)
	case !p.proves[string(kind)+"/"+namespace+"/"+name+"/"+uid]:
		m.violate("%s (UID %s): the last proof does not prove it stuck", what, uid)
	case len(m.writes) > 0:
		m.seen["proven after a write"]++
	}
	if m.refused[namespace+"/"+name] {
		m.violate("%s after an eviction of it was refused by its budget", what)
	}
	obj, err := m.kube.Tracker().Get(gvrPods, namespace, name)
	if err != nil {
		return true, nil, apierrors.NewNotFound(gvrPods.GroupResource(), name)
	}
	pod := obj.(*corev1.Pod)
	if string(pod.UID) != uid {
		return true, nil, apierrors.NewConflict(gvrPods.GroupResource(), name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, pod.UID))
	}
	if verb == "evict" {
		if p := repair.Evictable(pod, m.budgets); !p.Allowed {
			m.refused[namespace+"/"+name] = true
			m.seen["refused by a budget"]++
			err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
			err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
				Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", p.Budget, p.DesiredHealthy, p.CurrentHealthy)})
			return true, nil, err
		}
	}
	if dryRun {
		m.seen["server dry run "+verb]++
		return true, nil, nil
	}
	if err := m.kube.Tracker().Delete(gvrPods, namespace, name); err != nil {
		return true, nil, err
	}
	m.writes = append(m.writes, modelWrite{what, namespace, name})
	m.seen[string(kind)+" "+verb]++
	return true, nil, nil
}

// told reports whether a prover was told of exactly the writes made, in order.
func told(writes []repair.Write, made []modelWrite) bool {
	if len(writes) != len(made) {
		return false
	}
	for i, w := range writes {
		if w.Namespace != made[i].namespace || w.Name != made[i].name {
			return false
		}
	}
	return true
}

type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

var imageField = regexp.MustCompile(`^/spec/template/spec/(initContainers|containers)/\d+/image$`)

// patch is a StatefulSet patch: checked (its tests), then applied as the API server applies a
// JSON patch (a failed test is 422), and the controller's observation of it modelled: the
// generation moves, status.observedGeneration follows at once, and status.updateRevision
// becomes the revision of the new template (an existing one, as getStatefulSetRevisions reuses
// it, stateful_set_control.go:292-305@v1.37.2, or a new one).
func (m *apiModel) patch(p k8stesting.PatchActionImpl) (bool, runtime.Object, error) {
	what := fmt.Sprintf("patch statefulset %s/%s", p.Namespace, p.Name)
	dryRun := m.dryRunAll(p.PatchOptions.DryRun, what)
	if p.PatchType != types.JSONPatchType {
		m.violate("%s: %s, not a JSON patch with tests", what, p.PatchType)
	}
	obj, err := m.kube.Tracker().Get(gvrStatefulSets, p.Namespace, p.Name)
	if err != nil {
		return true, nil, apierrors.NewNotFound(gvrStatefulSets.GroupResource(), p.Name)
	}
	set := obj.(*appsv1.StatefulSet)
	var ops []jsonOp
	if err := json.Unmarshal(p.Patch, &ops); err != nil {
		m.violate("%s: %v", what, err)
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	doc := toJSONMap(set)
	tested := map[string]any{}
	for _, op := range ops {
		switch op.Op {
		case "test":
			tested[op.Path] = op.Value
			if have, ok := pointer(doc, op.Path); !ok || !reflect.DeepEqual(have, normalize(op.Value)) {
				// Nothing else writes in this model: the executor tested what it did not diagnose.
				m.violate("%s tests %s = %v, the StatefulSet has %v", what, op.Path, op.Value, have)
				return true, nil, apierrors.NewGenericServerResponse(422, "patch", gvrStatefulSets.GroupResource(), p.Name, "testing value "+op.Path+" failed", 0, false)
			}
		case "replace":
			if tested["/metadata/uid"] != string(set.UID) {
				m.violate("%s replaces %s without testing the UID first", what, op.Path)
			}
			switch {
			case imageField.MatchString(op.Path):
				if _, ok := tested[op.Path]; !ok {
					m.violate("%s replaces %s without testing the old image", what, op.Path)
				}
			case op.Path == "/spec/template":
				if _, ok := tested["/metadata/generation"]; !ok {
					m.violate("%s replaces the template without testing the generation", what)
				}
				for _, path := range imagePaths(&set.Spec.Template) {
					if _, ok := tested[path]; !ok {
						m.violate("%s replaces the template without testing %s", what, path)
					}
				}
			default:
				m.violate("%s replaces %s: not an image or the template", what, op.Path)
			}
			if !replace(doc, op.Path, normalize(op.Value)) {
				return true, nil, apierrors.NewGenericServerResponse(422, "patch", gvrStatefulSets.GroupResource(), p.Name, "no path "+op.Path, 0, false)
			}
		default:
			m.violate("%s: op %s", what, op.Op)
		}
	}
	patched := &appsv1.StatefulSet{}
	if err := fromJSONMap(doc, patched); err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	kind := "patch image"
	if _, ok := tested["/metadata/generation"]; ok {
		kind = "patch template"
	}
	if dryRun {
		m.seen["server dry run "+kind]++
		return true, patched, nil
	}
	patched.Generation++
	patched.ResourceVersion = m.nextRV()
	patched.Status.ObservedGeneration = patched.Generation
	revision, err := m.revisionOf(patched)
	if err != nil {
		return true, nil, err
	}
	patched.Status.UpdateRevision = revision
	if err := m.kube.Tracker().Update(gvrStatefulSets, patched, p.Namespace); err != nil {
		return true, nil, err
	}
	m.writes = append(m.writes, modelWrite{what, p.Namespace, p.Name})
	m.seen[kind]++
	return true, patched, nil
}

// revisionOf names the ControllerRevision of the set's template, creating it if none matches.
func (m *apiModel) revisionOf(set *appsv1.StatefulSet) (string, error) {
	objs, err := m.kube.Tracker().List(gvrRevisions, appsv1.SchemeGroupVersion.WithKind("ControllerRevision"), set.Namespace)
	if err != nil {
		return "", err
	}
	newest := int64(0)
	for _, r := range objs.(*appsv1.ControllerRevisionList).Items {
		if owner := metav1.GetControllerOf(&r); owner == nil || owner.UID != set.UID {
			continue
		}
		newest = max(newest, r.Revision)
		var data struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if json.Unmarshal(r.Data.Raw, &data) == nil && apiequality.Semantic.DeepEqual(data.Spec.Template, set.Spec.Template) {
			return r.Name, nil
		}
	}
	template, err := json.Marshal(set.Spec.Template)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-m%d", set.Name, newest+1)
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: set.Namespace, UID: types.UID("uid-" + name),
		Labels:          set.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID, Controller: ptr.To(true)}}},
		Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":` + strings.Replace(string(template), "{", `{"$patch":"replace",`, 1) + `}}`)}, Revision: newest + 1}
	return name, m.kube.Tracker().Create(gvrRevisions, rev, set.Namespace)
}

func imagePaths(t *corev1.PodTemplateSpec) []string {
	var out []string
	for i := range t.Spec.InitContainers {
		out = append(out, fmt.Sprintf("/spec/template/spec/initContainers/%d/image", i))
	}
	for i := range t.Spec.Containers {
		out = append(out, fmt.Sprintf("/spec/template/spec/containers/%d/image", i))
	}
	return out
}

func toJSONMap(obj any) map[string]any {
	data, _ := json.Marshal(obj)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return out
}

func fromJSONMap(doc map[string]any, into any) error {
	data, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

// normalize makes a value what decoding JSON makes of it (numbers are float64).
func normalize(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

// pointer resolves a JSON pointer of object keys and array indices.
func pointer(doc any, path string) (any, bool) {
	cur := doc
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func replace(doc map[string]any, path string, value any) bool {
	i := strings.LastIndex(path, "/")
	parent, ok := pointer(doc, path[:i])
	if i == 0 {
		parent, ok = doc, true
	}
	if !ok {
		return false
	}
	key := path[i+1:]
	switch node := parent.(type) {
	case map[string]any:
		if _, ok := node[key]; !ok {
			return false
		}
		node[key] = value
	case []any:
		j, err := strconv.Atoi(key)
		if err != nil || j < 0 || j >= len(node) {
			return false
		}
		node[j] = value
	default:
		return false
	}
	return true
}

// prover proves on what the model holds now: the scenario's objects with the StatefulSets, pods
// and ControllerRevisions as they are after the writes, diagnosed as the scenario is. It records
// the proof and what it proves.
func (m *apiModel) prover(base *stuck.Objects, opts stuck.Options) repair.Prover {
	return func(ctx context.Context, after []repair.Write) (*model.Report, *stuck.Objects, error) {
		snap := *base
		sets, err := m.kube.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		pods, err := m.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		revs, err := m.kube.AppsV1().ControllerRevisions("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		snap.StatefulSets, snap.Pods, snap.Revisions = sets.Items, pods.Items, revs.Items
		sort.Slice(snap.StatefulSets, func(i, j int) bool { return key(&snap.StatefulSets[i]) < key(&snap.StatefulSets[j]) })
		sort.Slice(snap.Pods, func(i, j int) bool { return key(&snap.Pods[i]) < key(&snap.Pods[j]) })
		sort.Slice(snap.Revisions, func(i, j int) bool { return key(&snap.Revisions[i]) < key(&snap.Revisions[j]) })
		rep := diagnose.Report(&snap, opts)
		p := &proofRecord{afterWrites: len(m.writes), told: after, proves: map[string]bool{}}
		for _, a := range (plan.Planner{Policy: plan.Everything}).Plan(rep, &snap).Actions {
			if plan.IsDelete(a.Kind()) && !a.AfterPatch {
				p.proves[string(a.Kind())+"/"+a.Namespace+"/"+a.Pod+"/"+a.UID] = true
			}
		}
		m.proof = p
		return rep, &snap, nil
	}
}

func key(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// follow reads the StatefulSet from the model (whose controller observes a patch at once).
func (m *apiModel) follow(_ context.Context, namespace, name string, done func(*appsv1.StatefulSet) bool) error {
	obj, err := m.kube.Tracker().Get(gvrStatefulSets, namespace, name)
	if err != nil {
		return err
	}
	if done(obj.(*appsv1.StatefulSet)) {
		return nil
	}
	return fmt.Errorf("%w of statefulset %s/%s", rollout.ErrTimeout, namespace, name)
}

// scenarioObjects is what the model's API server holds of a scenario: what the executor may
// write and what it must never delete.
func scenarioObjects(s *stuck.Objects) []runtime.Object {
	var out []runtime.Object
	for i := range s.StatefulSets {
		out = append(out, s.StatefulSets[i].DeepCopy())
	}
	for i := range s.Pods {
		out = append(out, s.Pods[i].DeepCopy())
	}
	for i := range s.Revisions {
		out = append(out, s.Revisions[i].DeepCopy())
	}
	for i := range s.PVCs {
		out = append(out, s.PVCs[i].DeepCopy())
	}
	return out
}

// refusingBudgets is a PodDisruptionBudget per namespace selecting every pod, unhealthy and
// allowing no disruption: the Eviction API refuses a Running pod (Ready or not) and lets
// Pending, terminal and terminating ones go (canIgnorePDB).
func refusingBudgets(s *stuck.Objects) []policyv1.PodDisruptionBudget {
	var out []policyv1.PodDisruptionBudget
	seen := map[string]bool{}
	for _, set := range s.StatefulSets {
		if seen[set.Namespace] {
			continue
		}
		seen[set.Namespace] = true
		out = append(out, policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: set.Namespace, Generation: 1},
			Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{}, MaxUnavailable: ptr.To(intstr.FromInt32(0))},
			Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DesiredHealthy: 1, CurrentHealthy: 0, DisruptionsAllowed: 0}})
	}
	return out
}

// twice adds to a scenario a copy of every namespaced object in namespace <namespace>-b, with
// UIDs (and the owner references and Events naming them) of their own.
func twice(s *stuck.Objects) *stuck.Objects {
	const suffix = "-b"
	moved := func(o metav1.Object) {
		o.SetNamespace(o.GetNamespace() + suffix)
		if o.GetUID() != "" {
			o.SetUID(o.GetUID() + suffix)
		}
		refs := o.GetOwnerReferences()
		for i := range refs {
			refs[i].UID += suffix
		}
		o.SetOwnerReferences(refs)
	}
	out := *s
	out.StatefulSets = slices.Clone(s.StatefulSets)
	for _, x := range s.StatefulSets {
		x = *x.DeepCopy()
		moved(&x)
		out.StatefulSets = append(out.StatefulSets, x)
	}
	out.Pods = slices.Clone(s.Pods)
	for _, x := range s.Pods {
		x = *x.DeepCopy()
		moved(&x)
		out.Pods = append(out.Pods, x)
	}
	out.Revisions = slices.Clone(s.Revisions)
	for _, x := range s.Revisions {
		x = *x.DeepCopy()
		moved(&x)
		out.Revisions = append(out.Revisions, x)
	}
	out.PVCs = slices.Clone(s.PVCs)
	for _, x := range s.PVCs {
		x = *x.DeepCopy()
		moved(&x)
		out.PVCs = append(out.PVCs, x)
	}
	out.Events = slices.Clone(s.Events)
	for _, x := range s.Events {
		x = *x.DeepCopy()
		moved(&x)
		x.InvolvedObject.Namespace += suffix
		if x.InvolvedObject.UID != "" {
			x.InvolvedObject.UID += suffix
		}
		out.Events = append(out.Events, x)
	}
	out.Services = slices.Clone(s.Services)
	for _, x := range s.Services {
		x = *x.DeepCopy()
		moved(&x)
		out.Services = append(out.Services, x)
	}
	out.ImageStreams = slices.Clone(s.ImageStreams)
	for _, x := range s.ImageStreams {
		x = *x.DeepCopy()
		moved(&x)
		out.ImageStreams = append(out.ImageStreams, x)
	}
	out.Namespaces = slices.Clone(s.Namespaces)
	for _, x := range s.Namespaces {
		x = *x.DeepCopy()
		x.Name += suffix
		out.Namespaces = append(out.Namespaces, x)
	}
	out.Owners = slices.Clone(s.Owners)
	for _, x := range s.Owners {
		x.Namespace += suffix
		if x.UID != "" {
			x.UID += suffix
		}
		out.Owners = append(out.Owners, x)
	}
	if s.Selected != nil {
		out.Selected = map[types.NamespacedName]bool{}
		for k, v := range s.Selected {
			out.Selected[k], out.Selected[types.NamespacedName{Namespace: k.Namespace + suffix, Name: k.Name}] = v, v
		}
	}
	return &out
}

// TestExecutorInvariantsOverEveryScenario is the executor's sweep; see the comment at the top.
func TestExecutorInvariantsOverEveryScenario(t *testing.T) {
	var files []string
	for _, root := range []string{"stuck", "resolver"} {
		found, err := filepath.Glob(filepath.Join("..", "..", "testdata", root, "*", "objects.yaml"))
		if err != nil || len(found) == 0 {
			t.Fatalf("no scenarios in testdata/%s: %v", root, err)
		}
		files = append(files, found...)
	}
	scenarios := map[string]func(*testing.T) (*stuck.Objects, stuck.Options){
		"stuck/current-revision-failing+revision": func(t *testing.T) (*stuck.Objects, stuck.Options) {
			snap, _ := rollbackScenario(t)
			return snap, stuck.DefaultOptions()
		},
	}
	for _, file := range files {
		dir := filepath.Dir(file)
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		scenarios[name] = func(t *testing.T) (*stuck.Objects, stuck.Options) { return loadScenario(t, dir) }
		// The scenario twice, in its namespaces and in copies of them: a plan with a delete
		// then has two, the second proven after the first was made.
		scenarios[name+"×2"] = func(t *testing.T) (*stuck.Objects, stuck.Options) {
			snap, opts := loadScenario(t, dir)
			return twice(snap), opts
		}
	}
	names := make([]string, 0, len(scenarios))
	for name := range scenarios {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]int{}
	runs, applied := 0, 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			for _, pm := range podManagements {
				base, opts := scenarios[name](t)
				for i := range base.StatefulSets {
					base.StatefulSets[i].Spec.PodManagementPolicy = pm
				}
				rep := diagnose.Report(base, opts)
				for _, policy := range policies {
					actions := (plan.Planner{Policy: policy}).Plan(rep, base).Actions
					if len(actions) == 0 || (strings.HasSuffix(name, "×2") && deletes(actions) < 2) {
						// A scenario twice is there for its second delete.
						continue
					}
					for _, dryRun := range dryRuns {
						for _, disruption := range disruptions {
							runs++
							label := fmt.Sprintf("%s rollback=%v force-lost-node=%v dry-run=%s disruption=%s", pm, policy.Rollback, policy.ForceLostNode, dryRun, disruption)
							done := applyChecked(t, label, base, opts, actions, policy, dryRun, disruption, seen)
							if len(done) > 0 {
								applied++
							}
						}
					}
				}
			}
		})
	}
	t.Logf("%d scenarios, %d runs with a plan to apply (%d applied); writes and answers met: %v", len(names), runs, applied, seen)
	// The sweep reaches every kind of write and refusal, so no invariant above is checked on nothing.
	for _, want := range []string{"DeletePod delete", "DeletePod evict", "ForceDeletePod delete", "patch image", "patch template",
		"refused by a budget", "server dry run delete", "server dry run evict", "server dry run patch image", "server dry run patch template",
		"deleted after a patch", "proven after a write"} {
		if seen[want] == 0 {
			t.Errorf("no run reached %q: its invariants were never checked", want)
		}
	}
}

func deletes(actions []model.Action) int {
	n := 0
	for _, a := range actions {
		if plan.IsDelete(a.Kind()) {
			n++
		}
	}
	return n
}

// applyChecked applies a plan against a fresh model of the scenario and checks the invariants:
// on each write (apiModel) and once the executor is done.
func applyChecked(t *testing.T, label string, base *stuck.Objects, opts stuck.Options, actions []model.Action, policy plan.Policy,
	dryRun apiv1.DryRunMode, disruption apiv1.DisruptionMode, seen map[string]int) []model.Action {
	t.Helper()
	kube := fake.NewClientset(scenarioObjects(base)...)
	m := &apiModel{kube: kube, dryRun: dryRun, refused: map[string]bool{}, seen: seen}
	if disruption == apiv1.DisruptionEvict {
		m.budgets = refusingBudgets(base)
		for i := range m.budgets {
			if err := kube.Tracker().Add(&m.budgets[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	kube.PrependReactor("*", "*", m.react)
	before := state(t, kube)
	exec := repair.New(repair.Options{Kube: kube, Prove: m.prover(base, opts), DryRun: dryRun, Policy: policy, Disruption: disruption})
	exec.Follow, exec.Deadline = m.follow, time.Now().Add(10*time.Second)
	done, err := exec.Apply(context.Background(), actions)
	if err != nil {
		t.Errorf("%s: apply: %v", label, err)
	}
	for _, v := range m.bad {
		t.Errorf("%s: %s", label, v)
	}
	after := state(t, kube)
	for _, key := range before.claims {
		if !slices.Contains(after.claims, key) {
			t.Errorf("%s: PersistentVolumeClaim %s deleted", label, key)
		}
	}
	for _, key := range before.sets {
		if !slices.Contains(after.sets, key) {
			t.Errorf("%s: StatefulSet %s deleted", label, key)
		}
	}
	if dryRun != apiv1.DryRunNone && !reflect.DeepEqual(before, after) {
		t.Errorf("%s: a dry run changed the cluster:\n%+v\n%+v", label, before, after)
	}
	for _, a := range done {
		if a.Outcome.Reason == model.OutcomeRefusedByBudget && !slices.Contains(after.pods, a.Namespace+"/"+a.Pod+"/"+a.UID) {
			t.Errorf("%s: the eviction of %s/%s was refused by a budget, yet the pod is gone", label, a.Namespace, a.Pod)
		}
		if a.AfterPatch && a.Outcome.Reason == model.OutcomeDone {
			seen["deleted after a patch"]++
		}
	}
	return done
}

// clusterState is what the invariants compare before and after an apply.
type clusterState struct {
	sets, pods, claims, revisions []string
	templates                     []string
}

func state(t *testing.T, kube *fake.Clientset) clusterState {
	t.Helper()
	var s clusterState
	ctx := context.Background()
	sets, err := kube.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range sets.Items {
		s.sets = append(s.sets, key(&set)+"/"+string(set.UID))
		data, _ := json.Marshal(set.Spec)
		s.templates = append(s.templates, string(data))
	}
	pods, _ := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		s.pods = append(s.pods, key(&p)+"/"+string(p.UID))
	}
	claims, _ := kube.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	for _, c := range claims.Items {
		s.claims = append(s.claims, key(&c)+"/"+string(c.UID))
	}
	revs, _ := kube.AppsV1().ControllerRevisions("").List(ctx, metav1.ListOptions{})
	for _, r := range revs.Items {
		s.revisions = append(s.revisions, key(&r))
	}
	for _, l := range [][]string{s.sets, s.pods, s.claims, s.revisions, s.templates} {
		sort.Strings(l)
	}
	return s
}
