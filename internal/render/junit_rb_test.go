package render_test

import (
	"bytes"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
)

// TestWaitJUnitRolledBack: a rolled-back StatefulSet fails its test case, the revision it
// returned to and the images in the failure; the other passes.
func TestWaitJUnitRolledBack(t *testing.T) {
	res := &model.WaitResult{Result: apiv1.WaitRolledBack,
		Message: "rolled back shop/db to revision db-good (revision db-bad failed; db nginx:1.27-typo → registry.k8s.io/nginx-slim:0.27): the deploy failed; the earlier revision's rollout is complete",
		StatefulSets: []apiv1.StatefulSetSummary{
			{Namespace: "shop", Name: "db", Replicas: 3, ReadyReplicas: 3, Status: apiv1.StatusComplete},
			{Namespace: "shop", Name: "web", Replicas: 1, ReadyReplicas: 1, Status: apiv1.StatusComplete},
		},
		RolledBack: []apiv1.RolledBack{{Namespace: "shop", StatefulSet: "db", Revision: "db-good", FromRevision: "db-bad",
			Images: []apiv1.ImageChange{{Container: "db", From: "nginx:1.27-typo", To: "registry.k8s.io/nginx-slim:0.27"}, {Container: "sidecar", From: "busybox:1.36"}}}}}
	var buf bytes.Buffer
	if err := render.WriteJUnit(&buf, res, 95*time.Second); err != nil {
		t.Fatal(err)
	}
	snapshottest.Golden(t, "wait-rolledback.junit.xml", buf.Bytes(), *update)
}
