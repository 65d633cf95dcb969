package repair_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

// policies is every combination of the planner's options.
var policies = []plan.Policy{{}, {Rollback: true}, {ForceLostNode: true}, {Rollback: true, ForceLostNode: true}}

// TestPlanInvariantsOverEveryScenario plans every scenario of testdata/stuck and
// testdata/resolver, as diagnosed, under every policy, and checks the safety invariants on each
// plan (the StatefulSet controller's assertMonotonicInvariants idea: the rules are checked on
// whatever the planner produced, not on hand-picked cases). The checks are written here again,
// from the snapshot, independently of the planner's own.
func TestPlanInvariantsOverEveryScenario(t *testing.T) {
	var files []string
	for _, root := range []string{"stuck", "resolver"} {
		found, err := filepath.Glob(filepath.Join("..", "..", "testdata", root, "*", "objects.yaml"))
		if err != nil || len(found) == 0 {
			t.Fatalf("no scenarios in testdata/%s: %v", root, err)
		}
		files = append(files, found...)
	}
	planned := map[apiv1.ActionKind]int{}
	scenarios := map[string]func(*testing.T) (*stuck.Objects, *model.Report){
		"stuck/current-revision-failing+revision": rollbackScenario,
	}
	for _, file := range files {
		dir := filepath.Dir(file)
		scenarios[filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir)] = func(t *testing.T) (*stuck.Objects, *model.Report) { return diagnoseScenario(t, dir) }
	}
	for name, load := range scenarios {
		t.Run(name, func(t *testing.T) {
			snap, rep := load(t)
			for _, policy := range policies {
				t.Run(fmt.Sprintf("rollback=%v,force-lost-node=%v", policy.Rollback, policy.ForceLostNode), func(t *testing.T) {
					plan := plan.Planner{Policy: policy}.Plan(rep, snap)
					for _, v := range violations(rep, snap, plan.Actions) {
						t.Error(v)
					}
					for _, a := range plan.Actions {
						planned[a.Kind()]++
					}
				})
			}
		})
	}
	// The scenarios exercise every kind of action, so no rule above is checked on nothing.
	for _, kind := range []apiv1.ActionKind{apiv1.PatchImage, apiv1.DeletePod, apiv1.ForceDeletePod, apiv1.Rollback} {
		if planned[kind] == 0 {
			t.Errorf("no scenario plans a %s: its invariants were never checked", kind)
		}
	}
}

// rollbackScenario is testdata/stuck/current-revision-failing with the ControllerRevision of its
// Ready earlier revision kept: no testdata scenario has one, this one plans a Rollback.
func rollbackScenario(t *testing.T) (*stuck.Objects, *model.Report) {
	snap, _ := diagnoseScenario(t, filepath.Join("..", "..", "testdata", "stuck", "current-revision-failing"))
	data := `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"registry.k8s.io/app:1"}]}}}}`
	snap.Revisions = append(snap.Revisions, appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "web-a", Namespace: "shop", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "u1", Controller: ptr.To(true)}}},
		Data:       runtime.RawExtension{Raw: []byte(data)}, Revision: 1})
	return snap, diagnose.Report(snap, stuck.DefaultOptions())
}

// diagnoseScenario loads a scenario folder and diagnoses it against the server version and
// feature gates its expected.yaml names, as the scenario tables do.
func diagnoseScenario(t *testing.T, dir string) (*stuck.Objects, *model.Report) {
	t.Helper()
	snap, opts := loadScenario(t, dir)
	return snap, diagnose.Report(snap, opts)
}

// loadScenario loads a scenario folder with the server version and the diagnosis options
// (feature gates) its expected.yaml names.
func loadScenario(t *testing.T, dir string) (*stuck.Objects, stuck.Options) {
	t.Helper()
	snap, err := stuck.LoadFile(filepath.Join(dir, "objects.yaml"), snapshottest.Now)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "expected.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want snapshottest.Expectation
	if err := yaml.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if want.ServerVersion != "" {
		snap.ServerVersion = want.ServerVersion
	}
	opts := stuck.DefaultOptions()
	opts.FeatureGates = want.FeatureGates
	return snap, opts
}

var imagePath = regexp.MustCompile(`^/spec/template/spec/(initContainers|containers)/(\d+)/image$`)

// violations lists every safety rule a plan breaks.
func violations(rep *model.Report, snap *stuck.Objects, actions []model.Action) []string {
	var out []string
	for i, a := range actions {
		bad := func(format string, args ...any) {
			out = append(out, fmt.Sprintf("action %d (%s %s/%s %s): ", i, a.Kind(), a.Namespace, a.StatefulSet, a.Pod)+fmt.Sprintf(format, args...))
		}
		set := findSet(snap, a.Namespace, a.StatefulSet)
		switch {
		case set == nil:
			bad("its StatefulSet is not in the snapshot")
			continue
		case !snap.InScope(a.Namespace, a.StatefulSet):
			bad("its StatefulSet is out of scope")
		}
		if a.Cause == "" {
			bad("no cause")
		}
		changedBefore := templateChangedBefore(actions[:i], a.Namespace, a.StatefulSet)
		if a.AfterPatch && !changedBefore {
			bad("waits for a template change no earlier action makes")
		}
		switch a.Kind() {
		case apiv1.PatchImage:
			patchViolations(a, set, bad)
		case apiv1.Rollback:
			rollbackViolations(a, set, bad)
		case apiv1.ForceDeletePod:
			pod := findPod(snap, a.Namespace, a.Pod)
			switch {
			case pod == nil || a.UID == "" || string(pod.UID) != a.UID:
				bad("force-deletes a pod not in the snapshot as diagnosed (UID %q)", a.UID)
			case len(pod.Finalizers) > 0:
				bad("force-deletes a pod held by finalizers %v", pod.Finalizers)
			}
		case apiv1.DeletePod:
			pod := findPod(snap, a.Namespace, a.Pod)
			if templateFails(rep, set, pod, a.Namespace, a.Pod) && !(a.AfterPatch && changedBefore) {
				bad("deletes a pod whose current template fails, with no template change before it")
			}
			if !a.AfterPatch && (pod == nil || a.UID == "" || string(pod.UID) != a.UID) {
				bad("deletes without the UID of the pod diagnosed (%q)", a.UID)
			}
		default:
			bad("an action kind fix never takes")
		}
	}
	return out
}

func patchViolations(a model.Action, set *appsv1.StatefulSet, bad func(string, ...any)) {
	if a.UID == "" || a.UID != string(set.UID) {
		bad("patch tests UID %q, the StatefulSet's is %q", a.UID, set.UID)
	}
	image, ok := imageAt(&set.Spec.Template, a.Path)
	switch {
	case !ok:
		bad("patch path %q is no image field of the template", a.Path)
	case a.From != image:
		bad("patch tests image %q, the template has %q", a.From, image)
	case a.To == "" || a.To == a.From:
		bad("patch writes %q over %q", a.To, a.From)
	}
}

func rollbackViolations(a model.Action, set *appsv1.StatefulSet, bad func(string, ...any)) {
	if a.UID == "" || a.UID != string(set.UID) {
		bad("rollback tests UID %q, the StatefulSet's is %q", a.UID, set.UID)
	}
	if a.Guard == nil || len(a.Guard.Template) == 0 {
		bad("rollback without the template it writes")
		return
	}
	if a.Guard.Generation != set.Generation {
		bad("rollback tests generation %d, the StatefulSet's is %d", a.Guard.Generation, set.Generation)
	}
	tested := map[string]string{}
	for _, test := range a.Guard.Tests {
		tested[test.Path] = test.From
	}
	for kind, containers := range map[string][]corev1.Container{"initContainers": set.Spec.Template.Spec.InitContainers, "containers": set.Spec.Template.Spec.Containers} {
		for i, c := range containers {
			path := "/spec/template/spec/" + kind + "/" + strconv.Itoa(i) + "/image"
			if from, ok := tested[path]; !ok || from != c.Image {
				bad("rollback does not test %s = %q (tests %v)", path, c.Image, a.Guard.Tests)
			}
		}
	}
}

// templateFails: the pod has a CurrentRevisionFailing finding, or runs its StatefulSet's update
// revision (deleting it brings back the same template).
func templateFails(rep *model.Report, set *appsv1.StatefulSet, pod *corev1.Pod, namespace, name string) bool {
	for _, f := range rep.Findings {
		if f.Code == apiv1.CurrentRevisionFailing && f.Namespace == namespace && f.Pod == name {
			return true
		}
	}
	return pod != nil && set.Status.UpdateRevision != "" && pod.Labels[appsv1.ControllerRevisionHashLabelKey] == set.Status.UpdateRevision
}

func templateChangedBefore(earlier []model.Action, namespace, set string) bool {
	for _, a := range earlier {
		if (a.Kind() == apiv1.PatchImage || a.Kind() == apiv1.Rollback) && a.Namespace == namespace && a.StatefulSet == set {
			return true
		}
	}
	return false
}

func imageAt(t *corev1.PodTemplateSpec, path string) (string, bool) {
	m := imagePath.FindStringSubmatch(path)
	if m == nil {
		return "", false
	}
	containers := t.Spec.Containers
	if m[1] == "initContainers" {
		containers = t.Spec.InitContainers
	}
	i, _ := strconv.Atoi(m[2])
	if i >= len(containers) {
		return "", false
	}
	return containers[i].Image, true
}

func findSet(snap *stuck.Objects, namespace, name string) *appsv1.StatefulSet {
	for i := range snap.StatefulSets {
		if snap.StatefulSets[i].Namespace == namespace && snap.StatefulSets[i].Name == name {
			return &snap.StatefulSets[i]
		}
	}
	return nil
}

func findPod(snap *stuck.Objects, namespace, name string) *corev1.Pod {
	for i := range snap.Pods {
		if snap.Pods[i].Namespace == namespace && snap.Pods[i].Name == name {
			return &snap.Pods[i]
		}
	}
	return nil
}

// TestNoForceDeleteOfAFinalizedPod is the mutation check of the sweep above: in a copy of
// pod-stuck-terminating-lost-node, web-1 gets a finalizer while the diagnosis still says its node
// is lost (as it would if stuck's remedy switch changed order). The planner must not force-delete
// it, and the invariant check must reject the plan a planner trusting LostNode would make.
func TestNoForceDeleteOfAFinalizedPod(t *testing.T) {
	snap, rep := diagnoseScenario(t, filepath.Join("..", "..", "testdata", "stuck", "pod-stuck-terminating-lost-node"))
	force := plan.Planner{Policy: plan.Policy{ForceLostNode: true}}
	trusting := force.Plan(rep, snap).Actions
	if len(trusting) != 1 || trusting[0].Kind() != apiv1.ForceDeletePod || trusting[0].Pod != "web-1" || trusting[0].UID != "pod-1" {
		t.Fatalf("unmutated: planned %+v, want ForceDeletePod web-1 (pod-1)", trusting)
	}

	pod := findPod(snap, "shop", "web-1")
	pod.Finalizers = append(pod.Finalizers, "example.com/backup")
	plan := force.Plan(rep, snap)
	if len(plan.Actions) != 0 {
		t.Errorf("a pod held by a finalizer was planned for a force delete: %+v", plan.Actions)
	}
	if len(plan.Unrepaired) != 1 || plan.Unrepaired[0].Code != apiv1.PodStuckTerminating || plan.Unrepaired[0].Pod != "web-1" {
		t.Errorf("unrepaired %+v, want the PodStuckTerminating of web-1", plan.Unrepaired)
	}
	if v := violations(rep, snap, trusting); len(v) != 1 || !regexp.MustCompile(`force-deletes a pod held by finalizers`).MatchString(v[0]) {
		t.Errorf("the invariant check let a force delete of a finalized pod pass: %v", v)
	}
}

// TestInvariantCheckCanFail feeds the invariant check plans that break each rule.
func TestInvariantCheckCanFail(t *testing.T) {
	snap := rolloutSnap("db-good")
	snap.Selected = map[types.NamespacedName]bool{{Namespace: "shop", Name: "db"}: true}
	snap.StatefulSets = append(snap.StatefulSets, appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "shop", UID: "other-uid"}})
	rep := failingReport("db-2")
	patch := model.Action{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "db", Container: "db", From: badImage, To: goodImage, UID: "db-uid"},
		Cause: apiv1.UnresolvedImageReference, Path: "/spec/template/spec/containers/0/image"}
	deleteAfter := model.Action{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "db", Pod: "db-2"}, Cause: apiv1.CurrentRevisionFailing, AfterPatch: true}
	with := func(a model.Action, change func(*model.Action)) model.Action {
		change(&a)
		return a
	}
	cases := []struct {
		name    string
		actions []model.Action
		want    string
	}{
		{"a PVC delete", []model.Action{with(patch, func(a *model.Action) { a.Action.Action = "DeletePersistentVolumeClaim" })}, "an action kind fix never takes"},
		{"out of scope", []model.Action{with(patch, func(a *model.Action) { a.StatefulSet, a.UID = "other", "other-uid" })}, "out of scope"},
		{"patch without UID", []model.Action{with(patch, func(a *model.Action) { a.UID = "" })}, `patch tests UID ""`},
		{"patch of another image", []model.Action{with(patch, func(a *model.Action) { a.From = "nginx:other" })}, `patch tests image "nginx:other"`},
		{"delete of a failing pod, no change first", []model.Action{with(deleteAfter, func(a *model.Action) { a.AfterPatch, a.UID = false, "uid-db-2" })}, "whose current template fails"},
		{"delete before its change", []model.Action{deleteAfter, patch}, "waits for a template change no earlier action makes"},
		{"force delete of another pod", []model.Action{{Action: apiv1.Action{Action: apiv1.ForceDeletePod, Namespace: "shop", StatefulSet: "db", Pod: "db-1", UID: "uid-other"}, Cause: apiv1.PodStuckTerminating}}, "not in the snapshot as diagnosed"},
		{"rollback missing a test", []model.Action{{Action: apiv1.Action{Action: apiv1.Rollback, Namespace: "shop", StatefulSet: "db", UID: "db-uid"}, Cause: apiv1.CurrentRevisionFailing,
			Guard: &model.RollbackPlan{Template: []byte(`{}`), Generation: 4, Tests: []stuck.ImagePatch{{Path: "/spec/template/spec/containers/0/image", From: badImage}}}}}, "rollback does not test /spec/template/spec/containers/1/image"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := violations(rep, snap, c.actions)
			found := false
			for _, line := range v {
				found = found || regexp.MustCompile(regexp.QuoteMeta(c.want)).MatchString(line)
			}
			if !found {
				t.Errorf("violations %q, want one saying %q", v, c.want)
			}
		})
	}
	if v := violations(rep, snap, []model.Action{patch, deleteAfter}); len(v) != 0 {
		t.Errorf("a valid plan: violations %q", v)
	}
}
