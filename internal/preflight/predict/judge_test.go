package predict

import (
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// scenario is one StatefulSet of an input and the cluster it meets.
type scenario struct {
	live    *appsv1.StatefulSet
	pods    []corev1.Pod
	revs    []appsv1.ControllerRevision
	edit    func(*appsv1.StatefulSet)
	answer  func(s *Set)
	images  []Image
	refused *ApplyRefusal
	classes []storagev1.StorageClass
	lease   *stuck.ControllerManagerLease
}

// judge plans the manifest (webSet edited) against the scenario and judges it, as the use case
// does with the cluster's answers.
func (sc scenario) judge(t *testing.T) Result {
	t.Helper()
	set := webSet(3)
	set.Spec.VolumeClaimTemplates = nil
	set.Spec.Template.Spec.Volumes = nil
	set.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(int32(0))}}
	if sc.edit != nil {
		sc.edit(set)
	}
	s := &Set{Source: "web.yaml", Manifest: set, Live: sc.live, Refused: sc.refused}
	ns := &Namespace{Name: "shop", Exists: true, Objects: &stuck.Objects{Pods: sc.pods, Revisions: sc.revs}}
	if sc.live != nil {
		ns.Objects.StatefulSets = []appsv1.StatefulSet{*sc.live}
	}
	if sc.refused == nil {
		s.Applied = set.DeepCopy()
		s.Revision = Revision{Name: "web-new"}
		pods := map[int]*corev1.Pod{}
		for i := range sc.pods {
			pods[i] = &sc.pods[i]
		}
		current := ""
		if sc.live != nil {
			current = sc.live.Status.CurrentRevision
		}
		s.Plan = Plan(s.Applied, current, nil, s.Revision.Name, pods, nil)
		s.Images = sc.images
		if sc.answer != nil {
			sc.answer(s)
		}
	}
	c := Cluster{Now: now, ServerVersion: "v1.37.2", Nodes: []corev1.Node{node("n", list("cpu", "4", "pods", "110"), nil)}, NodesListed: true,
		PodsOn: func(string) ([]corev1.Pod, error) { return nil, nil }, StorageClasses: sc.classes, StorageClassesListed: true,
		ControllerManager: sc.lease}
	return Judge(c, map[string]*Namespace{"shop": ns}, []*Set{s}, Options{Diagnosis: stuck.DefaultOptions()})
}

func livePod(name, rev string, ready bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		Labels:          map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: rev},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/nginx-slim:0.27"}}}}
	if ready {
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}}
	} else {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "web",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nginx:1.27-typo"`}}}}}
	}
	return p
}

func liveSet(current, update string, ready int32) *appsv1.StatefulSet {
	set := webSet(3)
	set.Spec.VolumeClaimTemplates = nil
	set.Generation = 2
	set.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	set.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: ready, CurrentRevision: current, UpdateRevision: update}
	return set
}

func revision(name string, n int64) appsv1.ControllerRevision {
	return appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
		Revision: n, Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"web","image":"x"}]}}}}`)}}
}

// The PodSecurity refusal of the local control plane (e2e TestPodCreateFailed).
const psaRefusal = `pods "web-0" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "web" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "web" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "web" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "web" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`

func TestJudge(t *testing.T) {
	cases := []struct {
		name string
		sc   scenario
		// want: each finding as "severity code pod reason"; status the set's.
		want   []string
		status apiv1.PreflightVerdict
		change apiv1.PreflightChange
		msg    string
	}{{
		name: "clear: a new StatefulSet", status: apiv1.PreflightClear, change: apiv1.ChangeCreate, msg: "creates web-0, web-1, web-2",
		sc: scenario{images: []Image{{Container: "web", Image: "registry.k8s.io/nginx-slim:0.27", Check: apiv1.ImageFound}}},
	}, {
		name: "kubernetes#67250: web-0 stuck on the old revision under OrderedReady is never replaced",
		sc: scenario{live: liveSet("web-old", "web-old", 0), pods: []corev1.Pod{livePod("web-0", "web-old", false)},
			revs: []appsv1.ControllerRevision{revision("web-old", 1)}},
		want:   []string{"error StaleRevisionStuck web-0 ImagePullBackOff"},
		status: apiv1.PreflightWouldNotFinish, change: apiv1.ChangeRollout,
	}, {
		name: "a healthy update: every pod is replaced", status: apiv1.PreflightClear, change: apiv1.ChangeRollout,
		msg: "replaces web-2, web-1, web-0 with revision web-new",
		sc: scenario{live: liveSet("web-old", "web-old", 3), revs: []appsv1.ControllerRevision{revision("web-old", 1)},
			pods: []corev1.Pod{livePod("web-0", "web-old", true), livePod("web-1", "web-old", true), livePod("web-2", "web-old", true)}},
	}, {
		name: "the pod refused by PodSecurity in the dry run",
		sc: scenario{answer: func(s *Set) {
			s.Admission = map[string]*PodAnswer{"web-new": {Pod: "web-0", Error: psaRefusal}}
		}},
		want: []string{"error PodCreateFailed web-0 PodSecurity"}, status: apiv1.PreflightWouldNotFinish, change: apiv1.ChangeCreate,
	}, {
		name: "an image the registry does not hold; another it could not be asked about",
		sc: scenario{images: []Image{
			{Container: "web", Image: "nginx:1.27-typo", Pulled: "docker.io/library/nginx:1.27-typo", Registry: "docker.io", Check: apiv1.ImageNotFound, Answer: "404 Not Found (MANIFEST_UNKNOWN: manifest unknown)"},
			{Container: "init", Init: true, Image: "quay.io/team/tool:1", Pulled: "quay.io/team/tool:1", Registry: "quay.io", Check: apiv1.ImageUnreachable, Answer: "dial tcp: lookup quay.io: no such host"}}},
		want: []string{"error CurrentRevisionFailing web-0 ErrImagePull", "warning ImageUnverified web-0 Unreachable"}, status: apiv1.PreflightWouldNotFinish,
		change: apiv1.ChangeCreate,
	}, {
		name: "a partition at replicas keeps the new revision from every pod",
		sc: scenario{live: liveSet("web-old", "web-old", 3), revs: []appsv1.ControllerRevision{revision("web-old", 1)},
			pods: []corev1.Pod{livePod("web-0", "web-old", true), livePod("web-1", "web-old", true), livePod("web-2", "web-old", true)},
			edit: func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(int32(3)) }},
		want: []string{"warning UpdateHeldByPartition  Partition"}, status: apiv1.PreflightClear, change: apiv1.ChangeRollout,
		msg: "makes revision web-new; no pod changes by itself",
	}, {
		name: "a claim of a StorageClass that does not exist",
		sc: scenario{classes: []storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "standard"}}},
			edit: func(s *appsv1.StatefulSet) {
				s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast")}}}
			}},
		want: []string{"error VolumeClaimPending web-0 PersistentVolumeClaimPending"}, status: apiv1.PreflightWouldNotFinish, change: apiv1.ChangeCreate,
	}, {
		name: "the apply refused: an immutable field",
		sc: scenario{live: liveSet("web-old", "web-old", 3), refused: &ApplyRefusal{Reason: ApplyImmutable,
			Error:  `StatefulSet.apps "web" is invalid: spec.volumeClaimTemplates: Invalid value: ...: field is immutable`,
			Causes: []string{"spec.volumeClaimTemplates: Invalid value: ...: field is immutable"}}},
		want: []string{"error ApplyRefused  Immutable"}, status: apiv1.PreflightWouldNotFinish, change: apiv1.ChangeRefused,
	}, {
		name: "kube-controller-manager's Lease not renewed for an hour: no rollout progresses",
		sc: scenario{lease: &stuck.ControllerManagerLease{Lease: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cp-1"), LeaseDurationSeconds: ptr.To(int32(15)), RenewTime: &metav1.MicroTime{Time: now.Add(-time.Hour)}}}}},
		want: []string{"error ControllerManagerNotRunning  LeaseNotRenewed"}, status: apiv1.PreflightWouldNotFinish, change: apiv1.ChangeCreate,
	}, {
		name: "a canary stsdiag watch paused, the template applied unchanged: nothing goes on",
		sc: func() scenario {
			live := liveSet("web-old", "web-new", 3)
			live.Annotations = map[string]string{apiv1.AnnotationCanarySteps: "1,100%"}
			live.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(int32(2))}
			live.Status.Conditions = []appsv1.StatefulSetCondition{{Type: apiv1.ConditionReconciling, Status: corev1.ConditionTrue,
				Reason: apiv1.ReasonCanaryPaused, Message: "analysis inconclusive", LastTransitionTime: metav1.NewTime(now.Add(-10 * time.Minute))}}
			return scenario{live: live, revs: []appsv1.ControllerRevision{revision("web-old", 1), revision("web-new", 2)},
				pods: []corev1.Pod{livePod("web-0", "web-old", true), livePod("web-1", "web-old", true), livePod("web-2", "web-new", true)},
				edit: func(s *appsv1.StatefulSet) {
					s.Annotations = live.Annotations
					s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(int32(2))
				}}
		}(),
		want: []string{"error RolloutBlocked  CanaryPaused"}, status: apiv1.PreflightWouldNotFinish, change: apiv1.ChangeNoRollout,
	}, {
		name: "too much cpu for the node: web-0 would not be scheduled, blocking the others",
		sc:   scenario{edit: func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Resources.Requests = list("cpu", "8") }},
		want: []string{"error PodUnschedulable web-0 Unschedulable"}, status: apiv1.PreflightWouldNotFinish, change: apiv1.ChangeCreate,
	}}
	var golden []string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := c.sc.judge(t)
			var got []string
			for _, f := range res.Findings {
				got = append(got, strings.Join([]string{string(f.Severity), string(f.Code), f.Pod, f.Reason}, " "))
				if f.Message == "" || f.Short == "" || f.Remedy == "" {
					t.Errorf("%s is not worded: %+v", f.Code, f.Finding)
				}
				golden = append(golden, wordsOf(c.name, f))
			}
			if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
				t.Errorf("findings %q\nwant     %q", got, c.want)
			}
			s := res.Sets[0]
			if s.Status != c.status || s.Change != c.change || (c.msg != "" && s.Message != c.msg) {
				t.Errorf("set %s %s %q, want %s %s %q", s.Status, s.Change, s.Message, c.status, c.change, c.msg)
			}
		})
	}
	sort.Strings(golden)
	text := "# The words of preflight's findings in internal/preflight/predict's TestJudge.\n\n" + strings.Join(golden, "\n")
	snapshottest.Golden(t, filepath.Join("preflight", "findings.txt"), []byte(text), *update)
}

func wordsOf(scenario string, f stuck.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "== %s (%s %s)\nmessage: %s\nshort: %s\nremedy: %s\n", scenario, f.Code, f.Pod, f.Message, f.Short, f.Remedy)
	if len(f.Details.Blocks) > 0 {
		fmt.Fprintf(&b, "details.blocks: %s\n", strings.Join(f.Details.Blocks, ", "))
	}
	return b.String()
}
