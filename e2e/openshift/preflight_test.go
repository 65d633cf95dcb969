package openshift

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestPreflightImageLookup: three StatefulSets with local names meet OpenShift's image lookup —
// a stream with lookup on whose tag is pushed, one whose tag is not, one with lookup off. Before
// the apply, preflight says what the real ImagePolicy plugin writes (the dry-run apply goes
// through it) and what that leads to; nothing in the namespace changes. Then the manifest is
// applied, the stored images are read back, and the pods do what was predicted: the resolved
// digest runs, the others do not pull.
func TestPreflightImageLookup(t *testing.T) {
	t.Parallel()
	const ns = "os-preflight"
	ctx := context.Background()
	namespace(t, ns, nil)
	stream(t, ns, "myapp", true)
	push(t, ns, "myapp", "1.0.1", d1, registry+"/"+ns+"/myapp@"+d1)
	stream(t, ns, "other", true)
	stream(t, ns, "nolookup", false)
	push(t, ns, "nolookup", "1.0", d1, registry+"/"+ns+"/nolookup@"+d1)
	var docs []string
	for _, s := range []struct{ name, image string }{{"resolved", "myapp:1.0.1"}, {"notag", "other:2.0"}, {"off", "nolookup:1.0"}} {
		set := scenario.StatefulSet(ns, s.name, s.image, 1, false)
		set.APIVersion, set.Kind = "apps/v1", "StatefulSet"
		data, err := yaml.Marshal(set)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	file := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}

	// Before the apply (docker.io is out of reach here: no registry is asked).
	before := harness.Settled(func() string { return harness.NamespaceState(ctx, t, cs, ns) })
	r := stsdiagRun(t, "preflight", "-f", file, "-o", "json", "--skip-images")
	if after := harness.NamespaceState(ctx, t, cs, ns); after != before {
		t.Fatalf("preflight changed the namespace:\nbefore %s\nafter  %s", before, after)
	}
	var pf apiv1.Preflight
	if err := json.Unmarshal([]byte(r.Stdout), &pf); err != nil || pf.Kind != "Preflight" {
		t.Fatalf("not a Preflight document (%v): %s", err, r.Stdout)
	}

	// The premise: applied through the real admission, what it stored, and what the pods do.
	cmd := exec.Command("kubectl", "apply", "-f", file)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	want(t, "stored image of resolved", storedImage(t, ns, "resolved"), registry+"/"+ns+"/myapp@"+d1)
	want(t, "stored image of notag", storedImage(t, ns, "notag"), registry+"/"+ns+"/other:2.0")
	want(t, "stored image of off", storedImage(t, ns, "off"), "nolookup:1.0")
	if err := scenario.WaitRolloutComplete(ctx, cs, ns, "resolved", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	waitReason(t, ns, "notag-0", "ImagePullBackOff")
	waitReason(t, ns, "off-0", "ImagePullBackOff")

	// The verdict.
	images := map[string]apiv1.PreflightImage{}
	for _, s := range pf.StatefulSets {
		if len(s.Images) == 1 {
			images[s.Name] = s.Images[0]
		}
	}
	if img := images["resolved"]; img.Pulled != registry+"/"+ns+"/myapp@"+d1 || img.Check != apiv1.ImageFromStream || img.Digest != d1 {
		t.Errorf("resolved: %+v, want the digest admission stored", img)
	}
	if img := images["notag"]; img.Pulled != registry+"/"+ns+"/other:2.0" {
		t.Errorf("notag: %+v, want the tag admission stored", img)
	}
	var got []string
	for _, f := range pf.Findings {
		got = append(got, string(f.Code)+"/"+f.StatefulSet)
	}
	// Both warnings; a tag not imported yet keeps the rollout from finishing (wait's policy).
	if r.Code != 1 || strings.Join(got, " ") != "ImageStreamTagNotFound/notag ImageLookupDisabled/off" {
		t.Errorf("exit %d, findings %v: want exit 1, ImageStreamTagNotFound/notag and ImageLookupDisabled/off", r.Code, got)
	}
	for _, s := range pf.StatefulSets {
		// With lookup off the name is docker.io's, which this runner cannot ask: a warning.
		wantStatus := map[string]apiv1.PreflightVerdict{"resolved": apiv1.PreflightClear, "notag": apiv1.PreflightWouldNotFinish,
			"off": apiv1.PreflightClear}[s.Name]
		if s.Status != wantStatus {
			t.Errorf("%s: %s, want %s", s.Name, s.Status, wantStatus)
		}
	}
}
