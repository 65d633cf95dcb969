package watch

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestRepairBudgetIsOneDecision: many workers reserving at once never get more than
// --max-repairs-per-hour actions per namespace; refunds and the hour passing free the budget.
func TestRepairBudgetIsOneDecision(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	c := New(testClients(), testScope(), Options{MaxRepairsPerHour: 10, Clock: clock}, NewMetrics())
	var granted atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				n := 1 + i%3
				if c.reserveRepairs("shop", n) {
					granted.Add(int64(n))
				}
			}
		}()
	}
	wg.Wait()
	if got := granted.Load(); got > 10 || got < 8 {
		t.Fatalf("granted %d actions, budget 10", got)
	}
	if c.reserveRepairs("shop", 1) && granted.Load() == 10 {
		t.Error("the budget is spent")
	}
	if !c.reserveRepairs("other", 10) {
		t.Error("the budget is per namespace")
	}
	c.refundRepairs("other", 4)
	if !c.reserveRepairs("other", 4) || c.reserveRepairs("other", 1) {
		t.Error("refunded actions go back to the budget, exactly")
	}
	clock.Step(time.Hour + time.Second)
	if !c.reserveRepairs("shop", 10) {
		t.Error("an hour later the budget is whole again")
	}
}

func testClients() gather.Clients {
	return gather.Clients{Clients: read.Clients{Kube: fake.NewClientset()}}
}

func testScope() gather.Scope { return gather.Scope{Namespace: "shop", OpenShift: openshift.ModeNever} }

// TestFindingsGaugeAtScrape: stsdiag_findings and stsdiag_statefulset_findings are computed
// from the monitor's state when scraped: per StatefulSet by code and reason (never by pod), and
// summed by code and namespace; a StatefulSet whose findings are gone has no series left.
func TestFindingsGaugeAtScrape(t *testing.T) {
	metrics := NewMetrics()
	c := New(testClients(), testScope(), Options{}, metrics)
	now := time.Unix(1000, 0)
	pull := func(pod string) stuck.Finding {
		return stuck.Finding{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Reason: "ImagePullBackOff", Namespace: "shop", StatefulSet: "web", Pod: pod}}
	}
	c.observe("shop/web", []stuck.Finding{pull("web-0"), pull("web-1"),
		{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Reason: "CrashLoopBackOff", Namespace: "shop", StatefulSet: "web", Pod: "web-2"}}}, now)
	c.observe("shop/db", []stuck.Finding{{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Reason: "ErrImagePull", Namespace: "shop", StatefulSet: "db", Pod: "db-0"}}}, now)
	c.observe("shop/cache", []stuck.Finding{{Finding: apiv1.Finding{Code: apiv1.OnDeleteStale, Namespace: "shop", StatefulSet: "cache", Pod: "cache-0"}}}, now)
	want := `
# HELP stsdiag_findings Findings present now, by code and namespace.
# TYPE stsdiag_findings gauge
stsdiag_findings{code="OnDeleteStale",namespace="shop"} 1
stsdiag_findings{code="StaleRevisionStuck",namespace="shop"} 4
# HELP stsdiag_statefulset_findings Findings present now on each StatefulSet that has one, by code and reason (the low-level cause, e.g. ImagePullBackOff); no series for a StatefulSet without findings.
# TYPE stsdiag_statefulset_findings gauge
stsdiag_statefulset_findings{code="OnDeleteStale",namespace="shop",reason="",statefulset="cache"} 1
stsdiag_statefulset_findings{code="StaleRevisionStuck",namespace="shop",reason="CrashLoopBackOff",statefulset="web"} 1
stsdiag_statefulset_findings{code="StaleRevisionStuck",namespace="shop",reason="ErrImagePull",statefulset="db"} 1
stsdiag_statefulset_findings{code="StaleRevisionStuck",namespace="shop",reason="ImagePullBackOff",statefulset="web"} 2
`
	if err := testutil.GatherAndCompare(metrics.Registry, strings.NewReader(want), "stsdiag_findings", "stsdiag_statefulset_findings"); err != nil {
		t.Error(err)
	}
	// web and cache settle: only db's series are left.
	c.observe("shop/web", nil, now.Add(time.Minute))
	c.observe("shop/cache", nil, now.Add(time.Minute))
	want = `
# HELP stsdiag_findings Findings present now, by code and namespace.
# TYPE stsdiag_findings gauge
stsdiag_findings{code="StaleRevisionStuck",namespace="shop"} 1
# HELP stsdiag_statefulset_findings Findings present now on each StatefulSet that has one, by code and reason (the low-level cause, e.g. ImagePullBackOff); no series for a StatefulSet without findings.
# TYPE stsdiag_statefulset_findings gauge
stsdiag_statefulset_findings{code="StaleRevisionStuck",namespace="shop",reason="ErrImagePull",statefulset="db"} 1
`
	if err := testutil.GatherAndCompare(metrics.Registry, strings.NewReader(want), "stsdiag_findings", "stsdiag_statefulset_findings"); err != nil {
		t.Error(err)
	}
}
