package stuck_test

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// TestFacts: the rules establish typed facts (Diagnose words them; testdata/golden/findings
// locks the words).
func TestImageFacts(t *testing.T) {
	at := func(hour, minute int) time.Time { return time.Date(2026, 11, 25, hour, minute, 0, 0, time.UTC) }
	cases := []struct {
		name, scenario, set string
		code                apiv1.Code
		want                facts.Facts
	}{
		{name: "stream created after the template", scenario: "causes", set: "late", code: apiv1.UnresolvedImageReference,
			want: facts.NotRewritten{Stream: "late", Tag: "1", PulledAs: "docker.io/library/late:1", Cause: facts.CauseStreamCreatedAfterTemplate,
				Revision: "late-1", RevisionCreated: at(8, 0), Later: at(9, 0), Digest: true}},
		{name: "tag created after the template", scenario: "causes", set: "tagged", code: apiv1.UnresolvedImageReference,
			want: facts.NotRewritten{Stream: "tagged", Tag: "1", PulledAs: "docker.io/library/tagged:1", Cause: facts.CauseTagCreatedAfterTemplate,
				Revision: "tagged-1", RevisionCreated: at(8, 0), Later: at(8, 30), Digest: true}},
		{name: "no history", scenario: "causes", set: "rolledback", code: apiv1.UnresolvedImageReference,
			want: facts.NotRewritten{Stream: "rolledback", Tag: "1", PulledAs: "docker.io/library/rolledback:1", Cause: facts.CauseUnknown, Digest: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap, err := stuck.LoadFile(filepath.Join("..", "testdata", "resolver", c.scenario, "objects.yaml"), snapshottest.Now)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range imageDiagnosis(snap) {
				if f.Code == c.code && f.StatefulSet == c.set {
					if !reflect.DeepEqual(f.Facts, c.want) {
						t.Errorf("facts\n%#v\nwant\n%#v", f.Facts, c.want)
					}
					if f.Message == "" || f.Short == "" {
						t.Errorf("not worded: message %q, short %q", f.Message, f.Short)
					}
					return
				}
			}
			t.Fatalf("no %s finding for %s", c.code, c.set)
		})
	}
}
