// Package migration is the pure core of `stsdiag migrate`: what differs between a running
// StatefulSet and the one asked for, whether it can be migrated (recreating the object while its
// pods and claims stay), the object to create, the saved copy, and — read from the cluster at any
// moment — where a migration stands and its next step, with the proof that the new StatefulSet
// adopted the pods. It reads objects and returns facts; package migrate reads and writes.
//
// What it relies on, in the StatefulSet controller of k8s.io/kubernetes v1.37.2:
//   - adoption: every sync first adopts the orphaned ControllerRevisions its selector matches
//     (pkg/controller/statefulset/stateful_set.go:418-435, called at :569), then the orphaned pods
//     its selector matches whose name is one of its own (getPodsForStatefulSet :387-400, ClaimPods
//     in pkg/controller/controller_ref_manager.go:183; ClaimObject :101-125 skips pods being
//     deleted), once a fresh read shows the StatefulSet of that UID not being deleted
//     (canAdoptFunc :404-415). Adopting is a patch of the pod's ownerReferences: no restart.
//   - revisions: a revision's data is the pod template alone (getPatch,
//     stateful_set_utils.go:552-571); the update revision of a new object is the existing
//     revision whose data equals its template's (getStatefulSetRevisions,
//     stateful_set_control.go:291-316; EqualRevision compares the data,
//     pkg/controller/history/controller_history.go:155-160), so the running template keeps the
//     revision's name and every pod's controller-revision-hash; a status naming no current
//     revision starts the history at the update revision (stateful_set_control.go:326-329).
//   - OnDelete: the controller replaces no pod for an update (stateful_set_control.go:727-730);
//     migrate creates the new object so until the adoption is proven.
//   - a Failed or Succeeded pod is deleted and recreated whatever the strategy (:429-436).
package migration

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// Reason says why a migration is refused.
type Reason string

// Reasons of a refusal.
const (
	SelectorChanged        Reason = "SelectorChanged"
	ClaimTemplateChanged   Reason = "ClaimTemplateChanged"
	ClaimShrink            Reason = "ClaimShrink"
	ClaimNotExpandable     Reason = "ClaimNotExpandable"
	ClaimNotBound          Reason = "ClaimNotBound"
	GitOpsManaged          Reason = "GitOpsManaged"
	ControlledByOwner      Reason = "ControlledByOwner"
	PartitionedRollout     Reason = "PartitionedRollout"
	PodTerminating         Reason = "PodTerminating"
	StatefulSetTerminating Reason = "StatefulSetTerminating"
	NotObserved            Reason = "NotObserved"
	TemplateRewritten      Reason = "TemplateRewritten"
	OtherMigration         Reason = "OtherMigration"
	NameMismatch           Reason = "NameMismatch"
)

// Refusal is one reason a migration is refused, with its facts.
type Refusal struct {
	Reason Reason
	// Field is the field concerned, when one is.
	Field string
	// Object names the object concerned (a claim, a pod, a StorageClass, an owner).
	Object string
	// Key and Value are a label or annotation (GitOpsManaged), or the value that differs.
	Key, Value string
	// From and To are the values before and after (ClaimShrink, TemplateRewritten).
	From, To string
	// Manager names who manages the object (GitOpsManaged): Argo CD, Flux, Helm.
	Manager string
	// Detail is a fact in the API server's or the object's words (a class without
	// allowVolumeExpansion, a StorageClass that could not be read).
	Detail string
}

// NoteKind names a consequence of a migration worth knowing.
type NoteKind string

// Notes.
const (
	// RolloutInProgress: current and update revisions differ; the new object's history starts at
	// the update revision.
	RolloutInProgress NoteKind = "RolloutInProgress"
	// ParallelCures67250: a pod is stuck on an old revision (kubernetes#67250) and the set moves
	// to Parallel, under which the controller replaces it by itself.
	ParallelCures67250 NoteKind = "ParallelCures67250"
	// SubdomainKept: serviceName changes; the existing pods keep their spec.subdomain.
	SubdomainKept NoteKind = "SubdomainKept"
	// TemplateRollsOut: the template asked for differs; it is applied after the proof, an
	// ordinary rollout.
	TemplateRollsOut NoteKind = "TemplateRollsOut"
	// ResizeByPlugin: claims grow; the volume plugin resizes them, migrate does not wait.
	ResizeByPlugin NoteKind = "ResizeByPlugin"
)

// Note is one consequence, with its facts.
type Note struct {
	Kind     NoteKind
	From, To string
}

// Growth is one existing claim whose storage request grows.
type Growth struct {
	Claim    string
	UID      types.UID
	From, To resource.Quantity
}

// Input is what a plan is made from: the running StatefulSet, the one asked for (normalized by
// the API server: a server-side dry-run create, so defaults are filled in), and the objects
// around them.
type Input struct {
	Running *appsv1.StatefulSet
	Desired *appsv1.StatefulSet
	// Created is the object migrate would create as the API server's admission and defaulting
	// return it (a server-side dry-run create); nil when not asked.
	Created *appsv1.StatefulSet
	// Pods are the running set's pods (its selector); Claims the namespace's claims.
	Pods   []corev1.Pod
	Claims []corev1.PersistentVolumeClaim
	// Classes are the StorageClasses by name; ClassesError why they could not be read.
	Classes      map[string]*storagev1.StorageClass
	ClassesError string
	// GitOpsPaused: the user says the GitOps controller or Helm release managing the set will not
	// sync it meanwhile (--gitops-paused).
	GitOpsPaused bool
	// StuckOnOldRevision: the diagnosis found a pod stuck on an old revision (kubernetes#67250).
	StuckOnOldRevision bool
}

// Plan is what a migration would do, or why it would not.
type Plan struct {
	Changes  []apiv1.FieldChange
	Refusals []Refusal
	Growths  []Growth
	Notes    []Note
	// Final is the StatefulSet asked for, ready to create (no UID, status or server fields): the
	// end state. Create is the object created first (the running template, OnDelete).
	Final  *appsv1.StatefulSet
	Create *appsv1.StatefulSet
	// Running is the StatefulSet planned on.
	Running *appsv1.StatefulSet
}

// Migrates reports whether a field Kubernetes forbids changing in place differs.
func (p *Plan) Migrates() bool {
	return slices.ContainsFunc(p.Changes, func(c apiv1.FieldChange) bool { return c.Immutable })
}

// Make plans the migration of in.Running to in.Desired.
func Make(in Input) *Plan {
	p := &Plan{Running: in.Running}
	run, want := in.Running, in.Desired
	if want.Name != run.Name || (want.Namespace != "" && want.Namespace != run.Namespace) {
		p.Refusals = append(p.Refusals, Refusal{Reason: NameMismatch, Object: want.Namespace + "/" + want.Name, Value: run.Namespace + "/" + run.Name})
		return p
	}
	if !apiequality.Semantic.DeepEqual(run.Spec.Selector, want.Spec.Selector) {
		p.Refusals = append(p.Refusals, Refusal{Reason: SelectorChanged, Field: "spec.selector",
			From: metav1.FormatLabelSelector(run.Spec.Selector), To: metav1.FormatLabelSelector(want.Spec.Selector)})
	}
	if a, b := policy(run), policy(want); a != b {
		p.Changes = append(p.Changes, apiv1.FieldChange{Field: "spec.podManagementPolicy", From: a, To: b, Immutable: true})
	}
	if run.Spec.ServiceName != want.Spec.ServiceName {
		p.Changes = append(p.Changes, apiv1.FieldChange{Field: "spec.serviceName", From: run.Spec.ServiceName, To: want.Spec.ServiceName, Immutable: true})
		p.Notes = append(p.Notes, Note{Kind: SubdomainKept, From: run.Spec.ServiceName, To: want.Spec.ServiceName})
	}
	sizes := p.claimTemplates(run, want)
	p.mutable(run, want)
	p.refuseManaged(in)
	p.growths(in, sizes)
	p.Final = finalObject(run, want)
	p.Create = CreateObject(p.Final, Clean(run), run.UID)
	if in.Created != nil && !apiequality.Semantic.DeepEqual(in.Created.Spec.Template, run.Spec.Template) {
		from, to := firstDifference(run.Spec.Template, in.Created.Spec.Template)
		p.Refusals = append(p.Refusals, Refusal{Reason: TemplateRewritten, Field: "spec.template", From: from, To: to})
	}
	if run.Status.CurrentRevision != run.Status.UpdateRevision && run.Status.CurrentRevision != "" {
		p.Notes = append(p.Notes, Note{Kind: RolloutInProgress, From: run.Status.CurrentRevision, To: run.Status.UpdateRevision})
	}
	if in.StuckOnOldRevision && policy(want) == string(appsv1.ParallelPodManagement) && policy(run) != policy(want) {
		p.Notes = append(p.Notes, Note{Kind: ParallelCures67250})
	}
	return p
}

func policy(set *appsv1.StatefulSet) string {
	if set.Spec.PodManagementPolicy == "" {
		return string(appsv1.OrderedReadyPodManagement)
	}
	return string(set.Spec.PodManagementPolicy)
}

// claimTemplates compares the claim templates: only a storage request may change (a growth, an
// immutable change); it returns the new size of each template that grows.
func (p *Plan) claimTemplates(run, want *appsv1.StatefulSet) map[string]resource.Quantity {
	field := func(name string) string { return "spec.volumeClaimTemplates[" + name + "]" }
	running := map[string]*corev1.PersistentVolumeClaim{}
	for i := range run.Spec.VolumeClaimTemplates {
		running[run.Spec.VolumeClaimTemplates[i].Name] = &run.Spec.VolumeClaimTemplates[i]
	}
	sizes := map[string]resource.Quantity{}
	seen := map[string]bool{}
	for i := range want.Spec.VolumeClaimTemplates {
		w := &want.Spec.VolumeClaimTemplates[i]
		seen[w.Name] = true
		r := running[w.Name]
		if r == nil {
			p.Refusals = append(p.Refusals, Refusal{Reason: ClaimTemplateChanged, Field: field(w.Name), Value: "added"})
			continue
		}
		from, to := r.Spec.Resources.Requests[corev1.ResourceStorage], w.Spec.Resources.Requests[corev1.ResourceStorage]
		a, b := claimTemplateShape(r), claimTemplateShape(w)
		if !apiequality.Semantic.DeepEqual(a, b) {
			what, _ := firstDifference(a, b)
			p.Refusals = append(p.Refusals, Refusal{Reason: ClaimTemplateChanged, Field: field(w.Name), Value: what})
		}
		switch c := to.Cmp(from); {
		case c < 0:
			p.Refusals = append(p.Refusals, Refusal{Reason: ClaimShrink, Field: field(w.Name) + ".spec.resources.requests.storage", From: from.String(), To: to.String()})
		case c > 0:
			p.Changes = append(p.Changes, apiv1.FieldChange{Field: field(w.Name) + ".spec.resources.requests.storage", From: from.String(), To: to.String(), Immutable: true})
			sizes[w.Name] = to
		}
	}
	for name := range running {
		if !seen[name] {
			p.Refusals = append(p.Refusals, Refusal{Reason: ClaimTemplateChanged, Field: field(name), Value: "removed"})
		}
	}
	sort.Slice(p.Refusals, func(i, j int) bool { return p.Refusals[i].Field < p.Refusals[j].Field })
	return sizes
}

// claimTemplateShape is a claim template without its storage request and status: what must not
// change (a new template, class or access mode would not match the existing claims; the
// controller only checks that each pod has a volume of each template's name, storageMatches in
// stateful_set_utils.go:148-167@v1.37.2).
func claimTemplateShape(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	s := c.DeepCopy()
	s.Status = corev1.PersistentVolumeClaimStatus{}
	s.TypeMeta = metav1.TypeMeta{}
	if s.Spec.Resources.Requests != nil {
		delete(s.Spec.Resources.Requests, corev1.ResourceStorage)
		if len(s.Spec.Resources.Requests) == 0 {
			s.Spec.Resources.Requests = nil
		}
	}
	return s
}

// mutable records the fields Kubernetes changes in place that differ: applied after the proof.
func (p *Plan) mutable(run, want *appsv1.StatefulSet) {
	if !apiequality.Semantic.DeepEqual(run.Spec.Template, want.Spec.Template) {
		from, to := firstDifference(run.Spec.Template, want.Spec.Template)
		p.Changes = append(p.Changes, apiv1.FieldChange{Field: "spec.template", From: from, To: to})
		p.Notes = append(p.Notes, Note{Kind: TemplateRollsOut})
	}
	fields := []struct {
		name     string
		from, to any
	}{
		{"spec.replicas", run.Spec.Replicas, want.Spec.Replicas},
		{"spec.updateStrategy", run.Spec.UpdateStrategy, want.Spec.UpdateStrategy},
		{"spec.minReadySeconds", run.Spec.MinReadySeconds, want.Spec.MinReadySeconds},
		{"spec.revisionHistoryLimit", run.Spec.RevisionHistoryLimit, want.Spec.RevisionHistoryLimit},
		{"spec.ordinals", run.Spec.Ordinals, want.Spec.Ordinals},
		{"spec.persistentVolumeClaimRetentionPolicy", run.Spec.PersistentVolumeClaimRetentionPolicy, want.Spec.PersistentVolumeClaimRetentionPolicy},
	}
	for _, f := range fields {
		if !apiequality.Semantic.DeepEqual(f.from, f.to) {
			p.Changes = append(p.Changes, apiv1.FieldChange{Field: f.name, From: valueString(f.from), To: valueString(f.to)})
		}
	}
}

// refuseManaged refuses a set another controller or tool manages, one being deleted, one whose
// status is stale, a partitioned rollout under way, and a set with pods being deleted.
func (p *Plan) refuseManaged(in Input) {
	run := in.Running
	if ref := metav1.GetControllerOfNoCopy(run); ref != nil {
		p.Refusals = append(p.Refusals, Refusal{Reason: ControlledByOwner, Object: ref.Kind + "/" + ref.Name})
	}
	if !in.GitOpsPaused {
		for _, obj := range []*appsv1.StatefulSet{run, in.Desired} {
			if m, ok := managedBy(obj); ok {
				p.Refusals = append(p.Refusals, m)
				break
			}
		}
	}
	if run.DeletionTimestamp != nil {
		p.Refusals = append(p.Refusals, Refusal{Reason: StatefulSetTerminating, Object: run.Name, Detail: strings.Join(run.Finalizers, ", ")})
	}
	if run.Status.ObservedGeneration < run.Generation || run.Status.UpdateRevision == "" {
		p.Refusals = append(p.Refusals, Refusal{Reason: NotObserved, Value: strconv.FormatInt(run.Generation, 10), From: strconv.FormatInt(run.Status.ObservedGeneration, 10)})
	}
	if partition := rollingPartition(run); partition > 0 && run.Status.CurrentRevision != run.Status.UpdateRevision {
		p.Refusals = append(p.Refusals, Refusal{Reason: PartitionedRollout, Value: strconv.Itoa(int(partition)),
			From: run.Status.CurrentRevision, To: run.Status.UpdateRevision})
	}
	for i := range in.Pods {
		if in.Pods[i].DeletionTimestamp != nil {
			p.Refusals = append(p.Refusals, Refusal{Reason: PodTerminating, Object: in.Pods[i].Name})
		}
	}
}

func rollingPartition(set *appsv1.StatefulSet) int32 {
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType || set.Spec.UpdateStrategy.RollingUpdate == nil {
		return 0
	}
	return ptr.Deref(set.Spec.UpdateStrategy.RollingUpdate.Partition, 0)
}

// growths plans the patch of each existing claim of a template that grows: refused when the
// claim is not Bound (the API server allows a request to change only on a bound claim:
// pkg/apis/core/validation/validation.go:2596-2611@v1.37.2) or when its StorageClass does not
// allow expansion (plugin/pkg/admission/storage/persistentvolume/resize/admission.go:96-128).
func (p *Plan) growths(in Input, sizes map[string]resource.Quantity) {
	if len(sizes) > 0 {
		p.Notes = append(p.Notes, Note{Kind: ResizeByPlugin})
	}
	templates := make([]string, 0, len(sizes))
	for name := range sizes {
		templates = append(templates, name)
	}
	sort.Strings(templates)
	for _, tpl := range templates {
		to := sizes[tpl]
		for i := range in.Claims {
			claim := &in.Claims[i]
			if !ClaimOf(tpl, in.Running.Name, claim.Name) {
				continue
			}
			from := claim.Spec.Resources.Requests[corev1.ResourceStorage]
			if from.Cmp(to) >= 0 {
				continue
			}
			p.Growths = append(p.Growths, Growth{Claim: claim.Name, UID: claim.UID, From: from, To: to})
			if claim.Status.Phase != corev1.ClaimBound {
				p.Refusals = append(p.Refusals, Refusal{Reason: ClaimNotBound, Object: claim.Name, Value: string(claim.Status.Phase)})
				continue
			}
			class := ClassOf(claim)
			switch sc := in.Classes[class]; {
			case class == "":
				p.Refusals = append(p.Refusals, Refusal{Reason: ClaimNotExpandable, Object: claim.Name, Detail: "no StorageClass"})
			case in.ClassesError != "":
				p.Refusals = append(p.Refusals, Refusal{Reason: ClaimNotExpandable, Object: claim.Name, Key: class, Detail: in.ClassesError})
			case sc == nil:
				p.Refusals = append(p.Refusals, Refusal{Reason: ClaimNotExpandable, Object: claim.Name, Key: class, Detail: "not found"})
			case !ptr.Deref(sc.AllowVolumeExpansion, false):
				p.Refusals = append(p.Refusals, Refusal{Reason: ClaimNotExpandable, Object: claim.Name, Key: class, Detail: "allowVolumeExpansion is not true"})
			}
		}
	}
}

// ClaimOf reports whether claim is a claim of template tpl of StatefulSet set: the controller
// names it <template>-<set>-<ordinal> (getPersistentVolumeClaimName,
// stateful_set_utils.go:126-129@v1.37.2).
func ClaimOf(tpl, set, claim string) bool {
	rest, ok := strings.CutPrefix(claim, tpl+"-"+set+"-")
	if !ok || rest == "" {
		return false
	}
	_, err := strconv.ParseUint(rest, 10, 31)
	return err == nil
}

// ClassOf is a claim's StorageClass: spec.storageClassName, or the beta annotation older claims
// carry (GetPersistentVolumeClaimClass, pkg/apis/core/helper/helpers.go:500@v1.37.2).
func ClassOf(claim *corev1.PersistentVolumeClaim) string {
	if class, ok := claim.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return class
	}
	return ptr.Deref(claim.Spec.StorageClassName, "")
}

// managedBy reports the first GitOps marker on the object: Argo CD's tracking annotation or
// label, Flux's kustomize-controller or helm-controller labels, Helm's release annotations.
func managedBy(set *appsv1.StatefulSet) (Refusal, bool) {
	if set == nil {
		return Refusal{}, false
	}
	markers := []struct {
		manager, key string
		annotation   bool
	}{
		{"Argo CD", "argocd.argoproj.io/tracking-id", true},
		{"Argo CD", "argocd.argoproj.io/instance", false},
		{"Flux (kustomize-controller)", "kustomize.toolkit.fluxcd.io/name", false},
		{"Flux (helm-controller)", "helm.toolkit.fluxcd.io/name", false},
		{"Helm", "meta.helm.sh/release-name", true},
		{"Argo CD (label tracking) or a chart's instance label", "app.kubernetes.io/instance", false},
	}
	for _, m := range markers {
		values := set.Labels
		if m.annotation {
			values = set.Annotations
		}
		if v, ok := values[m.key]; ok {
			return Refusal{Reason: GitOpsManaged, Manager: m.manager, Key: m.key, Value: v}, true
		}
	}
	return Refusal{}, false
}

func valueString(v any) string {
	switch x := v.(type) {
	case *int32:
		if x == nil {
			return ""
		}
		return strconv.Itoa(int(*x))
	case int32:
		return strconv.Itoa(int(x))
	case appsv1.StatefulSetUpdateStrategy:
		s := string(x.Type)
		if r := x.RollingUpdate; r != nil {
			if r.Partition != nil {
				s += fmt.Sprintf(" partition=%d", *r.Partition)
			}
			if r.MaxUnavailable != nil {
				s += " maxUnavailable=" + r.MaxUnavailable.String()
			}
		}
		return s
	}
	return fmt.Sprintf("%v", jsonOf(v))
}
