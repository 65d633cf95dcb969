package openshift_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/openshift"
)

func TestEnabled(t *testing.T) {
	withImageAPI := fake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
	withImageAPI.Resources = []*metav1.APIResourceList{{GroupVersion: "image.openshift.io/v1",
		APIResources: []metav1.APIResource{{Name: "imagestreams", Kind: "ImageStream", Namespaced: true}}}}
	plain := fake.NewClientset().Discovery()
	cases := []struct {
		mode openshift.Mode
		disc bool
		want bool
	}{
		{openshift.ModeAuto, true, true},
		{openshift.ModeAuto, false, false},
		{openshift.ModeNever, true, false},
		{openshift.ModeAlways, false, true},
	}
	for _, c := range cases {
		d := plain
		if c.disc {
			d = withImageAPI
		}
		got, err := openshift.Enabled(context.Background(), c.mode, d)
		if err != nil || got != c.want {
			t.Errorf("mode %s, image API served %v: got %v (%v), want %v", c.mode, c.disc, got, err, c.want)
		}
	}
	if _, err := openshift.ParseMode("sometimes"); err == nil {
		t.Error("ParseMode accepted a bad mode")
	}
}
