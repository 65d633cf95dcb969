package predict

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

func webSet(replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": "web"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), ServiceName: "web-headless", Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"a": "b"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/nginx-slim:0.27"}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "db"}}}},
		},
	}
}

// TestNewPod: the pod newStatefulSetPod builds (stateful_set_utils.go:422-533@v1.37.2): the
// template's labels and annotations, the pod-name, pod-index and revision labels, hostname and
// subdomain, the controller reference, the claim of the volumeClaimTemplate in place of the
// template's volume of the same name, the other volumes after it.
func TestNewPod(t *testing.T) {
	pod := NewPod(webSet(3), &webSet(3).Spec.Template, "web-abc", 2)
	got, _ := json.Marshal(struct {
		Meta metav1.ObjectMeta
		Host string
		Sub  string
		Vols []corev1.Volume
	}{pod.ObjectMeta, pod.Spec.Hostname, pod.Spec.Subdomain, pod.Spec.Volumes})
	want := `{"Meta":{"name":"web-2","generateName":"web-","namespace":"shop","labels":{"app":"web","apps.kubernetes.io/pod-index":"2","controller-revision-hash":"web-abc","statefulset.kubernetes.io/pod-name":"web-2"},"annotations":{"a":"b"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"set-uid","controller":true,"blockOwnerDeletion":true}]},` +
		`"Host":"web-2","Sub":"web-headless","Vols":[{"name":"data","persistentVolumeClaim":{"claimName":"data-web-2"}},{"name":"config","emptyDir":{}}]}`
	if string(got) != want {
		t.Errorf("pod\n%s\nwant\n%s", got, want)
	}
	claims := NewClaims(webSet(3), 2)
	if len(claims) != 1 || claims[0].Name != "data-web-2" || claims[0].Namespace != "shop" || claims[0].Labels["tier"] != "db" || claims[0].Labels["app"] != "web" {
		t.Errorf("claims %+v", claims)
	}
}

func TestPlan(t *testing.T) {
	pod := func(o int, rev string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podNameFor(o), Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: rev}}}
	}
	current := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "old"}}}}
	cases := []struct {
		name  string
		set   func(*appsv1.StatefulSet)
		pods  map[int]*corev1.Pod
		claim bool
		want  string
	}{
		{name: "a new StatefulSet: every ordinal, lowest first", want: "Create web-0 web-new, Create web-1 web-new, Create web-2 web-new"},
		{name: "a rolling update: highest first", pods: map[int]*corev1.Pod{0: pod(0, "web-old"), 1: pod(1, "web-old"), 2: pod(2, "web-new")},
			want: "Replace web-1 web-new, Replace web-0 web-new"},
		{name: "scale up with a partition: missing ordinals below it come from the current revision",
			set: func(s *appsv1.StatefulSet) {
				s.Spec.Replicas = ptr.To(int32(4))
				s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(int32(2))}
			},
			pods: map[int]*corev1.Pod{0: pod(0, "web-old"), 2: pod(2, "web-old")},
			want: "Create web-1 web-old, Create web-3 web-new, Replace web-2 web-new"},
		{name: "OnDelete replaces nothing by itself", set: func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType },
			pods: map[int]*corev1.Pod{0: pod(0, "web-old"), 1: pod(1, "web-old")}, want: "Create web-2 web-new"},
		{name: "ordinals.start", set: func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = ptr.To(int32(2))
			s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
		}, want: "Create web-5 web-new, Create web-6 web-new"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := webSet(3)
			set.Spec.VolumeClaimTemplates = nil
			if c.set != nil {
				c.set(set)
			}
			var got []string
			for _, p := range Plan(set, "web-old", current, "web-new", c.pods, nil) {
				got = append(got, string(p.Action)+" "+p.Name+" "+p.Revision)
				if p.Action == apiv1.PodCreate && p.Revision == "web-old" && p.Pod.Spec.Containers[0].Image != "old" {
					t.Errorf("%s from the current revision has image %s", p.Name, p.Pod.Spec.Containers[0].Image)
				}
			}
			if s := strings.Join(got, ", "); s != c.want {
				t.Errorf("plan %s\nwant %s", s, c.want)
			}
		})
	}
	t.Run("claims that exist are not created again", func(t *testing.T) {
		plan := Plan(webSet(2), "", nil, "web-new", nil, map[string]bool{"data-web-0": true})
		if len(plan[0].Claims) != 0 || len(plan[1].Claims) != 1 || plan[1].Claims[0].Name != "data-web-1" {
			t.Errorf("claims %+v / %+v", plan[0].Claims, plan[1].Claims)
		}
	})
}

func TestSettledPods(t *testing.T) {
	set := webSet(2)
	set.Status = appsv1.StatefulSetStatus{Replicas: 2, UpdateRevision: "web-cur"}
	set.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	lr := []corev1.LimitRange{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
		Default: list("cpu", "500m"), DefaultRequest: list("cpu", "100m")}}}}}
	pods := SettledPods(set, lr)
	if len(pods) != 2 || pods[1].Name != "web-1" || pods[1].Labels[appsv1.ControllerRevisionHashLabelKey] != "web-cur" ||
		pods[1].Status.Phase != corev1.PodRunning || pods[1].Spec.NodeName != "" {
		t.Fatalf("pods %+v", pods)
	}
	r := pods[0].Spec.Containers[0].Resources
	if got, want := r.Requests.Cpu().String()+"/"+r.Limits.Cpu().String(), "100m/500m"; got != want {
		t.Errorf("resources %s, want the LimitRange's defaults %s", got, want)
	}
}
