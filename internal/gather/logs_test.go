package gather_test

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestPreviousLogs: only findings about a container that exited get its previous log, read once
// per container.
func TestPreviousLogs(t *testing.T) {
	kube := fake.NewClientset()
	crashed := func(pod string) stuck.Finding {
		f := stuck.Finding{Finding: apiv1.Finding{Code: apiv1.CurrentRevisionFailing, Namespace: "shop", Pod: pod, Container: "db"}}
		f.Details.LastExitCode = model.Ptr(int32(1))
		return f
	}
	findings := []stuck.Finding{crashed("db-0"), crashed("db-0"),
		{Finding: apiv1.Finding{Code: apiv1.PodUnschedulable, Namespace: "shop", Pod: "db-1", Container: "db"}}}
	if w := gather.PreviousLogs(context.Background(), kube, findings, 20); len(w) != 0 {
		t.Fatalf("warnings %v", w)
	}
	// The fake clientset answers every log request with "fake logs".
	if !reflect.DeepEqual(findings[0].Details.Logs, []string{"fake logs"}) || !reflect.DeepEqual(findings[1].Details.Logs, []string{"fake logs"}) {
		t.Errorf("logs %q %q", findings[0].Details.Logs, findings[1].Details.Logs)
	}
	if findings[2].Details.Logs != nil {
		t.Errorf("a container that never exited got logs: %q", findings[2].Details.Logs)
	}
	gets := 0
	for _, a := range kube.Actions() {
		if a.GetSubresource() == "log" {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("%d log requests, want 1 (one per container)", gets)
	}
}

// TestLogOfTheRunThatExitedLast: while the container is terminated (a kubelet >= 1.34 shows a
// crash loop so between restarts) its last run is the current container, and `--previous`
// would fail or give an older run; otherwise the last run is the previous one.
func TestLogOfTheRunThatExitedLast(t *testing.T) {
	kube := fake.NewClientset()
	exited := func(pod string, terminatedNow bool) stuck.Finding {
		f := stuck.Finding{Finding: apiv1.Finding{Code: apiv1.CurrentRevisionFailing, Namespace: "shop", Pod: pod, Container: "db"}, LogCurrent: terminatedNow}
		f.Details.LastExitCode = model.Ptr(int32(3))
		return f
	}
	findings := []stuck.Finding{exited("db-0", true), exited("db-1", false)}
	if w := gather.PreviousLogs(context.Background(), kube, findings, 5); len(w) != 0 {
		t.Fatalf("warnings %v", w)
	}
	// Findings are read in order, one request each.
	var previous []bool
	for _, a := range kube.Actions() {
		if a.GetSubresource() == "log" {
			previous = append(previous, a.(k8stesting.GenericAction).GetValue().(*corev1.PodLogOptions).Previous)
		}
	}
	if want := []bool{false, true}; !reflect.DeepEqual(previous, want) {
		t.Errorf("previous per request %v, want %v (db-0 terminated now, db-1 running again)", previous, want)
	}
}
