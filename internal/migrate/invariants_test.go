package migrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/migrate"
	"github.com/stsdiag/stsdiag/internal/migration"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// The migration is swept the way the executor is (internal/repair/executor_invariants_test.go):
// a fake clientset answered by a small model of the API server, the garbage collector and the
// StatefulSet controller (world), the safety rules checked on every request as it arrives. The
// sweep interrupts a run at every request it makes (the process killed: that request and every
// later one fail, nothing after it reaches the server), lets the world go on for a while, then
// runs the same command again, uninterrupted: it must always finish the migration, and no pod
// or claim is ever deleted, no StatefulSet deleted but with propagationPolicy Orphan, its UID and
// resourceVersion, after its copy was saved. A request the server applied whose answer was lost
// leaves the same state as a process killed right after it: the next index covers it.

var (
	gvrSets      = appsv1.SchemeGroupVersion.WithResource("statefulsets")
	gvrPods      = corev1.SchemeGroupVersion.WithResource("pods")
	gvrClaims    = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	gvrRevisions = appsv1.SchemeGroupVersion.WithResource("controllerrevisions")
	gvrMaps      = corev1.SchemeGroupVersion.WithResource("configmaps")
)

const ns = "shop"

// world is the model: the objects (in the fake's tracker), and what the garbage collector and
// the controller do on each tick (a tick is each GET of the StatefulSet: migrate's reads drive
// time).
type world struct {
	t       *testing.T
	kube    *fake.Clientset
	tracker k8stesting.ObjectTracker
	rv      int
	now     time.Time
	// holdTicks: the StatefulSet carries a finalizer of its own that is released this many
	// ticks after its deletion began (0: none).
	holdTicks, heldSince int
	// replaceAt: at this tick, if the original is still live, its controller replaces web-2 (a
	// Failed pod is recreated whatever the strategy): the record saved before must be refreshed
	// before the delete (0: never).
	replaceAt int
	ticks     int
	uids      int
	// failFrom: the request index from which every request fails (the process killed); 0:
	// none. requests counts them.
	failFrom, requests int
	bad                []string
	// podsBefore and claimsBefore are the UIDs at the start.
	podsBefore, claimsBefore map[string]types.UID
	// newRevisions counts revisions the controller had to create (a template it did not know).
	newRevisions int
	// writes counts the writes that changed the cluster.
	writes int
}

func (w *world) violate(format string, args ...any) {
	w.bad = append(w.bad, fmt.Sprintf(format, args...))
}

func (w *world) nextRV() string { w.rv++; return strconv.Itoa(100 + w.rv) }

func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/web:1",
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}
}

func revisionData(t corev1.PodTemplateSpec) []byte {
	data, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
	return data
}

func controllerRef(name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
}

// newWorld: web, 3 replicas under OrderedReady, settled on revision web-a, with claims data of
// 1Gi of an expandable class.
func newWorld(t *testing.T, c sweepCase) *world {
	w := &world{t: t, holdTicks: c.hold, replaceAt: c.replaceAt, now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC),
		podsBefore: map[string]types.UID{}, claimsBefore: map[string]types.UID{}}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "old-uid", Generation: 1, ResourceVersion: "10",
			Labels: map[string]string{"app": "web"}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: template(), ServiceName: "web", PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("expandable"),
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, CurrentReplicas: 3, UpdatedReplicas: 3,
			CurrentRevision: "web-a", UpdateRevision: "web-a"},
	}
	if c.hold > 0 {
		set.Finalizers = []string{"example.com/hold"}
	}
	objs := []runtime.Object{set,
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "expandable"}, Provisioner: "example.com/csi", AllowVolumeExpansion: ptr.To(true)},
		&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-a", Namespace: ns, Labels: map[string]string{"app": "web"}, OwnerReferences: controllerRef("web", "old-uid")},
			Revision: 1, Data: runtime.RawExtension{Raw: revisionData(template())}},
	}
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		uid := types.UID(name + "-uid")
		w.podsBefore[name] = uid
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid, ResourceVersion: "20",
				Labels:          map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-a", appsv1.StatefulSetPodNameLabel: name},
				OwnerReferences: controllerRef("web", "old-uid")},
			Spec: corev1.PodSpec{NodeName: "node-0", Containers: template().Spec.Containers},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
		})
		claim := "data-web-" + strconv.Itoa(i)
		w.claimsBefore[claim] = types.UID(claim + "-uid")
		objs = append(objs, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns, UID: types.UID(claim + "-uid"), ResourceVersion: "30"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("expandable"), VolumeName: "pv-" + strconv.Itoa(i),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		})
	}
	// A plain tracker (fake.NewClientset's field-managed one rebuilds a REST mapper on every
	// write: the sweep took 25 s instead of a few), wired as the fake clientset wires its own.
	w.tracker = k8stesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder())
	for _, obj := range objs {
		if err := w.tracker.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	w.kube = &fake.Clientset{}
	w.kube.AddReactor("*", "*", k8stesting.ObjectReaction(w.tracker))
	w.kube.AddWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		wi, err := w.tracker.Watch(a.GetResource(), a.GetNamespace())
		return true, wi, err
	})
	w.kube.PrependReactor("*", "*", w.react)
	return w
}

func (w *world) get(gvr schema.GroupVersionResource, name string) runtime.Object {
	obj, err := w.tracker.Get(gvr, ns, name)
	if err != nil {
		return nil
	}
	return obj
}

func (w *world) set() *appsv1.StatefulSet {
	if obj := w.get(gvrSets, "web"); obj != nil {
		return obj.(*appsv1.StatefulSet)
	}
	return nil
}

func (w *world) saved() *migration.Saved {
	obj := w.get(gvrMaps, apiv1.SavedCopyName("web"))
	if obj == nil {
		return nil
	}
	s, err := migration.ParseSaved(obj.(*corev1.ConfigMap))
	if err != nil {
		w.violate("the saved copy does not parse: %v", err)
		return nil
	}
	return s
}

func (w *world) update(gvr schema.GroupVersionResource, obj runtime.Object) {
	obj.(metav1.Object).SetResourceVersion(w.nextRV())
	if err := w.tracker.Update(gvr, obj, ns); err != nil {
		w.t.Fatalf("model update: %v", err)
	}
}

func (w *world) list(gvr schema.GroupVersionResource) []runtime.Object {
	var out []runtime.Object
	switch gvr {
	case gvrPods:
		l, _ := w.tracker.List(gvr, corev1.SchemeGroupVersion.WithKind("Pod"), ns)
		for i := range l.(*corev1.PodList).Items {
			out = append(out, &l.(*corev1.PodList).Items[i])
		}
	case gvrRevisions:
		l, _ := w.tracker.List(gvr, appsv1.SchemeGroupVersion.WithKind("ControllerRevision"), ns)
		for i := range l.(*appsv1.ControllerRevisionList).Items {
			out = append(out, &l.(*appsv1.ControllerRevisionList).Items[i])
		}
	case gvrClaims:
		l, _ := w.tracker.List(gvr, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), ns)
		for i := range l.(*corev1.PersistentVolumeClaimList).Items {
			out = append(out, &l.(*corev1.PersistentVolumeClaimList).Items[i])
		}
	}
	return out
}

// tick is one step of the garbage collector and the controller: the GC orphans the dependents
// of a StatefulSet deleted with the orphan finalizer and removes the finalizer
// (garbagecollector.go:749-770@v1.37.2); an object with no finalizer left is removed; the
// hold finalizer goes holdTicks after the deletion began; the controller syncs a live
// StatefulSet (stateful_set.go:524-580@v1.37.2): it adopts the orphaned revisions and pods its
// selector matches, finds the revision of its template (creating one if there is none) and
// writes its status.
func (w *world) tick() {
	w.ticks++
	set := w.set()
	if set == nil {
		return
	}
	if w.ticks == w.replaceAt && set.UID == "old-uid" && set.DeletionTimestamp == nil {
		pod := w.get(gvrPods, "web-2").(*corev1.Pod)
		if err := w.tracker.Delete(gvrPods, ns, "web-2"); err != nil {
			w.t.Fatal(err)
		}
		pod.UID, pod.ResourceVersion = "web-2-uid-recreated", w.nextRV()
		if err := w.tracker.Create(gvrPods, pod, ns); err != nil {
			w.t.Fatal(err)
		}
		w.podsBefore["web-2"] = pod.UID
	}
	if set.DeletionTimestamp != nil {
		if slices.Contains(set.Finalizers, metav1.FinalizerOrphanDependents) {
			for _, gvr := range []schema.GroupVersionResource{gvrPods, gvrRevisions, gvrClaims} {
				for _, obj := range w.list(gvr) {
					m := obj.(metav1.Object)
					refs := slices.DeleteFunc(m.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == set.UID })
					if len(refs) != len(m.GetOwnerReferences()) {
						m.SetOwnerReferences(refs)
						w.update(gvr, obj)
					}
				}
			}
			set.Finalizers = slices.DeleteFunc(set.Finalizers, func(f string) bool { return f == metav1.FinalizerOrphanDependents })
			w.update(gvrSets, set)
		} else if w.ticks-w.heldSince >= w.holdTicks && slices.Contains(set.Finalizers, "example.com/hold") {
			set.Finalizers = slices.DeleteFunc(set.Finalizers, func(f string) bool { return f == "example.com/hold" })
			w.update(gvrSets, set)
		}
		if len(set.Finalizers) == 0 {
			if err := w.tracker.Delete(gvrSets, ns, set.Name); err != nil {
				w.t.Fatal(err)
			}
		}
		return
	}
	selector, _ := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	update := ""
	for _, obj := range w.list(gvrRevisions) {
		rev := obj.(*appsv1.ControllerRevision)
		if !selector.Matches(labels.Set(rev.Labels)) {
			continue
		}
		if metav1.GetControllerOfNoCopy(rev) == nil {
			rev.OwnerReferences = controllerRef(set.Name, set.UID)
			w.update(gvrRevisions, rev)
		}
		if metav1.IsControlledBy(rev, set) && string(rev.Data.Raw) == string(revisionData(set.Spec.Template)) {
			update = rev.Name
		}
	}
	if update == "" {
		w.newRevisions++
		update = fmt.Sprintf("web-new%d", w.newRevisions)
		rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: update, Namespace: ns, Labels: map[string]string{"app": "web"},
			OwnerReferences: controllerRef(set.Name, set.UID)}, Revision: 2, Data: runtime.RawExtension{Raw: revisionData(set.Spec.Template)}}
		if err := w.tracker.Create(gvrRevisions, rev, ns); err != nil {
			w.t.Fatal(err)
		}
	}
	for _, obj := range w.list(gvrPods) {
		pod := obj.(*corev1.Pod)
		if metav1.GetControllerOfNoCopy(pod) == nil && pod.DeletionTimestamp == nil && selector.Matches(labels.Set(pod.Labels)) && strings.HasPrefix(pod.Name, set.Name+"-") {
			pod.OwnerReferences = controllerRef(set.Name, set.UID)
			w.update(gvrPods, pod)
		}
	}
	current := set.Status.CurrentRevision
	if current == "" {
		current = update
	}
	if set.Status.ObservedGeneration != set.Generation || set.Status.UpdateRevision != update || set.Status.CurrentRevision != current {
		set.Status = appsv1.StatefulSetStatus{ObservedGeneration: set.Generation, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
			CurrentReplicas: 3, UpdatedReplicas: 3, CurrentRevision: current, UpdateRevision: update}
		w.update(gvrSets, set)
	}
}

// react answers every request: a killed process's requests fail; reads go to the tracker; the
// writes migrate may make are checked and answered as the API server would; any other write is
// a violation.
func (w *world) react(a k8stesting.Action) (bool, runtime.Object, error) {
	w.requests++
	if w.failFrom > 0 && w.requests >= w.failFrom {
		return true, nil, context.Canceled
	}
	verb, res := a.GetVerb(), a.GetResource().Resource
	if a.GetSubresource() != "" {
		w.violate("request to a subresource: %s %s/%s", verb, res, a.GetSubresource())
		return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("not in the model"))
	}
	switch verb {
	case "get":
		if res == "statefulsets" {
			w.tick()
		}
		return false, nil, nil
	case "list":
		if res == "pods" {
			// A LIST carries a resourceVersion (the deletion watch starts from it).
			l, err := w.tracker.List(gvrPods, corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
			if err != nil {
				return true, nil, err
			}
			pods := l.(*corev1.PodList)
			pods.ResourceVersion = strconv.Itoa(100 + w.rv)
			sel := a.(k8stesting.ListAction).GetListRestrictions().Labels
			pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !sel.Matches(labels.Set(p.Labels)) })
			return true, pods, nil
		}
		return false, nil, nil
	case "watch":
		return false, nil, nil
	}
	if !(verb == "create" && slices.Equal(a.(k8stesting.CreateActionImpl).CreateOptions.DryRun, []string{metav1.DryRunAll})) {
		w.writes++
	}
	switch {
	case verb == "create" && res == "statefulsets":
		return w.createSet(a.(k8stesting.CreateAction))
	case verb == "delete" && res == "statefulsets":
		return w.deleteSet(a.(k8stesting.DeleteAction))
	case verb == "update" && res == "statefulsets":
		return w.updateSet(a.(k8stesting.UpdateAction))
	case verb == "patch" && res == "persistentvolumeclaims":
		return w.patchClaim(a.(k8stesting.PatchAction))
	case res == "configmaps" && (verb == "create" || verb == "update" || verb == "delete"):
		return w.configMap(a)
	}
	w.violate("unsafe request: %s %s", verb, res)
	return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("not allowed by the model"))
}

func (w *world) createSet(a k8stesting.CreateAction) (bool, runtime.Object, error) {
	set := a.GetObject().(*appsv1.StatefulSet).DeepCopy()
	if slices.Equal(a.(k8stesting.CreateActionImpl).CreateOptions.DryRun, []string{metav1.DryRunAll}) {
		if set.Name != "" || set.GenerateName == "" {
			w.violate("dry-run create of %q without a generated name: it would collide", set.Name)
		}
		set.Name, set.UID = set.GenerateName+"x1y2z", "dry-run-uid"
		return true, set, nil
	}
	saved := w.saved()
	switch {
	case saved == nil:
		w.violate("statefulset created with no saved copy")
	case set.Annotations[apiv1.MigratedFromAnnotation] != string(saved.Record.OldUID):
		w.violate("statefulset created without the annotation naming the original")
	case !jsonEqual(set.Spec.Template, saved.Original.Spec.Template):
		w.violate("statefulset created with another template than the running one")
	case set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType:
		w.violate("statefulset created with updateStrategy %s, not OnDelete", set.Spec.UpdateStrategy.Type)
	}
	for _, obj := range w.list(gvrPods) {
		if ref := metav1.GetControllerOfNoCopy(obj.(metav1.Object)); ref != nil && saved != nil && ref.UID == saved.Record.OldUID {
			w.violate("statefulset created while pod %s still names the original as its controller (the GC would delete it)", obj.(metav1.Object).GetName())
		}
	}
	if w.set() != nil {
		return true, nil, apierrors.NewAlreadyExists(gvrSets.GroupResource(), set.Name)
	}
	w.uids++
	set.UID, set.Generation, set.ResourceVersion = types.UID(fmt.Sprintf("new-uid-%d", w.uids)), 1, w.nextRV()
	set.Status = appsv1.StatefulSetStatus{}
	if err := w.tracker.Create(gvrSets, set, ns); err != nil {
		return true, nil, err
	}
	return true, set, nil
}

func (w *world) deleteSet(a k8stesting.DeleteAction) (bool, runtime.Object, error) {
	opts := a.(k8stesting.DeleteActionImpl).DeleteOptions
	set := w.set()
	if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationOrphan {
		w.violate("statefulset deleted without propagationPolicy Orphan")
	}
	p := opts.Preconditions
	if p == nil || p.UID == nil || p.ResourceVersion == nil {
		w.violate("statefulset deleted without UID and resourceVersion preconditions")
		return true, nil, apierrors.NewBadRequest("no preconditions")
	}
	saved := w.saved()
	if saved == nil || saved.Record.OldUID != *p.UID {
		w.violate("statefulset %s deleted with no saved copy of it", *p.UID)
	}
	if set == nil {
		return true, nil, apierrors.NewNotFound(gvrSets.GroupResource(), "web")
	}
	if set.UID != *p.UID || set.ResourceVersion != *p.ResourceVersion {
		return true, nil, apierrors.NewConflict(gvrSets.GroupResource(), "web", errors.New("precondition failed"))
	}
	if saved != nil && !slices.EqualFunc(saved.Record.Pods, w.podRecords(set.UID), func(a, b migration.PodRecord) bool { return a == b }) {
		w.violate("statefulset deleted while the saved record of its pods is stale: %v, now %v", saved.Record.Pods, w.podRecords(set.UID))
	}
	if set.DeletionTimestamp == nil {
		set.DeletionTimestamp = &metav1.Time{Time: w.now}
		set.Finalizers = append(set.Finalizers, metav1.FinalizerOrphanDependents)
		w.heldSince = w.ticks
		w.update(gvrSets, set)
	}
	return true, nil, nil
}

func (w *world) podRecords(owner types.UID) []migration.PodRecord {
	var out []migration.PodRecord
	for _, obj := range w.list(gvrPods) {
		pod := obj.(*corev1.Pod)
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.UID == owner {
			out = append(out, migration.PodRecord{Name: pod.Name, UID: pod.UID, Revision: pod.Labels[appsv1.ControllerRevisionHashLabelKey]})
		}
	}
	slices.SortFunc(out, func(a, b migration.PodRecord) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (w *world) updateSet(a k8stesting.UpdateAction) (bool, runtime.Object, error) {
	set := a.GetObject().(*appsv1.StatefulSet).DeepCopy()
	cur := w.set()
	if cur == nil {
		return true, nil, apierrors.NewNotFound(gvrSets.GroupResource(), set.Name)
	}
	if set.UID != cur.UID || set.ResourceVersion != cur.ResourceVersion {
		return true, nil, apierrors.NewConflict(gvrSets.GroupResource(), set.Name, errors.New("the object has been modified"))
	}
	saved := w.saved()
	if saved == nil || saved.Record.Proven != cur.UID {
		w.violate("statefulset updated before its adoption was proven and recorded")
	}
	if !jsonEqual(set.Spec.Template, cur.Spec.Template) {
		w.violate("the final update changed the template although the flags asked for none")
	}
	if !jsonEqual(set.Spec, cur.Spec) {
		set.Generation = cur.Generation + 1
	}
	set.Status = cur.Status
	w.update(gvrSets, set)
	return true, set, nil
}

func (w *world) patchClaim(a k8stesting.PatchAction) (bool, runtime.Object, error) {
	var ops []struct {
		Op, Path string
		Value    any
	}
	if a.GetPatchType() != types.JSONPatchType || json.Unmarshal(a.GetPatch(), &ops) != nil {
		w.violate("claim patched with a %s patch", a.GetPatchType())
		return true, nil, apierrors.NewBadRequest("patch")
	}
	obj := w.get(gvrClaims, a.GetName())
	if obj == nil {
		return true, nil, apierrors.NewNotFound(gvrClaims.GroupResource(), a.GetName())
	}
	claim := obj.(*corev1.PersistentVolumeClaim)
	tested := map[string]bool{}
	for _, op := range ops {
		switch {
		case op.Op == "test" && op.Path == "/metadata/uid":
			tested["uid"] = true
			if op.Value != string(claim.UID) {
				return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PersistentVolumeClaim"}, claim.Name, nil)
			}
		case op.Op == "test" && op.Path == "/metadata/resourceVersion":
			tested["rv"] = true
			if op.Value != claim.ResourceVersion {
				return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
					Message: "testing value /metadata/resourceVersion failed: test failed"}}
			}
		case op.Op == "replace" && op.Path == "/spec/resources/requests/storage":
			q := resource.MustParse(op.Value.(string))
			old := claim.Spec.Resources.Requests[corev1.ResourceStorage]
			if q.Cmp(old) <= 0 {
				w.violate("claim %s request set to %s from %s: not a growth", claim.Name, q.String(), old.String())
			}
			claim.Spec.Resources.Requests[corev1.ResourceStorage] = q
		default:
			w.violate("claim %s patch op %s %s", claim.Name, op.Op, op.Path)
		}
	}
	if !tested["uid"] || !tested["rv"] {
		w.violate("claim %s patched without UID and resourceVersion tests", claim.Name)
	}
	claim.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue}}
	w.update(gvrClaims, claim)
	return true, claim, nil
}

func (w *world) configMap(a k8stesting.Action) (bool, runtime.Object, error) {
	name := apiv1.SavedCopyName("web")
	cur := w.get(gvrMaps, name)
	switch a.GetVerb() {
	case "create":
		cm := a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
		if cm.Name != name || len(cm.OwnerReferences) > 0 || cm.Labels[apiv1.MigrationLabel] != "web" {
			w.violate("saved copy %s created with owners %v, labels %v", cm.Name, cm.OwnerReferences, cm.Labels)
		}
		if cur != nil {
			return true, nil, apierrors.NewAlreadyExists(gvrMaps.GroupResource(), name)
		}
		w.uids++
		cm.UID, cm.ResourceVersion = types.UID(fmt.Sprintf("cm-uid-%d", w.uids)), w.nextRV()
		if err := w.tracker.Create(gvrMaps, cm, ns); err != nil {
			return true, nil, err
		}
		return true, cm, nil
	case "update":
		cm := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
		if cur == nil {
			return true, nil, apierrors.NewNotFound(gvrMaps.GroupResource(), name)
		}
		if m := cur.(metav1.Object); cm.UID != m.GetUID() || cm.ResourceVersion != m.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(gvrMaps.GroupResource(), name, errors.New("the object has been modified"))
		}
		w.update(gvrMaps, cm)
		return true, cm, nil
	}
	p := a.(k8stesting.DeleteAction).(k8stesting.DeleteActionImpl).DeleteOptions.Preconditions
	if p == nil || p.UID == nil || p.ResourceVersion == nil {
		w.violate("saved copy deleted without UID and resourceVersion preconditions")
	}
	if cur == nil {
		return true, nil, apierrors.NewNotFound(gvrMaps.GroupResource(), name)
	}
	if m := cur.(metav1.Object); p != nil && p.UID != nil && p.ResourceVersion != nil && (*p.UID != m.GetUID() || *p.ResourceVersion != m.GetResourceVersion()) {
		return true, nil, apierrors.NewConflict(gvrMaps.GroupResource(), name, errors.New("precondition failed"))
	}
	saved, set := w.saved(), w.set()
	if set == nil || saved == nil || saved.Record.Proven != set.UID {
		w.violate("saved copy removed before the new StatefulSet was proven")
	} else if _, marked := set.Annotations[apiv1.MigratedFromAnnotation]; marked || set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		w.violate("saved copy removed before the final spec was applied")
	}
	if err := w.tracker.Delete(gvrMaps, ns, name); err != nil {
		return true, nil, err
	}
	return true, nil, nil
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// options are the command's: --pod-management-policy Parallel, with --claim-size data=2Gi when
// grow.
func (w *world) options(grow bool) migrate.Options {
	o := migrate.Options{Clients: gather.Clients{Clients: read.Clients{Kube: w.kube}}, Namespace: ns, Name: "web", PodManagementPolicy: "Parallel",
		Timeout: 10 * time.Second, Poll: time.Microsecond, ResizeWait: time.Microsecond, Diagnosis: stuck.DefaultOptions()}
	if grow {
		o.ClaimSizes = map[string]resource.Quantity{"data": resource.MustParse("2Gi")}
	}
	return o
}

// checkDone: the migration finished as asked, the same pods and claims are there, adopted.
func (w *world) checkDone(grow bool) {
	set := w.set()
	if set == nil {
		w.violate("no StatefulSet at the end")
		return
	}
	if set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		w.violate("final spec: policy %s, strategy %s", set.Spec.PodManagementPolicy, set.Spec.UpdateStrategy.Type)
	}
	if _, marked := set.Annotations[apiv1.MigratedFromAnnotation]; marked {
		w.violate("the migration's annotation is still on the StatefulSet")
	}
	if w.saved() != nil {
		w.violate("the saved copy is still there")
	}
	for _, obj := range w.list(gvrPods) {
		pod := obj.(*corev1.Pod)
		if w.podsBefore[pod.Name] != pod.UID {
			w.violate("pod %s has UID %s, was %s", pod.Name, pod.UID, w.podsBefore[pod.Name])
		}
		if !metav1.IsControlledBy(pod, set) || pod.Labels[appsv1.ControllerRevisionHashLabelKey] != "web-a" {
			w.violate("pod %s: owner %v, revision %s", pod.Name, pod.OwnerReferences, pod.Labels[appsv1.ControllerRevisionHashLabelKey])
		}
	}
	if n := len(w.list(gvrPods)); n != 3 {
		w.violate("%d pods at the end, want 3", n)
	}
	claims := w.list(gvrClaims)
	for _, obj := range claims {
		claim := obj.(*corev1.PersistentVolumeClaim)
		want := "1Gi"
		if grow {
			want = "2Gi"
		}
		if q := claim.Spec.Resources.Requests[corev1.ResourceStorage]; w.claimsBefore[claim.Name] != claim.UID || q.String() != want {
			w.violate("claim %s: UID %s request %s, want %s %s", claim.Name, claim.UID, q.String(), w.claimsBefore[claim.Name], want)
		}
	}
	if len(claims) != 3 {
		w.violate("%d claims at the end, want 3", len(claims))
	}
	if w.newRevisions > 0 {
		w.violate("the controller computed %d new revision(s): the template changed", w.newRevisions)
	}
	if set.Status.UpdateRevision != "web-a" || set.Status.CurrentRevision != "web-a" {
		w.violate("revisions at the end: current %s, update %s", set.Status.CurrentRevision, set.Status.UpdateRevision)
	}
}

// sweepCase is one migration swept.
type sweepCase struct {
	name string
	// grow adds --claim-size data=2Gi; hold and replaceAt as in world.
	grow            bool
	hold, replaceAt int
}

var sweepCases = []sweepCase{
	{name: "policy"},
	{name: "policy+claims", grow: true},
	{name: "held-by-finalizer", hold: 4},
	{name: "claims+pod-replaced-before-delete", grow: true, replaceAt: 6},
}

// TestMigrationInterruptedEverywhere: interrupted at every request, then run again, the
// migration always finishes, and no write breaks a safety rule.
func TestMigrationInterruptedEverywhere(t *testing.T) {
	for _, c := range sweepCases {
		t.Run(c.name, func(t *testing.T) {
			// An uninterrupted run: how many requests it makes.
			w := newWorld(t, c)
			res, err := migrate.Run(context.Background(), w.options(c.grow))
			if err != nil || res.Result != apiv1.Migrated {
				t.Fatalf("uninterrupted run: %v %+v", err, res)
			}
			w.checkDone(c.grow)
			if len(w.bad) > 0 {
				t.Fatalf("uninterrupted run: %s", strings.Join(w.bad, "\n"))
			}
			if c.grow {
				// The model's volume plugin says Resizing once a claim's request grew.
				if len(res.Claims) != 3 {
					t.Errorf("claims %+v", res.Claims)
				}
				for _, claim := range res.Claims {
					if claim.Result != apiv1.ResultDone || !slices.Equal(claim.ResizeStatus, []string{"Resizing"}) || claim.Capacity != "1Gi" || claim.From != "1Gi" || claim.To != "2Gi" {
						t.Errorf("claim %+v", claim)
					}
				}
			}
			if c.replaceAt > 0 && !slices.ContainsFunc(res.Steps, func(s apiv1.MigrationStep) bool {
				return strings.Contains(s.Message, "recorded the pods and revisions again")
			}) {
				t.Errorf("web-2 replaced before the delete, and the record was not refreshed: %+v", res.Steps)
			}
			total := w.requests
			// A run killed at firstWrite (or later) made a write: killed before, it was planning.
			firstWrite := 0
			for probe := 1; probe <= total && firstWrite == 0; probe++ {
				p := newWorld(t, c)
				p.failFrom = probe
				_, _ = migrate.Run(context.Background(), p.options(c.grow))
				if p.writes > 0 {
					firstWrite = probe
				}
			}
			seen := map[apiv1.MigrationPhase]bool{}
			for kill := 1; kill <= total; kill++ {
				for _, pause := range []int{0, 25} {
					if pause > 0 && kill < firstWrite {
						continue // killed while planning: nothing under way for time to move
					}
					name := fmt.Sprintf("killed-at-%d/ticks-%d", kill, pause)
					w := newWorld(t, c)
					w.failFrom = kill
					first, err := migrate.Run(context.Background(), w.options(c.grow))
					if err == nil && first != nil && first.Result != apiv1.MigrationIncomplete {
						t.Errorf("%s: killed at request %d of %d, the run ended %s with no error", name, kill, total, first.Result)
					}
					if first != nil {
						seen[first.Phase] = true
					}
					w.failFrom = 0
					for range pause {
						w.tick()
					}
					again, err := migrate.Run(context.Background(), w.options(c.grow))
					switch {
					case err != nil:
						t.Errorf("%s: run again: %v", name, err)
					case again.Result == apiv1.NothingToMigrate:
						// Killed once the copy was removed: done before; checkDone says so.
						seen[apiv1.PhaseDone] = true
					case again.Result != apiv1.Migrated:
						t.Errorf("%s: run again: %s: %s", name, again.Result, again.Message)
					}
					w.checkDone(c.grow)
					if len(w.bad) > 0 {
						t.Errorf("%s:\n  %s", name, strings.Join(w.bad, "\n  "))
					}
				}
			}
			// Every phase was reached by some interruption.
			for _, phase := range []apiv1.MigrationPhase{apiv1.PhaseNotStarted, apiv1.PhaseSaved, apiv1.PhaseDeleted, apiv1.PhaseCreated, apiv1.PhaseProven, apiv1.PhaseDone} {
				if !seen[phase] {
					t.Errorf("no interruption stopped in phase %s (seen %v)", phase, seen)
				}
			}
			if c.hold > 0 && !seen[apiv1.PhaseDeleting] {
				t.Errorf("no interruption stopped while the delete was held")
			}
		})
	}
}

// killedAfterSave runs a migration killed right after it saved the copy (before the delete).
func killedAfterSave(t *testing.T) *world {
	t.Helper()
	for kill := 1; kill < 200; kill++ {
		w := newWorld(t, sweepCase{})
		w.failFrom = kill
		_, _ = migrate.Run(context.Background(), w.options(false))
		if w.saved() != nil {
			w.failFrom = 0
			return w
		}
	}
	t.Fatal("no run saved the copy")
	return nil
}

// TestResume: with a migration under way, a file or flags asking for another spec are refused
// and change nothing; the command with no file or flags resumes and finishes it; --status says
// where it stands.
func TestResume(t *testing.T) {
	w := killedAfterSave(t)
	st, err := migrate.Status(context.Background(), w.options(false))
	if err != nil || st.Result != apiv1.MigrationInProgress || st.Phase != apiv1.PhaseSaved || st.SavedCopy != "shop/stsdiag-migrate-web" {
		t.Fatalf("status: %v %+v", err, st)
	}
	other := w.options(false)
	other.ServiceName = ptr.To("web-headless")
	res, err := migrate.Run(context.Background(), other)
	if err != nil || res.Result != apiv1.MigrationRefused || len(res.Refusals) != 1 || res.Refusals[0].Reason != "OtherMigration" {
		t.Fatalf("another spec: %v %+v", err, res)
	}
	if set := w.set(); set == nil || set.UID != "old-uid" || set.DeletionTimestamp != nil {
		t.Fatalf("the refused run changed the StatefulSet: %+v", set)
	}
	resume := w.options(false)
	resume.PodManagementPolicy = ""
	res, err = migrate.Run(context.Background(), resume)
	if err != nil || res.Result != apiv1.Migrated {
		t.Fatalf("resume: %v %+v", err, res)
	}
	w.checkDone(false)
	if len(w.bad) > 0 {
		t.Error(strings.Join(w.bad, "\n"))
	}
	st, err = migrate.Status(context.Background(), w.options(false))
	if err != nil || st.Result != apiv1.MigrationNone {
		t.Fatalf("status at the end: %v %+v", err, st)
	}
}
