package stuck

import (
	"reflect"
	"testing"

	"github.com/stsdiag/stsdiag/stuck/facts"
)

// TestMissingConfig reads the kubelet's own words (k8s.io/kubernetes@v1.37.2) for a missing
// Secret, ConfigMap or key.
func TestMissingConfig(t *testing.T) {
	cases := []struct {
		msg, source string
		want        *facts.Missing
	}{
		{`secret "db-tls" not found`, "watch_based_manager.go:336 (a volume or an env var)", &facts.Missing{Kind: "secret", Name: "db-tls"}},
		{`configmap "app-config" not found`, "watch_based_manager.go:336", &facts.Missing{Kind: "configmap", Name: "app-config"}},
		{"couldn't find key LOG_LEVEL in ConfigMap shop/app-config", "kubelet_pods.go:917", &facts.Missing{Kind: "configmap", Name: "app-config", Key: "LOG_LEVEL"}},
		{"couldn't find key password in Secret shop/db", "kubelet_pods.go:944", &facts.Missing{Kind: "secret", Name: "db", Key: "password"}},
		{"references non-existent secret key: tls.crt", "secret.go:285", &facts.Missing{Kind: "secret", Key: "tls.crt"}},
		{"configmap references non-existent config key: app.conf", "configmap.go:300", &facts.Missing{Kind: "configmap", Key: "app.conf"}},
		{"rpc error: code = Internal desc = mount failed: exit status 32", "a CSI driver", nil},
		{`object "shop"/"kube-root-ca.crt" not registered`, "a projected volume at kubelet start", nil},
	}
	for _, c := range cases {
		if got := missingConfig(c.msg); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q (%s): %+v, want %+v", c.msg, c.source, got, c.want)
		}
	}
}

func TestStartupReasonsIncludeImagePull(t *testing.T) {
	for r := range imagePullReasons {
		if !startupReasons[r] {
			t.Errorf("%s is an image-pull reason but not a startup reason", r)
		}
	}
	if len(startupReasons) != 8 || !startupReasons["CrashLoopBackOff"] {
		t.Errorf("startup reasons %v", startupReasons)
	}
}
