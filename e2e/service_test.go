package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestServiceMissing: four Ready StatefulSets naming a governing Service: none exists, a
// ClusterIP one, a headless one selecting other pods, and a correct headless one.
func TestServiceMissing(t *testing.T) {
	t.Parallel() // isolated namespaces; runs after the serial tests (TestWatch restarts kube-apiserver)
	const ns = "service-check"
	sets := map[string]*corev1.Service{
		"nf":  nil,
		"ip":  {Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "ip"}, Ports: []corev1.ServicePort{{Port: 80}}}},
		"sel": {Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "other"}}},
		"ok":  {Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "ok"}}},
	}
	f := features.New("ServiceMissing").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			for name, svc := range sets {
				if svc != nil {
					svc.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: ns}
					if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				set := scenario.StatefulSet(ns, name, scenario.GoodImage, 1, false)
				set.Spec.ServiceName = name
				if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for name := range sets {
				if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			return ctx
		}).
		Assess("premise: the controller gives each pod its Service as subdomain; the Services are as made", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.HoldsFor(ctx, t, 4*time.Second, func(ctx context.Context) error {
				for name := range sets {
					pod, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-0", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if pod.Spec.Hostname != name+"-0" || pod.Spec.Subdomain != name || !harness.PodReady(pod) {
						return fmt.Errorf("pod %s: hostname %q subdomain %q ready %v", pod.Name, pod.Spec.Hostname, pod.Spec.Subdomain, harness.PodReady(pod))
					}
				}
				ip, err := cs.CoreV1().Services(ns).Get(ctx, "ip", metav1.GetOptions{})
				if err != nil || ip.Spec.ClusterIP == "" || ip.Spec.ClusterIP == corev1.ClusterIPNone {
					return fmt.Errorf("service ip has clusterIP %q (%v)", ip.Spec.ClusterIP, err)
				}
				return nil
			})
			return ctx
		}).
		Assess("one warning per reason, none for the headless Service; exit 0; the shipped role suffices", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "service-reader", loadRole(t, "../deploy/check-clusterrole.yaml").Rules)
			r := stsdiagRun(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json", "--kubeconfig", kubeconfig)
			rep := decodeReport(t, r)
			if r.code != 0 || r.stderr != "" || len(rep.Findings) != 3 {
				t.Fatalf("exit %d stderr %q findings %v", r.code, r.stderr, harness.Codes(rep))
			}
			want := map[string]string{"nf": "NotFound", "ip": "NotHeadless", "sel": "SelectorMismatch"}
			for _, f := range rep.Findings {
				if f.Code != apiv1.ServiceMissing || f.Severity != apiv1.SeverityWarning || f.Reason != want[f.StatefulSet] ||
					harness.Details(f)["reason"] != want[f.StatefulSet] || harness.Details(f)["service"] != f.StatefulSet || f.Remedy == "" {
					t.Errorf("finding %+v", f)
				}
				delete(want, f.StatefulSet)
			}
			if len(want) != 0 {
				t.Errorf("missing findings for %v", want)
			}
			for _, f := range rep.Findings {
				if f.StatefulSet == "nf" && f.Remedy != "kubectl create service clusterip nf --clusterip=None -n "+ns+" (it selects app=nf)" {
					t.Errorf("remedy %q", f.Remedy)
				}
			}
			return ctx
		}).
		Assess("the remedy of NotFound repairs it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "nf", Namespace: ns},
				Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "nf"}}}
			if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			rep := decodeReport(t, stsdiagRun(t, cfg, "check", "--openshift", "never", "nf", "-n", ns, "-o", "json"))
			if len(rep.Findings) != 0 {
				t.Errorf("findings %v", harness.Codes(rep))
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
