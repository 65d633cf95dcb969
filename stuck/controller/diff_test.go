package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTemplateDiff(t *testing.T) {
	from := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}, {Name: "side", Image: "side:1"}}}}
	to := from.DeepCopy()
	to.Spec.Containers[0].Image = "nginx:1.28"
	to.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
	to.Labels["rev"] = "2"
	got := strings.Join(TemplateDiff(from, to), "\n")
	want := strings.Join([]string{
		"containers[app].image: nginx:1.27 → nginx:1.28",
		"containers[app].resources.limits.cpu: (none) → 200m",
		"metadata.labels.rev: (none) → 2",
	}, "\n")
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if d := TemplateDiff(from, from.DeepCopy()); len(d) != 0 {
		t.Errorf("same template: %v", d)
	}
}
