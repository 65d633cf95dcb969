package gather_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// objects is namespace shop with n StatefulSets set-<i> (label tier=i%2) of 3 pods each.
func objects(n int) []runtime.Object {
	objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("set-%d", i)
		objs = append(objs, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"tier": fmt.Sprint(i % 2)}}})
		for j := 0; j < 3; j++ {
			objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, j), Namespace: "shop"}})
		}
	}
	return objs
}

// verbs counts the requests by verb/resource.
func verbs(actions []k8stesting.Action) map[string]int {
	out := map[string]int{}
	for _, a := range actions {
		out[a.GetVerb()+"/"+a.GetResource().Resource]++
	}
	return out
}
