package node

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestPreflightImages: preflight asks the registry the real node pulls from (go-containerregistry's,
// in this process) for each image of a manifest, before the apply: a tag it holds is Found with
// its digest, one it lacks is CurrentRevisionFailing (ErrImagePull) with the registry's 404.
// Nothing in the namespace changes. Then the manifest is applied and the real kubelet behaves
// as predicted: the first set's pod runs the very digest, the second's cannot pull its image.
func TestPreflightImages(t *testing.T) {
	const ns = "preflight-images"
	var file, present, missing string
	var res harness.Result
	var pf apiv1.Preflight
	f := features.New("preflight: an image the registry holds and one it lacks").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, ns, 1)
			present, missing = local.Image(cluster.AppImage), local.Image("app:1.0-preflight-missing")
			web := appSet(ns, "web", 1)
			gone := scenario.StatefulSet(ns, "gone", missing, 1, false)
			file = filepath.Join(t.TempDir(), "manifest.yaml")
			var docs []string
			for _, set := range []*appsv1.StatefulSet{web, gone} {
				set.APIVersion, set.Kind = "apps/v1", "StatefulSet"
				data, err := yaml.Marshal(set)
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(data))
			}
			if err := os.WriteFile(file, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
				t.Fatal(err)
			}
			before := harness.Settled(func() string { return harness.NamespaceState(ctx, t, cs, ns) })
			res = run(t, cfg, "preflight", "-f", file, "-o", "json")
			if after := harness.NamespaceState(ctx, t, cs, ns); after != before {
				t.Fatalf("preflight changed the namespace:\nbefore %s\nafter  %s", before, after)
			}
			if err := json.Unmarshal([]byte(res.Stdout), &pf); err != nil || pf.Kind != "Preflight" {
				t.Fatalf("not a Preflight document (%v): %s", err, res.Stdout)
			}
			return ctx
		}).
		Assess("premise: applied, the kubelet runs the predicted digest and cannot pull the missing tag", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			cmd := exec.Command("kubectl", "apply", "-f", file)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+cfg.KubeconfigFile())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("kubectl apply: %v\n%s", err, out)
			}
			pod := waitPod(ctx, t, cs, ns, "web-0", 2*time.Minute, "Running and Ready", harness.PodReady)
			digest := digestOf(t, pf, "web")
			if id := containerStatus(pod, "web").ImageID; digest == "" || !strings.HasSuffix(id, "@"+digest) {
				t.Errorf("web-0 runs %s; preflight found %s", id, digest)
			}
			gone := waitPod(ctx, t, cs, ns, "gone-0", time.Minute, "ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
				r := waitingReason(p, "web")
				return r == "ErrImagePull" || r == "ImagePullBackOff"
			})
			if msg := containerStatus(gone, "web").State.Waiting.Message; !strings.Contains(msg, missing+": not found") {
				t.Errorf("gone-0 waits with %q, want containerd's not found of %s", msg, missing)
			}
			return ctx
		}).
		Assess("verdict: the missing tag is CurrentRevisionFailing with the registry's 404; the present one Found", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if res.Code != 1 || pf.Result != apiv1.PreflightWouldNotFinish || len(pf.Findings) != 1 {
				t.Fatalf("exit %d, %s, %d findings: want exit 1, WouldNotFinish, one", res.Code, pf.Result, len(pf.Findings))
			}
			f := pf.Findings[0]
			if f.Code != apiv1.CurrentRevisionFailing || f.StatefulSet != "gone" || f.Pod != "gone-0" || f.Reason != "ErrImagePull" ||
				f.Image != missing || !strings.HasPrefix(f.Details.RegistryAnswer, "404 Not Found") || f.Details.Registry != local.Registry() {
				t.Errorf("finding %+v", f)
			}
			for _, s := range pf.StatefulSets {
				want := map[string]apiv1.ImageCheck{"web": apiv1.ImageFound, "gone": apiv1.ImageNotFound}[s.Name]
				if len(s.Images) != 1 || s.Images[0].Check != want {
					t.Errorf("%s: images %+v, want %s", s.Name, s.Images, want)
				}
			}
			if digestOf(t, pf, "web") == "" || !strings.HasPrefix(pf.StatefulSets[0].Images[0].Pulled, present+"@sha256:") {
				t.Errorf("web's image %+v: want %s with its digest", pf.StatefulSets[0].Images, present)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func digestOf(t *testing.T, pf apiv1.Preflight, set string) string {
	t.Helper()
	for _, s := range pf.StatefulSets {
		if s.Name == set && len(s.Images) > 0 {
			return s.Images[0].Digest
		}
	}
	return ""
}
