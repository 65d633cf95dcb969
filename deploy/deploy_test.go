// Package deploy_test renders the kustomizations of deploy/ as `kubectl apply -k` does
// (kustomize's krusty) and checks them statically. That they are admitted by PodSecurity
// "restricted" on a real kube-apiserver is e2e/deploy_test.go.
package deploy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func render(t *testing.T, dir string) []*resource.Resource {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return m.Resources()
}

func find(t *testing.T, rs []*resource.Resource, kind, name string, into any) {
	t.Helper()
	for _, r := range rs {
		if r.GetKind() == kind && r.GetName() == name {
			m, err := r.Map()
			if err != nil {
				t.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, into); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no %s %s", kind, name)
}

// restrictedV2Volumes are the volume types OpenShift's restricted-v2 SCC allows (its `volumes:`,
// as shipped in the release payload; the SCC also: runAsUser MustRunAsRange, fsGroup and
// seLinuxContext MustRunAs, allowPrivilegeEscalation false, requiredDropCapabilities [ALL],
// allowedCapabilities [NET_BIND_SERVICE], seccompProfiles [runtime/default], no host namespaces,
// ports or paths).
var restrictedV2Volumes = []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}

// TestOpenShiftOverlaysMeetRestrictedV2: the pods of deploy/openshift/watch and
// deploy/openshift/watch-fix fix no UID or group (restricted-v2 assigns them from the
// namespace's range and refuses a fixed one outside it) and meet every other rule statically.
func TestOpenShiftOverlaysMeetRestrictedV2(t *testing.T) {
	for _, dir := range []string{"openshift/watch", "openshift/watch-fix"} {
		t.Run(dir, func(t *testing.T) {
			rs := render(t, dir)
			var d appsv1.Deployment
			find(t, rs, "Deployment", "stsdiag", &d)
			pod := d.Spec.Template.Spec
			psc := pod.SecurityContext
			if psc == nil {
				t.Fatal("no pod securityContext")
			}
			if psc.RunAsUser != nil || psc.RunAsGroup != nil || psc.FSGroup != nil || len(psc.SupplementalGroups) > 0 || psc.SELinuxOptions != nil {
				t.Errorf("pod securityContext fixes an identity restricted-v2 assigns: %+v", psc)
			}
			if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
				t.Error("pod runAsNonRoot is not true")
			}
			if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod seccompProfile %+v, want RuntimeDefault", psc.SeccompProfile)
			}
			if pod.HostNetwork || pod.HostPID || pod.HostIPC {
				t.Error("host namespaces")
			}
			for _, v := range pod.Volumes {
				var kind string
				switch {
				case v.Secret != nil:
					kind = "secret"
				case v.ConfigMap != nil:
					kind = "configMap"
				case v.EmptyDir != nil:
					kind = "emptyDir"
				case v.Projected != nil:
					kind = "projected"
				case v.DownwardAPI != nil:
					kind = "downwardAPI"
				default:
					kind = "other"
				}
				if !slices.Contains(restrictedV2Volumes, kind) {
					t.Errorf("volume %s of a type restricted-v2 refuses", v.Name)
				}
			}
			if len(pod.Containers) == 0 {
				t.Fatal("no containers")
			}
			for _, c := range append(pod.InitContainers, pod.Containers...) {
				sc := c.SecurityContext
				if sc == nil {
					t.Fatalf("container %s: no securityContext", c.Name)
				}
				if sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.SELinuxOptions != nil {
					t.Errorf("container %s fixes an identity: %+v", c.Name, sc)
				}
				if sc.Privileged != nil && *sc.Privileged {
					t.Errorf("container %s privileged", c.Name)
				}
				if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
					t.Errorf("container %s: allowPrivilegeEscalation is not false", c.Name)
				}
				if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
					t.Errorf("container %s: capabilities.drop is not [ALL]: %+v", c.Name, sc.Capabilities)
				}
				for _, add := range sc.Capabilities.Add {
					if add != "NET_BIND_SERVICE" {
						t.Errorf("container %s adds %s", c.Name, add)
					}
				}
				if sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("container %s seccompProfile %s", c.Name, sc.SeccompProfile.Type)
				}
				for _, p := range c.Ports {
					if p.HostPort != 0 {
						t.Errorf("container %s hostPort %d", c.Name, p.HostPort)
					}
				}
			}
			var svc corev1.Service
			find(t, rs, "Service", "stsdiag", &svc)
			if got := svc.Annotations["service.beta.openshift.io/serving-cert-secret-name"]; got != "stsdiag-metrics-tls" {
				t.Errorf("Service serving-cert annotation %q, want stsdiag-metrics-tls", got)
			}
			mounted := false
			for _, v := range pod.Volumes {
				if v.Secret != nil && v.Secret.SecretName == "stsdiag-metrics-tls" {
					mounted = true
				}
			}
			if !mounted {
				t.Error("the service CA's Secret stsdiag-metrics-tls is not mounted")
			}
		})
	}
}

// TestEveryKustomizationBuilds: each directory a README line tells users to apply renders.
func TestEveryKustomizationBuilds(t *testing.T) {
	for _, dir := range []string{"watch", "watch-fix", "monitoring", "openshift/watch", "openshift/watch-fix", "openshift/monitoring"} {
		if rs := render(t, dir); len(rs) == 0 {
			t.Errorf("%s renders nothing", dir)
		}
	}
}

// TestServiceMonitorReachesMetrics: deploy/monitoring's ServiceMonitor names the Service port
// that leads to the container port --metrics-addr listens on, over https; the probes use the
// port of --health-addr; the Service selects the Deployment's pods.
func TestServiceMonitorReachesMetrics(t *testing.T) {
	for _, c := range []struct{ watch, monitoring string }{{"watch", "monitoring"}, {"openshift/watch", "openshift/monitoring"}} {
		t.Run(c.watch, func(t *testing.T) {
			rs := render(t, c.watch)
			var d appsv1.Deployment
			find(t, rs, "Deployment", "stsdiag", &d)
			var svc corev1.Service
			find(t, rs, "Service", "stsdiag", &svc)
			var sm struct {
				Spec struct {
					Selector struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"selector"`
					Endpoints []struct {
						Port   string `json:"port"`
						Scheme string `json:"scheme"`
						Path   string `json:"path"`
					} `json:"endpoints"`
				} `json:"spec"`
			}
			find(t, render(t, c.monitoring), "ServiceMonitor", "stsdiag", &sm)

			container := d.Spec.Template.Spec.Containers[0]
			flag := func(name string) string {
				for _, a := range container.Args {
					if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
						return v
					}
				}
				t.Fatalf("no --%s in %v", name, container.Args)
				return ""
			}
			portOf := func(name string) int32 {
				for _, p := range container.Ports {
					if p.Name == name {
						return p.ContainerPort
					}
				}
				t.Fatalf("no container port %q", name)
				return 0
			}
			if got := fmt.Sprintf(":%d", portOf("metrics")); got != flag("metrics-addr") {
				t.Errorf("container port metrics %s, --metrics-addr %s", got, flag("metrics-addr"))
			}
			if got := fmt.Sprintf(":%d", portOf("health")); got != flag("health-addr") {
				t.Errorf("container port health %s, --health-addr %s", got, flag("health-addr"))
			}
			for _, probe := range []*corev1.Probe{container.LivenessProbe, container.ReadinessProbe} {
				if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Port.String() != "health" || probe.HTTPGet.Scheme == corev1.URISchemeHTTPS {
					t.Errorf("probe %+v: want plain HTTP on port health", probe)
				}
			}
			for k, v := range svc.Spec.Selector {
				if d.Spec.Template.Labels[k] != v {
					t.Errorf("Service selects %s=%s, not a pod label", k, v)
				}
			}
			for k, v := range sm.Spec.Selector.MatchLabels {
				if svc.Labels[k] != v {
					t.Errorf("ServiceMonitor selects %s=%s, not a Service label", k, v)
				}
			}
			if len(sm.Spec.Endpoints) != 1 {
				t.Fatalf("endpoints %+v", sm.Spec.Endpoints)
			}
			ep := sm.Spec.Endpoints[0]
			if ep.Scheme != "https" || ep.Path != "/metrics" {
				t.Errorf("endpoint %+v: want https /metrics", ep)
			}
			found := false
			for _, p := range svc.Spec.Ports {
				if p.Name == ep.Port {
					found = true
					if p.TargetPort.String() != "metrics" {
						t.Errorf("Service port %s targets %s, want metrics", p.Name, p.TargetPort.String())
					}
				}
			}
			if !found {
				t.Errorf("ServiceMonitor port %q is no port of Service stsdiag", ep.Port)
			}
		})
	}
}
