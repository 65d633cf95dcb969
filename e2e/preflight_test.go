package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// preflightCase is one manifest judged before its apply, then applied for real.
type preflightCase struct {
	name string
	// setup makes the cluster the manifest meets (in namespace ns, which exists).
	setup func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string)
	// manifest is the input, YAML documents.
	manifest func(ns string) string
	// premise applies the manifest and proves on the real system what preflight predicted.
	premise func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight)
	// verdict checks preflight's answer.
	verdict func(t *testing.T, r result, pf apiv1.Preflight)
	// also, when set, is another manifest judged against the same cluster (never applied), and
	// alsoVerdict its answer.
	also        func(ns string) string
	alsoVerdict func(t *testing.T, r result, pf apiv1.Preflight)
}

// TestPreflight: for each cause preflight names, the manifest is judged before the apply
// (asserting nothing in the namespace changed: every object's UID and resourceVersion), then
// applied for real, and the premise proven on the real system — the API server refuses, the
// quota controller counts, the controller stays stuck for 30 s, the scheduler finds no node —
// before preflight's verdict is asserted; and manifests that must pass do, their update revision
// the one the controller then names. Every request preflight sent is audited afterwards: reads
// and dryRun=All only.
func TestPreflight(t *testing.T) {
	t.Parallel()
	t.Cleanup(func() { onlyReadsAndDryRuns(t) })
	good := func(ns string, edit func(*appsv1.StatefulSet)) func(string) string {
		return func(string) string {
			set := scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false)
			if edit != nil {
				edit(set)
			}
			return docs(set)
		}
	}
	withEnv := func(set *appsv1.StatefulSet) {
		set.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RELEASE", Value: "2"}}
	}
	cases := []preflightCase{{
		name:     "clear-new",
		manifest: func(ns string) string { return good(ns, nil)(ns) },
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyOK(t, file)
			completesAt(ctx, t, cs, ns, "web", pf)
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			clear(t, r, pf, apiv1.ChangeCreate, "Create web-0, Create web-1")
		},
	}, {
		name: "clear-update",
		setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
			running(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false))
		},
		manifest: func(ns string) string { return good(ns, withEnv)(ns) },
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyOK(t, file)
			completesAt(ctx, t, cs, ns, "web", pf)
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			clear(t, r, pf, apiv1.ChangeRollout, "Replace web-1, Replace web-0")
		},
	}, {
		name: "stale-revision",
		setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
			createSet(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.BadImage, 2, false))
			if err := scenario.WaitPodReason(ctx, cs, ns, "web-0", "ImagePullBackOff", time.Minute); err != nil {
				t.Fatal(err)
			}
		},
		manifest: func(ns string) string { return good(ns, nil)(ns) },
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyOK(t, file)
			observedAt(ctx, t, cs, ns, "web", pf)
			harness.ProvenStuck(ctx, t, cs, ns, "web", 30*time.Second)
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			// The simulated kubelet flips between the two as a real one does.
			reason := "ImagePullBackOff"
			if len(pf.Findings) == 1 && pf.Findings[0].Reason == "ErrImagePull" {
				reason = "ErrImagePull"
			}
			f := only(t, r, pf, 1, apiv1.StaleRevisionStuck, "web-0", reason)
			// Remedies name oc once another test has served the image API (as check's do).
			cli := map[bool]string{false: "kubectl", true: "oc"}[pf.OpenShift]
			if want := "apply, then " + cli + " delete pod web-0 -n " + f.Namespace; !strings.HasPrefix(f.Remedy, want) {
				t.Errorf("remedy %q, want it to start with %q", f.Remedy, want)
			}
		},
	}, {
		name: "immutable",
		setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
			if err := scenario.Volumes(ctx, cs, ns, 2); err != nil {
				t.Fatal(err)
			}
			running(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, true))
		},
		manifest: func(ns string) string {
			set := scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, true)
			set.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
			return docs(set)
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyRefused(t, file, "spec.volumeClaimTemplates", "field is immutable")
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			f := only(t, r, pf, 1, apiv1.ApplyRefused, "", "Immutable")
			if len(f.Details.Causes) != 1 || !strings.HasPrefix(f.Details.Causes[0], "spec.volumeClaimTemplates: ") {
				t.Errorf("causes %q", f.Details.Causes)
			}
			if pf.StatefulSets[0].Change != apiv1.ChangeRefused {
				t.Errorf("change %s", pf.StatefulSets[0].Change)
			}
		},
	}, {
		name: "policy",
		setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
			denyStatefulSetsWithoutTeam(ctx, t, cs, ns)
		},
		manifest: func(ns string) string { return good(ns, nil)(ns) },
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyRefused(t, file, "ValidatingAdmissionPolicy 'preflight-"+ns+"'", "every StatefulSet needs a team label")
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			f := only(t, r, pf, 1, apiv1.ApplyRefused, "", "AdmissionDenied")
			if !strings.Contains(f.Message, "every StatefulSet needs a team label") || harness.Detail(*f, "policy") == "" {
				t.Errorf("finding %s", toJSON(f))
			}
		},
	}, {
		name: "podsecurity",
		setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
			labelNamespace(ctx, t, cs, ns, "pod-security.kubernetes.io/enforce", "restricted")
		},
		manifest: func(ns string) string { return good(ns, nil)(ns) },
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyOK(t, file)
			neverCreated(ctx, t, cs, ns, "web", "web-0", 30*time.Second)
			sameRefusal(ctx, t, cs, ns, "web-0", pf)
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			only(t, r, pf, 1, apiv1.PodCreateFailed, "web-0", "PodSecurity")
		},
	}, {
		name: "serviceaccount",
		manifest: func(ns string) string {
			return good(ns, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.ServiceAccountName = "builder" })(ns)
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyOK(t, file)
			neverCreated(ctx, t, cs, ns, "web", "web-0", 30*time.Second)
			sameRefusal(ctx, t, cs, ns, "web-0", pf)
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			f := only(t, r, pf, 1, apiv1.PodCreateFailed, "web-0", "ServiceAccountMissing")
			if harness.Detail(*f, "serviceAccount") != "builder" {
				t.Errorf("finding %s", toJSON(f))
			}
		},
		// The ServiceAccount in the same manifests counts as existing.
		also: func(ns string) string {
			sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: ns}}
			set := scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false)
			set.Spec.Template.Spec.ServiceAccountName = "builder"
			return docs(sa, set)
		},
		alsoVerdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			clear(t, r, pf, apiv1.ChangeCreate, "Create web-0, Create web-1")
		},
	}, {
		name: "quota",
		setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
			quota(ctx, t, cs, ns, corev1.ResourcePods, "2")
		},
		manifest: func(ns string) string {
			return docs(scenario.StatefulSet(ns, "web", scenario.GoodImage, 3, false))
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyOK(t, file)
			neverCreated(ctx, t, cs, ns, "web", "web-2", 30*time.Second)
			q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
			if used := q.Status.Used[corev1.ResourcePods]; err != nil || used.String() != "2" {
				t.Fatalf("the quota controller counts %s pods (%v), want 2", used.String(), err)
			}
			sameRefusal(ctx, t, cs, ns, "web-2", pf)
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			f := only(t, r, pf, 1, apiv1.PodCreateFailed, "web-2", "QuotaExceeded")
			if want := `pods "web-2" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`; f.Details.AdmissionError != want {
				t.Errorf("admissionError %q, want %q", f.Details.AdmissionError, want)
			}
		},
	}, {
		name: "unschedulable",
		manifest: func(ns string) string {
			cpu := scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false)
			cpu.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2000")}
			sel := scenario.StatefulSet(ns, "sel", scenario.GoodImage, 2, false)
			sel.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "nvme"}
			return docs(cpu, sel)
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyOK(t, file)
			unscheduled(ctx, t, cs, ns, pf, "web", "sel")
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			if r.code != 1 || len(pf.Findings) != 2 {
				t.Fatalf("exit %d, %d findings: want 1 and 2", r.code, len(pf.Findings))
			}
			for _, f := range pf.Findings {
				want := map[string]string{"web": "Insufficient cpu", "sel": "node(s) didn't match Pod's node affinity/selector"}[f.StatefulSet]
				if f.Code != apiv1.PodUnschedulable || f.Pod != f.StatefulSet+"-0" || !slices.ContainsFunc(f.Details.NodeReasons,
					func(r string) bool { return strings.HasSuffix(r, " "+want) }) || !strings.Contains(f.Message, f.StatefulSet+"-1") {
					t.Errorf("finding %s: want PodUnschedulable %s-0 for %q, blocking %s-1", toJSON(f), f.StatefulSet, want, f.StatefulSet)
				}
			}
		},
	}, {
		name: "storageclass",
		manifest: func(ns string) string {
			set := scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, true)
			set.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To("no-such-class")
			return docs(set)
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyOK(t, file)
			holdsUntil(ctx, t, time.Minute, func(ctx context.Context) bool {
				events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=data-web-0"})
				for _, e := range events.Items {
					if strings.Contains(e.Message, `storageclass.storage.k8s.io "no-such-class" not found`) {
						return err == nil
					}
				}
				return false
			})
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-web-0", metav1.GetOptions{})
				if err != nil || c.Status.Phase != corev1.ClaimPending {
					return fmt.Errorf("claim data-web-0: %v %v", c.Status.Phase, err)
				}
				if _, err := cs.CoreV1().Pods(ns).Get(ctx, "web-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("web-1 was created (%v)", err)
				}
				return nil
			})
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			f := only(t, r, pf, 1, apiv1.VolumeClaimPending, "web-0", "PersistentVolumeClaimPending")
			if harness.Detail(*f, "claim") != "data-web-0" || harness.Detail(*f, "storageClass") != "no-such-class" {
				t.Errorf("finding %s", toJSON(f))
			}
		},
	}, {
		name: "partition",
		setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
			running(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false))
		},
		manifest: func(ns string) string {
			return good(ns, func(s *appsv1.StatefulSet) {
				withEnv(s)
				s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(int32(2))}}
			})(ns)
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyOK(t, file)
			observedAt(ctx, t, cs, ns, "web", pf)
			noPodUpdated(ctx, t, cs, ns, "web")
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			only(t, r, pf, 0, apiv1.UpdateHeldByPartition, "", "Partition")
		},
	}, {
		name: "ondelete",
		setup: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
			set := scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false)
			set.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
			running(ctx, t, cs, set)
		},
		manifest: func(ns string) string {
			return good(ns, func(s *appsv1.StatefulSet) {
				withEnv(s)
				s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
			})(ns)
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, file string, pf apiv1.Preflight) {
			applyOK(t, file)
			observedAt(ctx, t, cs, ns, "web", pf)
			noPodUpdated(ctx, t, cs, ns, "web")
		},
		verdict: func(t *testing.T, r result, pf apiv1.Preflight) {
			// OnDelete: the pods change only when someone deletes them; wait would wait forever.
			f := only(t, r, pf, 1, apiv1.OnDeleteStale, "", "")
			if strings.Join(f.Details.Pods, ",") != "web-0,web-1" {
				t.Errorf("pods %q", f.Details.Pods)
			}
		},
	}}
	var fs []features.Feature
	for _, c := range cases {
		fs = append(fs, preflightFeature(c))
	}
	fs = append(fs, preflightBadInput(), preflightRBAC())
	testenv.TestInParallel(t, fs...)
}

func preflightFeature(c preflightCase) features.Feature {
	ns := "preflight-" + c.name
	var file string
	var r result
	var pf apiv1.Preflight
	return features.New("Preflight/"+c.name).
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				c.setup(ctx, t, cs, ns)
			}
			file = filepath.Join(t.TempDir(), "manifest.yaml")
			if err := writeFile(file, c.manifest(ns)); err != nil {
				t.Fatal(err)
			}
			// Judged before the apply; nothing in the namespace may change meanwhile.
			before := harness.Settled(func() string { return harness.NamespaceState(ctx, t, cs, ns) })
			r = preflightRun(t, file, "-o", "json", "--skip-images")
			after := harness.NamespaceState(ctx, t, cs, ns)
			if after != before {
				t.Fatalf("preflight changed the namespace:\nbefore %s\nafter  %s", before, after)
			}
			if r.code != 2 {
				pf = decodePreflight(t, r)
			}
			if c.also != nil {
				alsoFile := filepath.Join(t.TempDir(), "also.yaml")
				if err := writeFile(alsoFile, c.also(ns)); err != nil {
					t.Fatal(err)
				}
				alsoResult := preflightRun(t, alsoFile, "-o", "json", "--skip-images")
				c.alsoVerdict(t, alsoResult, decodePreflight(t, alsoResult))
			}
			return ctx
		}).
		Assess("premise: applied for real, the real system does what preflight predicted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c.premise(ctx, t, clientset(t, cfg), ns, file, pf)
			return ctx
		}).
		Assess("verdict", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c.verdict(t, r, pf)
			return ctx
		}).Feature()
}

// preflightBadInput: input kubectl apply would refuse is exit 2 with one line on stderr; a
// StatefulSet without a namespace takes the kubeconfig's, as kubectl does.
func preflightBadInput() features.Feature {
	const ns = "preflight-input"
	return features.New("Preflight/bad input").
		Assess("malformed YAML, an unknown kind, a file that does not exist, no file: exit 2, one line", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// Not t.TempDir(): its name holds the subtest's commas, and -f splits on commas as
			// kubectl's does.
			dir, err := os.MkdirTemp("", "preflight-input-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			malformed, unknown := filepath.Join(dir, "malformed.yaml"), filepath.Join(dir, "unknown.yaml")
			if err := writeFile(malformed, "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web\n  spec: [\n"); err != nil {
				t.Fatal(err)
			}
			if err := writeFile(unknown, "apiVersion: widgets.example.com/v1\nkind: Widget\nmetadata: {name: w}\n"); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"-f", malformed}, "error converting YAML to JSON"},
				{[]string{"-f", unknown}, `no matches for kind "Widget" in version "widgets.example.com/v1"`},
				{[]string{"-f", filepath.Join(dir, "nope.yaml")}, "does not exist"},
				{nil, "must specify one of -f and -k"},
			} {
				r := preflightRun(t, "", c.args...)
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if r.code != 2 || r.stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], c.want) {
					t.Errorf("%v: exit %d, stdout %q, stderr %q: want exit 2 and one line naming %q", c.args, r.code, r.stdout, r.stderr, c.want)
				}
			}
			return ctx
		}).
		Assess("a StatefulSet without a namespace, in a JSON List, is judged in the kubeconfig's", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := scenario.Namespace(ctx, clientset(t, cfg), ns); err != nil {
				t.Fatal(err)
			}
			set := scenario.StatefulSet("", "web", scenario.GoodImage, 1, false)
			set.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
			list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{set}})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "web.json")
			if err := writeFile(file, string(list)); err != nil {
				t.Fatal(err)
			}
			kubeconfig := preflightKubeconfig(t)
			raw, err := clientcmd.LoadFromFile(kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			raw.Contexts[raw.CurrentContext].Namespace = ns
			inNS := filepath.Join(t.TempDir(), "kubeconfig")
			if err := clientcmd.WriteToFile(*raw, inNS); err != nil {
				t.Fatal(err)
			}
			res := harness.Run(t, inNS, binDir, nil, stsdiag, "preflight", "-f", file, "-o", "json", "--skip-images")
			pf := decodePreflight(t, result{stdout: res.Stdout, stderr: res.Stderr, code: res.Code})
			if res.Code != 0 || len(pf.StatefulSets) != 1 || pf.StatefulSets[0].Namespace != ns || pf.StatefulSets[0].Change != apiv1.ChangeCreate {
				t.Errorf("exit %d, %+v: want web judged in %s, exit 0", res.Code, pf.StatefulSets, ns)
			}
			return ctx
		}).Feature()
}

// preflightRBAC: with exactly deploy/preflight-clusterrole.yaml (a ServiceAccount bound
// cluster-wide), preflight judges an update and a new StatefulSet with nothing left unread: no
// warning, the verdict of the admin.
func preflightRBAC() features.Feature {
	const ns, sa = "preflight-rbac", "preflight-runner"
	return features.New("Preflight/deploy/preflight-clusterrole.yaml is enough").
		Assess("no warning, Clear", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			running(ctx, t, cs, scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false))
			objs, err := harness.Decode(filepath.Join("..", "deploy", "preflight-clusterrole.yaml"))
			if err != nil || len(objs) != 1 {
				t.Fatalf("deploy/preflight-clusterrole.yaml: %v", err)
			}
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &role); err != nil {
				t.Fatal(err)
			}
			role.Name = "e2e-" + role.Name
			if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			if err := scenario.ServiceAccountWithClusterRole(ctx, cs, ns, sa, role.Name); err != nil {
				t.Fatal(err)
			}
			token, err := scenario.ServiceAccountToken(ctx, cs, ns, sa)
			if err != nil {
				t.Fatal(err)
			}
			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			if err := local.WriteKubeconfig(kubeconfig, sa, token); err != nil {
				t.Fatal(err)
			}
			update := scenario.StatefulSet(ns, "web", scenario.GoodImage, 2, false)
			update.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RELEASE", Value: "2"}}
			file := filepath.Join(t.TempDir(), "manifest.yaml")
			if err := writeFile(file, docs(update, scenario.StatefulSet(ns, "db", scenario.GoodImage, 1, false))); err != nil {
				t.Fatal(err)
			}
			res := harness.Run(t, kubeconfig, binDir, nil, stsdiag, "preflight", "-f", file, "-o", "json", "--skip-images")
			pf := decodePreflight(t, result{stdout: res.Stdout, stderr: res.Stderr, code: res.Code})
			if res.Code != 0 || pf.Result != apiv1.PreflightClear || len(pf.Warnings) != 0 || strings.Contains(res.Stderr, "Warning") || len(pf.StatefulSets) != 2 ||
				pf.StatefulSets[0].Change != apiv1.ChangeRollout || pf.StatefulSets[1].Change != apiv1.ChangeCreate {
				t.Errorf("exit %d, %s, warnings %q, sets %+v: want exit 0, Clear, no warning, a rollout and a create", res.Code, pf.Result, pf.Warnings, pf.StatefulSets)
			}
			return ctx
		}).Feature()
}

var preflightConfig struct {
	once sync.Once
	path string
	err  error
}

// preflightKubeconfig is a kubeconfig for cluster.PreflightUser, whose requests are audited.
func preflightKubeconfig(t *testing.T) string {
	t.Helper()
	preflightConfig.once.Do(func() {
		preflightConfig.path = filepath.Join(binDir, "preflight-kubeconfig")
		preflightConfig.err = local.WritePreflightKubeconfig(preflightConfig.path)
	})
	if preflightConfig.err != nil {
		t.Fatal(preflightConfig.err)
	}
	return preflightConfig.path
}

// preflightRun runs `stsdiag preflight -f file args...` as the audited user.
func preflightRun(t *testing.T, file string, args ...string) result {
	t.Helper()
	all := []string{"preflight"}
	if file != "" {
		all = append(all, "-f", file)
	}
	r := harness.Run(t, preflightKubeconfig(t), binDir, nil, stsdiag, append(all, args...)...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

func decodePreflight(t *testing.T, r result) apiv1.Preflight {
	t.Helper()
	var pf apiv1.Preflight
	if err := json.Unmarshal([]byte(r.stdout), &pf); err != nil || pf.Kind != "Preflight" {
		t.Fatalf("not a Preflight document (%v): %s", err, r.stdout)
	}
	return pf
}

// docs are objects as YAML documents.
func docs(objs ...any) string {
	var parts []string
	for _, o := range objs {
		if set, ok := o.(*appsv1.StatefulSet); ok {
			set.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
		}
		data, err := yaml.Marshal(o)
		if err != nil {
			panic(err)
		}
		parts = append(parts, string(data))
	}
	return strings.Join(parts, "---\n")
}

// onlyReadsAndDryRuns: every request the audited preflight user sent, in the whole suite, read
// or was a dry run (dryRun=All); and it did send dry-run applies and creates (the check can fail).
func onlyReadsAndDryRuns(t *testing.T) {
	t.Helper()
	f, err := os.Open(local.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dryRuns := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if e.User.Username != cluster.PreflightUser || e.Stage != "ResponseComplete" {
			continue
		}
		switch {
		case e.Verb == "get" || e.Verb == "list" || e.Verb == "watch":
		case strings.Contains(e.RequestURI, "dryRun=All") && e.ObjectRef != nil:
			dryRuns[e.ObjectRef.Resource+" "+e.Verb]++
		default:
			t.Errorf("preflight sent %s %s: neither a read nor a dry run", e.Verb, e.RequestURI)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("preflight's dry runs in the suite: %v", dryRuns)
	if dryRuns["statefulsets patch"] == 0 || dryRuns["pods create"] == 0 {
		t.Errorf("no dry-run apply or pod create audited (%v): the audit does not see preflight", dryRuns)
	}
}

// clear asserts a Clear verdict with exit 0, the change, and the pods the controller would touch.
func clear(t *testing.T, r result, pf apiv1.Preflight, change apiv1.PreflightChange, pods string) {
	t.Helper()
	if r.code != 0 || pf.Result != apiv1.PreflightClear || len(pf.Findings) != 0 || len(pf.StatefulSets) != 1 {
		t.Fatalf("exit %d, %s, findings %v: want exit 0, Clear, none", r.code, pf.Result, pf.Findings)
	}
	s := pf.StatefulSets[0]
	var got []string
	for _, p := range s.Pods {
		got = append(got, string(p.Action)+" "+p.Name)
		// A replacement of a settled StatefulSet's pod takes its predecessor's room, on a node
		// not read ("").
		if p.Revision != s.UpdateRevision || (p.Node != cluster.NodeName && (p.Action != apiv1.PodReplace || p.Node != "")) {
			t.Errorf("pod %+v: want revision %s on node %s", p, s.UpdateRevision, cluster.NodeName)
		}
	}
	if s.Change != change || s.Status != apiv1.PreflightClear || strings.Join(got, ", ") != pods {
		t.Errorf("set %+v: want %s, pods %s", s, change, pods)
	}
}

// only asserts the exit code and that the one finding is of code at pod with reason.
func only(t *testing.T, r result, pf apiv1.Preflight, exit int, code apiv1.Code, pod, reason string) *apiv1.Finding {
	t.Helper()
	if r.code != exit || len(pf.Findings) != 1 {
		t.Fatalf("exit %d, findings %s: want exit %d and one %s", r.code, toJSON(pf.Findings), exit, code)
	}
	f := &pf.Findings[0]
	if f.Code != code || f.Pod != pod || f.Reason != reason || f.Message == "" || f.Remedy == "" {
		t.Errorf("finding %s: want %s of %q, reason %s, worded", toJSON(f), code, pod, reason)
	}
	blocking := f.Severity == apiv1.SeverityError || f.Code == apiv1.OnDeleteStale || f.Code == apiv1.ImageStreamTagNotFound
	if want := map[bool]apiv1.PreflightVerdict{true: apiv1.PreflightWouldNotFinish, false: apiv1.PreflightClear}[blocking]; pf.Result != want {
		t.Errorf("result %s, want %s", pf.Result, want)
	}
	return f
}

// running creates the StatefulSet and waits for its rollout to complete.
func running(ctx context.Context, t *testing.T, cs kubernetes.Interface, set *appsv1.StatefulSet) {
	t.Helper()
	createSet(ctx, t, cs, set)
	if err := scenario.WaitRolloutComplete(ctx, cs, set.Namespace, set.Name, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

func kubectlApply(t *testing.T, file string) (string, error) {
	t.Helper()
	cmd := exec.Command("kubectl", "apply", "-f", file)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+local.GetKubeconfig())
	out, err := cmd.CombinedOutput()
	t.Logf("$ kubectl apply -f %s → %v\n%s", file, err, out)
	return string(out), err
}

func applyOK(t *testing.T, file string) {
	t.Helper()
	if _, err := kubectlApply(t, file); err != nil {
		t.Fatalf("kubectl apply: %v", err)
	}
}

// applyRefused: the real apply is refused, naming each of words.
func applyRefused(t *testing.T, file string, words ...string) {
	t.Helper()
	out, err := kubectlApply(t, file)
	if err == nil {
		t.Fatal("the real apply was admitted: the premise does not hold")
	}
	for _, w := range words {
		if !strings.Contains(out, w) {
			t.Errorf("the real apply's refusal lacks %q: %s", w, out)
		}
	}
}

// observedAt waits for the controller to observe the apply and checks it names the update
// revision preflight predicted.
func observedAt(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, pf apiv1.Preflight) {
	t.Helper()
	if err := scenario.WaitObserved(ctx, cs, ns, name); err != nil {
		t.Fatal(err)
	}
	set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pf.StatefulSets {
		if s.Name == name && s.UpdateRevision != set.Status.UpdateRevision {
			t.Errorf("the controller's update revision is %s, preflight predicted %s", set.Status.UpdateRevision, s.UpdateRevision)
		}
	}
}

func completesAt(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, pf apiv1.Preflight) {
	t.Helper()
	if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	observedAt(ctx, t, cs, ns, name, pf)
}

// sameRefusal: the controller's FailedCreate Event quotes the refusal preflight predicted.
func sameRefusal(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, pod string, pf apiv1.Preflight) {
	t.Helper()
	event := failedCreate(ctx, t, cs, ns, "web", pod)
	for _, f := range pf.Findings {
		if f.Pod == pod && (f.Details.AdmissionError == "" || !strings.Contains(event, f.Details.AdmissionError)) {
			t.Errorf("the controller's Event %q does not quote the predicted refusal %q", event, f.Details.AdmissionError)
		}
	}
}

// unscheduled: the scheduler leaves each <set>-0 Pending for the reasons preflight gave, and no
// <set>-1 is created, for 30 s.
func unscheduled(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, pf apiv1.Preflight, sets ...string) {
	t.Helper()
	for _, set := range sets {
		pod := set + "-0"
		var predicted []string
		for _, f := range pf.Findings {
			if f.Pod == pod {
				for _, r := range f.Details.NodeReasons {
					// "1 Insufficient cpu": the count is of the nodes at that moment (other tests
					// add and remove nodes); the reason is compared.
					_, reason, _ := strings.Cut(r, " ")
					predicted = append(predicted, reason)
				}
			}
		}
		var message string
		holdsUntil(ctx, t, time.Minute, func(ctx context.Context) bool {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
					message = c.Message
					return true
				}
			}
			return false
		})
		if len(predicted) == 0 || !strings.HasPrefix(message, "0/") {
			t.Errorf("the scheduler says %q of %s; preflight predicted %q", message, pod, predicted)
		}
		for _, r := range predicted {
			if !strings.Contains(message, r) {
				t.Errorf("the scheduler says %q of %s; preflight predicted %q", message, pod, r)
			}
		}
	}
	harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
		for _, set := range sets {
			if _, err := cs.CoreV1().Pods(ns).Get(ctx, set+"-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s-1 was created (%v)", set, err)
			}
		}
		return nil
	})
}

// noPodUpdated: once the controller observed the new revision, no pod runs it for 30 s.
func noPodUpdated(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
		set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if set.Status.UpdatedReplicas != 0 || set.Status.CurrentRevision == set.Status.UpdateRevision {
			return fmt.Errorf("pods moved to the new revision: %+v", set.Status)
		}
		return nil
	})
}

// denyStatefulSetsWithoutTeam makes a ValidatingAdmissionPolicy of the namespace refusing
// StatefulSets without a team label, and waits until it refuses one.
func denyStatefulSetsWithoutTeam(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	name := "preflight-" + ns
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"statefulsets"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "has(object.metadata.labels) && 'team' in object.metadata.labels",
				Message: "every StatefulSet needs a team label"}},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	probe := scenario.StatefulSet(ns, "probe", scenario.GoodImage, 1, false)
	holdsUntil(ctx, t, 30*time.Second, func(ctx context.Context) bool {
		_, err := cs.AppsV1().StatefulSets(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "every StatefulSet needs a team label")
	})
}
