package stuck_test

import (
	"fmt"
	"os"
	"time"

	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// kubernetes#67250, recorded from a v1.37 control plane: web-0 was rolled out with an image tag
// that does not exist, the template was fixed, and the controller waits forever for web-0.
func ExampleDiagnose() {
	f, err := os.Open("../testdata/stuck/stale-revision-stuck-3-replicas/objects.yaml")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	objs, err := stuck.Load(f, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	res := stuck.Diagnose(objs, stuck.DefaultOptions())
	fmt.Println("rules of", res.Rules.Version)
	for _, f := range res.Findings {
		fmt.Println(f.Code, f.Namespace, f.Pod)
		if stale, ok := f.Facts.(facts.StaleStuck); ok {
			fmt.Printf("on revision %s: %s pulling %s; the controller waits for it\n", stale.Revision, stale.Startup.Reason, stale.Startup.Image)
		}
	}
	// Output:
	// rules of v1.37.2
	// StaleRevisionStuck shop web-0
	// on revision web-a: ImagePullBackOff pulling app:typo; the controller waits for it
}

// The controller's behaviour depends on its release: a Parallel rolling update whose old pods are
// unavailable never finishes on v1.35.0–v1.35.3, where MaxUnavailableStatefulSet is on by
// default (kubernetes#137409).
func ExampleRulesFor() {
	for _, v := range []string{"v1.34.4", "v1.35.3", "v1.35.4", "v1.37.2"} {
		r, err := stuck.RulesFor(v, nil)
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Version, "MaxUnavailableStatefulSet:", r.Gates["MaxUnavailableStatefulSet"])
	}
	// Output:
	// v1.34.4 MaxUnavailableStatefulSet: false
	// v1.35.3 MaxUnavailableStatefulSet: true
	// v1.35.4 MaxUnavailableStatefulSet: false
	// v1.37.2 MaxUnavailableStatefulSet: true
}

// The case stsdiag was written for (OpenShift 4.8): the template still says the local name, the
// pod pulls docker.io/library/statefulset-issue-demo and fails; the finding carries the patch.
func ExampleDiagnose_openShift() {
	f, err := os.Open("../testdata/resolver/seed/objects.yaml")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	objs, err := stuck.Load(f, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	for _, f := range stuck.Diagnose(objs, stuck.DefaultOptions()).Findings {
		if f.Patch == nil {
			continue
		}
		fmt.Println(f.Code, f.StatefulSet, f.Container, f.Image)
		fmt.Println("patch", f.Patch.Path, "→", f.Patch.To)
	}
	// Output:
	// UnresolvedImageReference web app statefulset-issue-demo:1.0.1
	// patch /spec/template/spec/containers/0/image → image-registry.openshift-image-registry.svc:5000/demo/statefulset-issue-demo@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
}
