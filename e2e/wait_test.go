package e2e

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

type waitResult struct {
	Kind     string          `json:"kind"`
	Result   apiv1.Verdict   `json:"result"`
	Findings []apiv1.Finding `json:"findings"`
	Message  string          `json:"message"`
}

func decodeWait(t *testing.T, r result) waitResult {
	t.Helper()
	var res waitResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Kind != "WaitResult" {
		t.Fatalf("stdout is not a WaitResult (%v):\n%s", err, r.stdout)
	}
	return res
}

func timed(t *testing.T, what string, run func() result) (result, time.Duration) {
	t.Helper()
	start := time.Now()
	r := run()
	d := time.Since(start)
	t.Logf("%s: exit %d after %s", what, r.code, d.Round(100*time.Millisecond))
	return r, d
}

// TestWait: the CI gate on the real controller.
func TestWait(t *testing.T) {
	const ns = "wait"
	f := features.New("stsdiag wait").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := scenario.Namespace(ctx, clientset(t, cfg), ns); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("a good rollout: exit 0 about when it completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, "good", scenario.GoodImage, 3, false), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			r, took := timed(t, "wait good", func() result { return stsdiagRun(t, cfg, "wait", "good", "-n", ns, "--timeout", "1m", "-o", "json") })
			if res := decodeWait(t, r); r.code != 0 || res.Result != "Complete" || took > 30*time.Second {
				t.Fatalf("exit %d result %s after %s", r.code, res.Result, took)
			}
			if !strings.Contains(r.stderr, "rollout complete") {
				t.Errorf("no progress lines on stderr:\n%s", r.stderr)
			}
			return ctx
		}).
		Assess("a slow but healthy rollout never trips the grace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			set := scenario.StatefulSet(ns, "slow", scenario.GoodImage, 3, false)
			set.Spec.MinReadySeconds = 2
			if _, err := clientset(t, cfg).AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			r, took := timed(t, "wait slow", func() result {
				return stsdiagRun(t, cfg, "wait", "slow", "-n", ns, "--timeout", "1m", "--stuck-grace", "2s")
			})
			if r.code != 0 || took < 4*time.Second {
				t.Fatalf("exit %d after %s (pods are 2s apart: it cannot be complete sooner)", r.code, took)
			}
			return ctx
		}).
		Assess("--timeout while progressing: exit 3", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			set := scenario.StatefulSet(ns, "slower", scenario.GoodImage, 3, false)
			set.Spec.MinReadySeconds = 20
			if _, err := clientset(t, cfg).AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			junit := filepath.Join(t.TempDir(), "junit.xml")
			r, _ := timed(t, "wait slower", func() result {
				return stsdiagRun(t, cfg, "wait", "slower", "-n", ns, "--timeout", "4s", "--junit-file", junit)
			})
			if r.code != 3 || !strings.Contains(r.stdout, "TimedOut") {
				t.Fatalf("exit %d\n%s", r.code, r.stdout)
			}
			suite := readJUnit(t, junit)
			if len(suite.Cases) != 1 || suite.Cases[0].Failure == nil || suite.Cases[0].Failure.Type != "TimedOut" {
				t.Errorf("junit %+v", suite)
			}
			return ctx
		}).
		Assess("not found, or deleted while waiting: exit 2", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if r := stsdiagRun(t, cfg, "wait", "nope", "-n", ns, "--timeout", "10s"); r.code != 2 {
				t.Fatalf("not found: exit %d", r.code)
			}
			if r := stsdiagRun(t, cfg, "wait", "-l", "app=nothing", "-n", ns, "--timeout", "10s"); r.code != 2 || !strings.Contains(r.stderr, "no StatefulSet matches") {
				t.Fatalf("empty selector: exit %d %q", r.code, r.stderr)
			}
			go func() {
				time.Sleep(2 * time.Second)
				_ = clientset(t, cfg).AppsV1().StatefulSets(ns).Delete(context.Background(), "slower", metav1.DeleteOptions{})
			}()
			r := stsdiagRun(t, cfg, "wait", "slower", "-n", ns, "--timeout", "30s")
			if r.code != 2 || !strings.Contains(r.stderr, "deleted while waiting") {
				t.Fatalf("deleted: exit %d stderr %q", r.code, r.stderr)
			}
			return ctx
		}).Feature()

	stuck := features.New("stsdiag wait on kubernetes#67250").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			for _, n := range []string{"wait-stuck", "wait-fix"} {
				if err := scenario.Namespace(ctx, cs, n); err != nil {
					t.Fatal(err)
				}
				if err := scenario.StuckRollout(ctx, cs, n, "web", 3); err != nil {
					t.Fatal(err)
				}
			}
			return ctx
		}).
		Assess("exit 1 within the grace + 10s, with StaleRevisionStuck, remedy and events", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			junit := filepath.Join(t.TempDir(), "junit.xml")
			r, took := timed(t, "stsdiag wait --stuck-grace 5s", func() result {
				return stsdiagRun(t, cfg, "wait", "web", "-n", "wait-stuck", "--stuck-grace", "5s", "--timeout", "2m", "-o", "json", "--junit-file", junit)
			})
			res := decodeWait(t, r)
			if r.code != 1 || res.Result != "Stuck" || took > 15*time.Second || took < 5*time.Second {
				t.Fatalf("exit %d result %s after %s", r.code, res.Result, took)
			}
			found := false
			for _, f := range res.Findings {
				if f.Code == apiv1.StaleRevisionStuck && f.Pod == "web-0" && f.Remedy != "" && harness.Details(f)["events"] != nil {
					found = true
				}
			}
			if !found {
				t.Errorf("no StaleRevisionStuck for web-0 with remedy and events: %+v", res.Findings)
			}
			suite := readJUnit(t, junit)
			if len(suite.Cases) != 1 || suite.Cases[0].Failure == nil || !strings.Contains(suite.Cases[0].Failure.Message, "StaleRevisionStuck") {
				t.Errorf("junit %+v", suite)
			}
			return ctx
		}).
		Assess("side by side with kubectl rollout status", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			timeout := os.Getenv("STSDIAG_E2E_ROLLOUT_TIMEOUT")
			if timeout == "" {
				timeout = "10s"
			}
			k, kt := timed(t, "kubectl rollout status --timeout="+timeout, func() result {
				return runCmd(t, cfg, "kubectl", "rollout", "status", "statefulset/web", "-n", "wait-stuck", "--timeout="+timeout)
			})
			s, st := timed(t, "stsdiag wait --timeout="+timeout, func() result {
				return stsdiagRun(t, cfg, "wait", "web", "-n", "wait-stuck", "--timeout="+timeout, "--stuck-grace", "5s")
			})
			t.Logf("time to a verdict on kubernetes#67250: kubectl rollout status %s (exit %d, no reason), stsdiag wait %s (exit %d, StaleRevisionStuck)",
				kt.Round(100*time.Millisecond), k.code, st.Round(100*time.Millisecond), s.code)
			if k.code == 0 || s.code != 1 || st >= kt {
				t.Errorf("kubectl exit %d in %s; stsdiag exit %d in %s", k.code, kt, s.code, st)
			}
			return ctx
		}).
		Assess("--fix: repaired, exit 0, all pods Ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r, took := timed(t, "stsdiag wait --fix", func() result {
				return stsdiagRun(t, cfg, "wait", "web", "-n", "wait-fix", "--stuck-grace", "3s", "--timeout", "2m", "--fix")
			})
			if r.code != 0 || !strings.Contains(r.stdout, "Complete") {
				t.Fatalf("exit %d after %s\n%s%s", r.code, took, r.stdout, r.stderr)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, clientset(t, cfg), "wait-fix", "web")
			return ctx
		}).Feature()
	testenv.TestInParallel(t, f, stuck, tagImportedLate())
}

// tagImportedLate: the CI gate right after a push. The ImageStream tag has no image yet
// (ImageStreamTagNotFound); without --fix wait reports it once it held for the grace. When the
// tag is imported a few seconds later, wait --fix patches the template to the digest and the
// rollout completes.
func tagImportedLate() features.Feature {
	setup := func(ctx context.Context, t *testing.T, cfg *envconf.Config, ns string) {
		images := imageStreams(ctx, t, cfg)
		cs := clientset(t, cfg)
		if err := scenario.Namespace(ctx, cs, ns); err != nil {
			t.Fatal(err)
		}
		is := &imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
			Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true},
				Tags: []imagev1.TagReference{{Name: "2.0", ReferencePolicy: imagev1.TagReferencePolicy{Type: imagev1.LocalTagReferencePolicy}}}}}
		created, err := images.ImageV1().ImageStreams(ns).Create(ctx, is, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.DockerImageRepository = scenario.InternalRegistry + "/" + ns + "/app"
		if _, err := images.ImageV1().ImageStreams(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, "web", "app:2.0", 1, false), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	importTag := func(ctx context.Context, t *testing.T, cfg *envconf.Config, ns string) {
		images, err := imageclient.NewForConfig(cfg.Client().RESTConfig())
		if err != nil {
			t.Error(err)
			return
		}
		is, err := images.ImageV1().ImageStreams(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		is.Status.Tags = []imagev1.NamedTagEventList{{Tag: "2.0", Items: []imagev1.TagEvent{{
			Created: metav1.Now(), Image: scenario.SeedDigest, DockerImageReference: "quay.io/example/app@" + scenario.SeedDigest, Generation: 1}}}}
		if _, err := images.ImageV1().ImageStreams(ns).UpdateStatus(ctx, is, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}
	return features.New("stsdiag wait right after a push").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			setup(ctx, t, cfg, "wait-push")
			setup(ctx, t, cfg, "wait-import")
			return ctx
		}).
		Assess("tag never imported: ImageStreamTagNotFound after the grace, exit 1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r, took := timed(t, "wait (no import)", func() result {
				return stsdiagRun(t, cfg, "wait", "web", "-n", "wait-push", "--stuck-grace", "6s", "--timeout", "1m", "-o", "json")
			})
			res := decodeWait(t, r)
			found := false
			for _, f := range res.Findings {
				found = found || (f.Code == apiv1.ImageStreamTagNotFound && f.ResolvedImage == scenario.InternalRegistry+"/wait-push/app:2.0")
			}
			if r.code != 1 || !found || took > 20*time.Second {
				t.Fatalf("exit %d after %s, findings %+v", r.code, took, res.Findings)
			}
			return ctx
		}).
		Assess("tag imported 3s later: wait --fix resolves it and completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			go func() {
				time.Sleep(3 * time.Second)
				importTag(context.Background(), t, cfg, "wait-import")
			}()
			r, took := timed(t, "wait --fix (import after 3s)", func() result {
				return stsdiagRun(t, cfg, "wait", "web", "-n", "wait-import", "--stuck-grace", "6s", "--timeout", "1m", "--fix")
			})
			if r.code != 0 || !strings.Contains(r.stderr, "image patched") {
				t.Fatalf("exit %d after %s\n%s%s", r.code, took, r.stdout, r.stderr)
			}
			set, err := clientset(t, cfg).AppsV1().StatefulSets("wait-import").Get(ctx, "web", metav1.GetOptions{})
			if err != nil || set.Spec.Template.Spec.Containers[0].Image != scenario.InternalRegistry+"/wait-import/app@"+scenario.SeedDigest {
				t.Errorf("template not patched to the imported digest (%v)", err)
			}
			return ctx
		}).Feature()
}

type junitSuite struct {
	Cases []struct {
		Name    string `xml:"name,attr"`
		Failure *struct {
			Message string `xml:"message,attr"`
			Type    string `xml:"type,attr"`
		} `xml:"failure"`
	} `xml:"testsuite>testcase"`
}

func readJUnit(t *testing.T, path string) junitSuite {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s junitSuite
	if err := xml.Unmarshal(data, &s); err != nil {
		t.Fatalf("junit: %v\n%s", err, data)
	}
	return s
}
