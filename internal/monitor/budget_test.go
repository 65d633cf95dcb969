package monitor

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"
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

// TestFindingsGaugeAtScrape: stsdiag_findings is computed from the monitor's state when scraped.
func TestFindingsGaugeAtScrape(t *testing.T) {
	metrics := NewMetrics()
	c := New(testClients(), testScope(), Options{}, metrics)
	c.seen["shop/web"] = &setState{findings: map[string]stuck.Finding{
		"a": {Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Namespace: "shop"}},
		"b": {Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Namespace: "shop"}},
	}}
	want := `
# HELP stsdiag_findings Findings present now, by code and namespace.
# TYPE stsdiag_findings gauge
stsdiag_findings{code="StaleRevisionStuck",namespace="shop"} 2
`
	if err := testutil.GatherAndCompare(metrics.Registry, strings.NewReader(want), "stsdiag_findings"); err != nil {
		t.Error(err)
	}
}
