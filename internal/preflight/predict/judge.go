package predict

import (
	"fmt"
	"sort"
	"strings"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// Cluster is what every StatefulSet of the input meets.
type Cluster struct {
	Now           time.Time
	ServerVersion string
	OpenShift     bool
	Nodes         []corev1.Node
	// NodesListed is false when the nodes could not be read: scheduling is not judged.
	NodesListed bool
	// PodsOn reads the pods bound to a node (Scheduler.PodsOn).
	PodsOn               func(node string) ([]corev1.Pod, error)
	StorageClasses       []storagev1.StorageClass
	StorageClassesListed bool
	// ControllerManager is kube-controller-manager's leader Lease as read (nil: not read): not
	// renewed, no rollout progresses (check's ControllerManagerNotRunning).
	ControllerManager *stuck.ControllerManagerLease
}

// Namespace is one namespace of the input: what it holds now, and what the manifests add.
type Namespace struct {
	Name string
	// Exists is false when the namespace does not exist yet: the API server could not be asked.
	Exists bool
	// Objects are what the namespace holds now, as check reads them (stuck's snapshot).
	Objects     *stuck.Objects
	Quotas      []corev1.ResourceQuota
	LimitRanges []corev1.LimitRange
	// PodsFromStatus: the pods of the input's StatefulSets were not read but predicted from their
	// settled statuses (SettledPods); no other pod of the namespace is known.
	PodsFromStatus bool
	// The manifests' Services, ResourceQuotas and ImageStreams count as existing.
	ManifestServices []corev1.Service
	ManifestQuotas   []corev1.ResourceQuota
	ManifestStreams  []imagev1.ImageStream
}

// Set is one StatefulSet of the input and what the cluster answered for it.
type Set struct {
	Source string
	// Manifest is the StatefulSet as the manifests write it, its namespace set.
	Manifest *appsv1.StatefulSet
	// Live is the StatefulSet as it exists; nil for a new one.
	Live *appsv1.StatefulSet
	// Refused is the API server's refusal of the dry-run apply; Applied, otherwise, the
	// StatefulSet as the dry run returned it (defaults and admission's changes).
	Refused *ApplyRefusal
	Applied *appsv1.StatefulSet
	// Unasked: the namespace does not exist yet, so the API server was not asked; Applied is the
	// manifest as written (no defaults, no admission).
	Unasked bool
	// Revision is the update revision the controller makes for the applied template; Current
	// the revision pods below the partition are created from.
	Revision Revision
	Current  string
	Plan     []Planned
	// Admission holds the dry-run answers for the first planned pod of each revision.
	Admission map[string]*PodAnswer
	// Pulls are the applied template's images; Images what their registries answered (same
	// order), set by the caller.
	Pulls  []Pull
	Images []Image
}

// PodAnswer is the API server's answer to the dry-run create of one pod and its new claims.
type PodAnswer struct {
	Pod string
	// Admitted is the pod as admission left it (nil when refused, or when a pod of its name
	// exists: the create then ends in AlreadyExists after admission admitted it).
	Admitted *corev1.Pod
	// Error is the refusal ("" when admitted).
	Error  string
	Claims []ClaimAnswer
}

// ClaimAnswer is the API server's answer to the dry-run create of one claim.
type ClaimAnswer struct {
	Claim    string
	Admitted *corev1.PersistentVolumeClaim
	Error    string
}

// Options tune the judgement.
type Options struct {
	// Diagnosis are check's options, for the pods the apply meets (kubernetes#67250).
	Diagnosis stuck.Options
}

// Result is preflight's answer.
type Result struct {
	Sets     []apiv1.PreflightStatefulSet
	Findings []stuck.Finding
	Warnings []string
	Rules    stuck.Rules
}

// Judge answers, for every StatefulSet of the input (sets, in the input's order), whether the
// rollout its apply starts would finish by itself, and why not. It is pure but for
// Cluster.PodsOn.
func Judge(c Cluster, namespaces map[string]*Namespace, sets []*Set, opts Options) Result {
	cli := opts.Diagnosis.CLI
	if cli == "" {
		cli = "kubectl"
		if c.OpenShift {
			cli = "oc"
		}
	}
	var res Result
	quotas := map[string]*Quotas{}
	for name, ns := range namespaces {
		quotas[name] = NewQuotas(ns.Quotas, ns.ManifestQuotas, ns.Objects.Pods, ns.Objects.PVCs, c.Now)
	}
	sched := &Scheduler{Nodes: c.Nodes, PodsOn: c.PodsOn}
	if !c.NodesListed {
		res.Warnings = append(res.Warnings, "scheduling not judged: the nodes could not be listed")
	}
	placements := map[*Set]map[int]string{}
	for _, s := range sets {
		ns := namespaces[s.Manifest.Namespace]
		if s.Refused != nil {
			f := newFinding(s, "", nil, apiv1.SeverityError, s.Refused.Reason, *s.Refused)
			f.Details.ApplyError, f.Details.Causes, f.Details.Policy = s.Refused.Error, s.Refused.Causes, s.Refused.Policy
			res.Findings = append(res.Findings, f)
			continue
		}
		var findings []stuck.Finding
		findings, placements[s] = createPods(c, ns, s, quotas[ns.Name], sched, func(w string) { res.Warnings = append(res.Warnings, w) })
		findings = append(findings, imageFindings(s)...)
		if f := partitionHolds(s); f != nil {
			findings = append(findings, *f)
		}
		res.Findings = append(res.Findings, findings...)
	}
	if c.ControllerManager != nil && c.ControllerManager.State(c.Now) == stuck.LeaseNotRenewed {
		// No StatefulSet controller runs: no rollout the apply starts progresses (check's words).
		lease := stuck.Diagnose(&stuck.Objects{Now: c.Now, ServerVersion: c.ServerVersion, ControllerManager: c.ControllerManager}, opts.Diagnosis)
		res.Findings = append(res.Findings, lease.Findings...)
	}
	trap, rules := trapFindings(c, namespaces, sets, opts.Diagnosis, cli)
	res.Rules = rules
	own := map[string]bool{}
	for _, f := range res.Findings {
		own[findingKey(f)] = true
	}
	for _, f := range trap {
		// The same cause said of the same pod (a pod refused now, and predicted refused again) is
		// said once: the prediction.
		if !own[findingKey(f)] {
			res.Findings = append(res.Findings, f)
		}
	}
	for i := range res.Findings {
		if res.Findings[i].Facts != nil && res.Findings[i].Message == "" {
			Word(&res.Findings[i], cli)
		}
	}
	sort.SliceStable(res.Findings, func(i, j int) bool { return apiv1.FindingLess(&res.Findings[i].Finding, &res.Findings[j].Finding) })
	for _, s := range sets {
		res.Sets = append(res.Sets, summary(s, placements[s], res.Findings))
	}
	return res
}

func findingKey(f stuck.Finding) string {
	return f.Namespace + "/" + f.StatefulSet + "/" + f.Pod + "/" + string(f.Code)
}

// createPods walks the pods the controller would create, in its order, as each meets admission,
// the quota count, its claims' classes and the scheduler; it reports the first pod that would
// not come up (under OrderedReady the controller goes no further; under Parallel the others are
// created, and a finding on the first is what keeps the rollout from finishing).
func createPods(c Cluster, ns *Namespace, s *Set, q *Quotas, sched *Scheduler, warn func(string)) ([]stuck.Finding, map[int]string) {
	nodes := map[int]string{}
	ordered := s.Applied.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	asked := map[string]bool{}
	classes := storageClasses(c)
	for i, p := range s.Plan {
		blocked := blockedAfter(s.Plan, i, ordered)
		answer := s.Admission[p.Revision]
		first := answer != nil && !asked[p.Revision]
		asked[p.Revision] = true
		for k := range p.Claims {
			claim := &p.Claims[k]
			if answer != nil {
				if a := claimAnswer(answer, k, first); a != nil && a.Error != "" && !exceededQuota(a.Error) {
					r := facts.NewRefusal(facts.KindClaim, claim.Name, p.Name, s.Manifest.Name, a.Error)
					return []stuck.Finding{createFailed(s, p, r, blocked, ordered)}, nodes
				} else if a != nil && a.Admitted != nil {
					claim = a.Admitted
				}
			}
			if r := q.Claim(claim, p.Name, s.Manifest.Name); r != nil {
				return []stuck.Finding{createFailed(s, p, *r, blocked, ordered)}, nodes
			}
			if f := claimPends(c, classes, s, p, claim, blocked, ordered); f != nil {
				return []stuck.Finding{*f}, nodes
			}
		}
		if answer != nil && answer.Error != "" && !exceededQuota(answer.Error) {
			r := facts.NewRefusal(facts.KindPod, p.Name, p.Name, s.Manifest.Name, answer.Error)
			return []stuck.Finding{createFailed(s, p, r, blocked, ordered)}, nodes
		}
		pod := effectivePod(p, answer, ns.LimitRanges)
		if r := q.Pod(pod, p.Old, s.Manifest.Name); r != nil {
			return []stuck.Finding{createFailed(s, p, *r, blocked, ordered)}, nodes
		}
		if !c.NodesListed {
			continue
		}
		place, err := sched.Place(pod, p.Old)
		if err != nil {
			warn(fmt.Sprintf("scheduling of %s/%s not judged: %s", ns.Name, p.Name, text.FirstLine(err)))
			continue
		}
		if !place.Fits {
			f := newFinding(s, p.Name, &p, apiv1.SeverityError, "Unschedulable", Unschedulable{Pod: p.Name, Ordinal: p.Ordinal,
				Message: place.Message, Reasons: place.Reasons, Blocked: blocked, Ordered: ordered, Replace: p.Action == apiv1.PodReplace})
			f.Details.NodeReasons = place.Reasons
			return []stuck.Finding{f}, nodes
		}
		nodes[p.Ordinal] = place.Node
	}
	return nil, nodes
}

// claimAnswer is the dry-run answer for the k-th new claim of a pod: asked for the first pod of
// each revision only (the others' claims differ by name alone).
func claimAnswer(a *PodAnswer, k int, first bool) *ClaimAnswer {
	if k < len(a.Claims) && (first || a.Claims[k].Error != "") {
		return &a.Claims[k]
	}
	return nil
}

// exceededQuota: admission's quota count of one object alone; preflight counts every object
// (Quotas), and a dry run of a replacement is counted while its predecessor still uses quota.
func exceededQuota(apiError string) bool { return strings.Contains(apiError, "exceeded quota:") }

// effectivePod is a planned pod as admission would leave it: the dry run's answer for the first
// pod of its revision (the others differ only by name, hostname and their identity labels), or
// the pod with its namespace's LimitRange defaults when no answer holds it.
func effectivePod(p Planned, a *PodAnswer, limitRanges []corev1.LimitRange) *corev1.Pod {
	if a != nil && a.Admitted != nil {
		pod := a.Admitted.DeepCopy()
		pod.Name = p.Name
		return pod
	}
	pod := p.Pod.DeepCopy()
	DefaultResources(pod, limitRanges)
	return pod
}

// DefaultResources sets what LimitRanger admission sets for the containers of a pod
// (defaultContainerResourceRequirements and mergeContainerResources,
// plugin/pkg/admission/limitranger/admission.go@v1.37.2): each Container-type limit's default
// and defaultRequest where the container sets none.
func DefaultResources(pod *corev1.Pod, limitRanges []corev1.LimitRange) {
	for _, lr := range limitRanges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
				for i := range list {
					r := &list[i].Resources
					if r.Limits == nil {
						r.Limits = corev1.ResourceList{}
					}
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					for name, v := range item.Default {
						if _, ok := r.Limits[name]; !ok {
							r.Limits[name] = v.DeepCopy()
						}
					}
					for name, v := range item.DefaultRequest {
						if _, ok := r.Requests[name]; !ok {
							r.Requests[name] = v.DeepCopy()
						}
					}
				}
			}
		}
	}
}

// blockedAfter lists the pods after index i that wait under OrderedReady: those to create are
// not created, those to replace not updated.
func blockedAfter(plan []Planned, i int, ordered bool) []facts.Blocked {
	if !ordered {
		return nil
	}
	var out []facts.Blocked
	for _, p := range plan[i+1:] {
		why := facts.NotCreated
		if p.Action == apiv1.PodReplace {
			why = facts.NotUpdated
		}
		out = append(out, facts.Blocked{Pod: p.Name, Why: why})
	}
	return out
}

func storageClasses(c Cluster) map[string]*storagev1.StorageClass {
	if !c.StorageClassesListed {
		return nil
	}
	out := map[string]*storagev1.StorageClass{}
	for i := range c.StorageClasses {
		out[c.StorageClasses[i].Name] = &c.StorageClasses[i]
	}
	return out
}

// claimPends reports a new claim that would not bind: it names no class and there is no default
// (the DefaultStorageClass admission plugin sets none), or the class it names does not exist —
// the cases check reports as certain (claimPendingReason, stuck/pod.go). Without the
// StorageClasses, claims are not judged.
func claimPends(c Cluster, classes map[string]*storagev1.StorageClass, s *Set, p Planned, claim *corev1.PersistentVolumeClaim, blocked []facts.Blocked, ordered bool) *stuck.Finding {
	if classes == nil {
		return nil
	}
	fx := ClaimWouldPend{Claim: claim.Name, Pod: p.Name, Ordinal: p.Ordinal, Blocked: blocked, Ordered: ordered}
	switch {
	case claim.Spec.StorageClassName == nil:
		for _, sc := range classes {
			if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" || sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true" {
				return nil
			}
		}
		fx.Why = facts.NoDefaultClass
	case *claim.Spec.StorageClassName == "":
		return nil // bound to a PersistentVolume without class only: not judged
	default:
		if classes[*claim.Spec.StorageClassName] != nil {
			return nil
		}
		fx.Why, fx.Class = facts.ClassMissing, *claim.Spec.StorageClassName
	}
	f := newFinding(s, p.Name, &p, apiv1.SeverityError, "PersistentVolumeClaimPending", fx)
	f.Details.Claim, f.Details.StorageClass = claim.Name, fx.Class
	return &f
}

// createFailed is a pod (or its claim) the API server would refuse, worded by check's rules.
func createFailed(s *Set, p Planned, r facts.Refusal, blocked []facts.Blocked, ordered bool) stuck.Finding {
	f := newFinding(s, p.Name, &p, apiv1.SeverityError, string(r.Reason),
		facts.CreateFailed{Pod: p.Name, Ordinal: p.Ordinal, Refusal: &r, Blocked: blocked, Ordered: ordered})
	f.Details.Object = "pod"
	if r.Kind == facts.KindClaim {
		f.Details.Object, f.Details.Claim = "claim", r.Name
	}
	f.Details.AdmissionError = r.Error
	if r.Quota != nil {
		f.Details.Quota, f.Details.ShortBy = r.Quota.Name, r.Quota.Short
	}
	f.Details.Checks, f.Details.ServiceAccount, f.Details.Policy = r.Checks, r.ServiceAccount, r.Policy
	f.Details.Reason = f.Reason
	return f
}

// newFinding starts a finding of s, about pod (planned p) when it names one.
func newFinding(s *Set, pod string, p *Planned, sev apiv1.Severity, reason string, fx facts.Facts) stuck.Finding {
	f := stuck.Finding{Finding: apiv1.Finding{Code: fx.Code(), Severity: sev, Reason: reason,
		Namespace: s.Manifest.Namespace, StatefulSet: s.Manifest.Name, Pod: pod}, Facts: fx}
	if s.Revision.Name != "" {
		f.Details.UpdateRevision = s.Revision.Name
	}
	if p != nil {
		f.Details.Ordinal = ptr.To(p.Ordinal)
		f.Details.TargetRevision = ptr.To(p.Revision)
	}
	return f
}

// imageFindings: an image the registry does not hold (or whose pull secrets it refuses) keeps
// the revision's pods from starting (check's CurrentRevisionFailing, ErrImagePull); one that
// could not be verified is a warning.
func imageFindings(s *Set) []stuck.Finding {
	var first *Planned
	for i := range s.Plan {
		if s.Plan[i].Revision == s.Revision.Name {
			first = &s.Plan[i]
			break
		}
	}
	if first == nil {
		return nil
	}
	ordered := s.Applied.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	var out []stuck.Finding
	for _, img := range s.Images {
		img.Pod, img.Ordinal, img.Revision, img.Ordered = first.Name, first.Ordinal, first.Revision, ordered
		for i := range s.Plan {
			if &s.Plan[i] == first {
				img.Blocked = blockedAfter(s.Plan, i, ordered)
			}
		}
		var f stuck.Finding
		switch {
		case img.Check == apiv1.ImageNotFound || (img.Check == apiv1.ImageUnauthorized && img.SecretsTried):
			f = newFinding(s, first.Name, first, apiv1.SeverityError, "ErrImagePull", ImageMissing{img})
		case img.Check == apiv1.ImageUnreachable || img.Check == apiv1.ImageUnauthorized:
			f = newFinding(s, first.Name, first, apiv1.SeverityWarning, string(img.Check), ImageUnchecked{img})
		default:
			continue
		}
		f.Container, f.Image = img.Container, img.Image
		f.Details.InitContainer = img.Init
		f.Details.Registry, f.Details.RegistryAnswer = img.Registry, img.Answer
		out = append(out, f)
	}
	return out
}

// partitionHolds: an update whose new revision the partition keeps from every pod.
func partitionHolds(s *Set) *stuck.Finding {
	set := s.Applied
	if s.Live == nil || s.Revision.Name == s.Live.Status.UpdateRevision || set.Spec.UpdateStrategy.RollingUpdate == nil ||
		set.Spec.UpdateStrategy.RollingUpdate.Partition == nil || (set.Spec.UpdateStrategy.Type != "" && set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType) {
		return nil
	}
	if set.Annotations[apiv1.AnnotationCanarySteps] != "" {
		return nil // a declared canary: check's canary findings say how it goes
	}
	partition, replicas := int(*set.Spec.UpdateStrategy.RollingUpdate.Partition), int(controller.Replicas(set))
	if partition < replicas {
		return nil
	}
	f := newFinding(s, "", nil, apiv1.SeverityWarning, "Partition", PartitionHolds{Revision: s.Revision.Name, Partition: partition, Replicas: replicas})
	f.Details.Partition, f.Details.Replicas = ptr.To(partition), ptr.To(replicas)
	return &f
}

// summary is one StatefulSet's line of the document.
func summary(s *Set, nodes map[int]string, findings []stuck.Finding) apiv1.PreflightStatefulSet {
	out := apiv1.PreflightStatefulSet{Namespace: s.Manifest.Namespace, Name: s.Manifest.Name, Source: s.Source,
		Replicas: controller.Replicas(s.Manifest), Pods: []apiv1.PreflightPod{}, Images: []apiv1.PreflightImage{}, Status: apiv1.PreflightClear}
	if s.Live != nil {
		out.CurrentRevision = s.Live.Status.CurrentRevision
	}
	switch {
	case s.Refused != nil:
		out.Change = apiv1.ChangeRefused
	case s.Live == nil:
		out.Change = apiv1.ChangeCreate
	case s.Revision.Name != s.Live.Status.UpdateRevision:
		out.Change = apiv1.ChangeRollout
	default:
		out.Change = apiv1.ChangeNoRollout
	}
	if s.Applied != nil {
		out.Replicas = controller.Replicas(s.Applied)
		out.UpdateRevision = s.Revision.Name
	}
	if s.Unasked {
		out.UpdateRevision = "" // named from the manifest without the API server's defaults: not the controller's
	}
	for _, p := range s.Plan {
		pod := apiv1.PreflightPod{Name: p.Name, Ordinal: p.Ordinal, Action: p.Action, Revision: p.Revision, Node: nodes[p.Ordinal]}
		if s.Unasked {
			pod.Revision = ""
		}
		out.Pods = append(out.Pods, pod)
	}
	for _, img := range s.Images {
		out.Images = append(out.Images, apiv1.PreflightImage{Container: img.Container, InitContainer: img.Init, Image: img.Image,
			Pulled: img.Pulled, Check: img.Check, Digest: digestOf(img), Answer: img.Answer})
	}
	for _, f := range findings {
		// A finding of no StatefulSet (no controller runs) holds every one back.
		if ((f.Namespace == out.Namespace && f.StatefulSet == out.Name) || f.StatefulSet == "") && f.Blocking() {
			out.Status = apiv1.PreflightWouldNotFinish
			out.Message = strings.Join(strings.Fields(string(f.Code)+" "+f.Pod), " ") + ": " + f.Short
			return out
		}
	}
	out.Message = planWords(s, out.Change)
	return out
}

func digestOf(img Image) string {
	if i := strings.Index(img.Pulled, "@"); i >= 0 && img.Check != apiv1.ImageNotFound {
		return img.Pulled[i+1:]
	}
	return ""
}

// planWords says what the apply does, for a StatefulSet no error finding concerns.
func planWords(s *Set, change apiv1.PreflightChange) string {
	var creates, replaces []string
	for _, p := range s.Plan {
		if p.Action == apiv1.PodReplace {
			replaces = append(replaces, p.Name)
		} else {
			creates = append(creates, p.Name)
		}
	}
	var parts []string
	for _, p := range s.Pulls {
		if p.Written != p.Image {
			parts = append(parts, fmt.Sprintf("admission writes %s for %s", p.Written, p.Image))
		}
	}
	if len(creates) > 0 {
		parts = append(parts, "creates "+strings.Join(creates, ", "))
	}
	if len(replaces) > 0 {
		parts = append(parts, "replaces "+strings.Join(replaces, ", ")+" with revision "+s.Revision.Name)
	}
	if len(parts) == 0 {
		if change == apiv1.ChangeRollout {
			return "makes revision " + s.Revision.Name + "; no pod changes by itself"
		}
		return "no pod changes"
	}
	return strings.Join(parts, "; ")
}

// trapFindings diagnoses, with check's rules, each namespace as the apply leaves it: the
// StatefulSets replaced by their applied versions, observed by the controller with the new
// update revision, and the pods as they are. A pod stuck at startup on an older revision that
// the controller will not replace (kubernetes#67250), OnDelete pods, a paused canary, an image
// name OpenShift's lookup would not resolve, a missing governing Service: check's findings, with
// the remedy said for after the apply.
func trapFindings(c Cluster, namespaces map[string]*Namespace, sets []*Set, opts stuck.Options, cli string) ([]stuck.Finding, stuck.Rules) {
	byNS := map[string][]*Set{}
	for _, s := range sets {
		if s.Refused == nil {
			byNS[s.Manifest.Namespace] = append(byNS[s.Manifest.Namespace], s)
		}
	}
	var out []stuck.Finding
	rules, _ := stuck.RulesFor(c.ServerVersion, opts.FeatureGates)
	names := make([]string, 0, len(byNS))
	for name := range byNS {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		objs := predicted(c, namespaces[name], byNS[name])
		res := stuck.Diagnose(objs, opts)
		rules = res.Rules
		for _, f := range res.Findings {
			if f.Code == apiv1.StaleRevisionStuck {
				f.Remedy = fmt.Sprintf("apply, then %s (or %s stsdiag fix %s -n %s)", f.Remedy, cli, f.StatefulSet, f.Namespace)
			}
			out = append(out, f)
		}
	}
	return out, rules
}

// predicted is the namespace as the apply leaves it, for stuck.Diagnose.
func predicted(c Cluster, ns *Namespace, sets []*Set) *stuck.Objects {
	objs := *ns.Objects
	objs.Now, objs.ServerVersion, objs.OpenShift = c.Now, c.ServerVersion, c.OpenShift
	objs.Nodes, objs.NodesListed = c.Nodes, c.NodesListed
	objs.StorageClasses, objs.StorageClassesListed = c.StorageClasses, c.StorageClassesListed
	objs.Services = append(append([]corev1.Service(nil), ns.Objects.Services...), ns.ManifestServices...)
	objs.ImageStreams = append(append([]imagev1.ImageStream(nil), ns.Objects.ImageStreams...), ns.ManifestStreams...)
	objs.Shared, objs.Streams = nil, nil
	objs.StatefulSets = nil
	objs.Revisions = append([]appsv1.ControllerRevision(nil), ns.Objects.Revisions...)
	objs.Selected = map[types.NamespacedName]bool{}
	applied := map[string]*Set{}
	for _, s := range sets {
		applied[s.Manifest.Name] = s
		objs.Selected[types.NamespacedName{Namespace: ns.Name, Name: s.Manifest.Name}] = true
	}
	for _, live := range ns.Objects.StatefulSets {
		if applied[live.Name] == nil {
			objs.StatefulSets = append(objs.StatefulSets, live)
		}
	}
	for _, s := range sets {
		set := s.Applied.DeepCopy()
		for _, list := range [][]corev1.Container{set.Spec.Template.Spec.InitContainers, set.Spec.Template.Spec.Containers} {
			for i := range list {
				for _, p := range s.Pulls {
					if p.Container == list[i].Name {
						list[i].Image = p.Written
					}
				}
			}
		}
		if s.Live != nil {
			set.Status = *s.Live.Status.DeepCopy()
		} else {
			set.Status = appsv1.StatefulSetStatus{}
			set.CreationTimestamp = metav1.NewTime(c.Now)
		}
		set.Status.ObservedGeneration = set.Generation
		set.Status.UpdateRevision = s.Revision.Name
		if set.Status.CurrentRevision == "" {
			set.Status.CurrentRevision = s.Revision.Name
		}
		objs.StatefulSets = append(objs.StatefulSets, *set)
		if !s.Revision.Existing {
			objs.Revisions = append(objs.Revisions, newRevisionObject(set, s.Revision, ns.Objects.Revisions, c.Now))
		}
	}
	return &objs
}

// newRevisionObject is the ControllerRevision the controller would record (newRevision,
// stateful_set_utils.go:577-600@v1.37.2): the set's owner reference, the template's labels, the
// next revision number.
func newRevisionObject(set *appsv1.StatefulSet, r Revision, existing []appsv1.ControllerRevision, now time.Time) appsv1.ControllerRevision {
	next := int64(1)
	for _, e := range existing {
		if ownedBy(&e, set.UID) && e.Revision >= next {
			next = e.Revision + 1
		}
	}
	labels := map[string]string{}
	for k, v := range set.Spec.Template.Labels {
		labels[k] = v
	}
	labels[appsv1.ControllerRevisionHashLabelKey] = strings.TrimPrefix(r.Name, set.Name+"-")
	return appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: set.Namespace, Labels: labels, CreationTimestamp: metav1.NewTime(now),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Data:     runtime.RawExtension{Raw: r.Data},
		Revision: next,
	}
}
