package synth_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/stsdiag/stsdiag/e2e/internal/synth"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/slimpb"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestSlimDecodeOfTheBenchCluster: the benchmark's objects, encoded as the API server's protobuf,
// slim-decode to what Slim makes of client-go's full decode, and give the known findings.
func TestSlimDecodeOfTheBenchCluster(t *testing.T) {
	c := synth.Generate(40, 5, 4)
	full := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	var objs []runtime.Object
	for i := range c.StatefulSets {
		objs = append(objs, &c.StatefulSets[i])
	}
	for i := range c.Pods {
		objs = append(objs, &c.Pods[i], &c.PVCs[i])
	}
	for i := range c.Revisions {
		objs = append(objs, &c.Revisions[i])
	}
	for _, obj := range objs {
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		data, err := slimpb.Encode(obj.(interface {
			runtime.Object
			Marshal() ([]byte, error)
		}), gvks[0])
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := full.Decode(data, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		_, _ = snapshot.Slim(want)
		got, _, ok, err := slimpb.Decode(data, nil)
		if !ok || err != nil {
			t.Fatalf("%s: ok %v, %v", gvks[0].Kind, ok, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%s: slim decode differs from Slim(full decode):\n%s", gvks[0].Kind, d)
		}
		if _, err := slimpb.RoundTrip(obj); err != nil {
			t.Fatal(err)
		}
	}
	snap := c.Snapshot()
	snap.Now = time.Now()
	got := map[string]int{}
	for _, f := range diagnose.Report(snap, stuck.DefaultOptions()).Findings {
		got[string(f.Code)]++
	}
	if fmt.Sprint(got) != "map[CurrentRevisionFailing:4 StaleRevisionStuck:4 UnresolvedImageReference:4]" {
		t.Errorf("findings of the slim-decoded cluster: %v", got)
	}
}
