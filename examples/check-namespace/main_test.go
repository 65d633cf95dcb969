package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestCheck: kubernetes#67250 from testdata, served by a fake API server.
func TestCheck(t *testing.T) {
	objs, err := stuck.LoadFile("../../testdata/stuck/stale-revision-stuck-1-replica/objects.yaml", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	all := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}
	for i := range objs.StatefulSets {
		all = append(all, &objs.StatefulSets[i])
	}
	for i := range objs.Pods {
		all = append(all, &objs.Pods[i])
	}
	for i := range objs.Revisions {
		all = append(all, &objs.Revisions[i])
	}
	var out bytes.Buffer
	n, err := check(context.Background(), read.Clients{Kube: fake.NewClientset(all...)}, "shop", &out)
	if err != nil || n != 1 || !strings.Contains(out.String(), "shop/web: Stuck: StaleRevisionStuck: web-0") ||
		!strings.Contains(out.String(), "remedy: kubectl delete pod web-0 -n shop") {
		t.Fatalf("%d stuck, %v:\n%s", n, err, out.String())
	}
}
