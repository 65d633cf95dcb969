package predict

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, allocatable corev1.ResourceList, labels map[string]string, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: allocatable}}
}

func onNode(name, node string, requests corev1.ResourceList) corev1.Pod {
	p := quotaPod(name, requests, nil)
	p.Spec.NodeName = node
	return *p
}

// TestSchedulerMessage: the reasons of each node, counted as the scheduler's FitError counts
// them, in its sentence ("0/3 nodes are available: …", pkg/scheduler/framework/types.go@v1.37.2).
func TestSchedulerMessage(t *testing.T) {
	small := list("cpu", "2", "memory", "4Gi", "pods", "110")
	cordoned := node("cordoned", small, nil)
	cordoned.Spec.Unschedulable = true
	nodes := []corev1.Node{
		node("a", small, map[string]string{"disk": "hdd"}),
		node("b", small, map[string]string{"disk": "ssd"}, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}),
		node("c", small, map[string]string{"disk": "ssd"}),
		cordoned,
	}
	cases := []struct {
		name string
		pod  func(*corev1.Pod)
		want string
	}{
		{"fits", func(*corev1.Pod) {}, ""},
		{"too much cpu for any node", func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = list("cpu", "4") },
			"0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 Insufficient cpu."},
		{"a nodeSelector only a tainted node meets", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
			p.Spec.Containers[0].Resources.Requests = list("memory", "8Gi")
		}, "0/4 nodes are available: 1 Insufficient memory, 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."},
		{"tolerating the taint and the cordon", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"disk": "nvme"}
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := quotaPod("web-0", nil, nil)
			c.pod(pod)
			s := &Scheduler{Nodes: nodes, PodsOn: func(string) ([]corev1.Pod, error) { return nil, nil }}
			p, err := s.Place(pod, nil)
			if err != nil || p.Message != c.want || (c.want == "") != p.Fits || (p.Fits && p.Node == "") {
				t.Errorf("Place = %+v, %v; want %q", p, err, c.want)
			}
		})
	}
}

// TestSchedulerCountsRoom: each placed pod takes its room; the pods on a node are read once, and
// only when a pod's room on it is in question.
func TestSchedulerCountsRoom(t *testing.T) {
	reads := map[string]int{}
	on := map[string][]corev1.Pod{"a": {onNode("other", "a", list("cpu", "1"))}}
	s := &Scheduler{Nodes: []corev1.Node{node("a", list("cpu", "2", "pods", "3"), nil), node("b", list("cpu", "2", "pods", "3"), nil)},
		PodsOn: func(n string) ([]corev1.Pod, error) { reads[n]++; return on[n], nil }}
	var got []string
	for i := 0; i < 4; i++ {
		p, err := s.Place(quotaPod(podNameFor(i), list("cpu", "1"), nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Node+p.Message)
	}
	want := []string{"a", "b", "b", "0/2 nodes are available: 2 Insufficient cpu."}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pod %d: %q, want %q", i, got[i], want[i])
		}
	}
	if reads["a"] != 1 || reads["b"] != 1 {
		t.Errorf("reads %v, want each node once", reads)
	}
	t.Run("a replacement fits where its predecessor ran, without reading the node", func(t *testing.T) {
		reads := 0
		s := &Scheduler{Nodes: []corev1.Node{node("full", list("cpu", "1", "pods", "1"), nil)},
			PodsOn: func(string) ([]corev1.Pod, error) { reads++; return nil, nil }}
		old := onNode("web-0", "full", list("cpu", "1"))
		if p, _ := s.Place(quotaPod("web-0", list("cpu", "1"), nil), &old); p.Node != "full" || reads != 0 {
			t.Errorf("Place = %+v after %d reads", p, reads)
		}
	})
	t.Run("a replacement asking more: its node's room is what the old pod leaves", func(t *testing.T) {
		old := onNode("web-0", "n", list("cpu", "1"))
		s := &Scheduler{Nodes: []corev1.Node{node("n", list("cpu", "2", "pods", "10"), nil)},
			PodsOn: func(string) ([]corev1.Pod, error) { return []corev1.Pod{old, onNode("x", "n", list("cpu", "1"))}, nil }}
		if p, _ := s.Place(quotaPod("web-0", list("cpu", "1500m"), nil), &old); p.Message != "0/1 nodes are available: 1 Insufficient cpu." {
			t.Errorf("1500m: %+v", p)
		}
		if p, _ := s.Place(quotaPod("web-0", list("cpu", "1"), nil), &old); p.Node != "n" {
			t.Errorf("1: %+v", p)
		}
	})
	t.Run("too many pods", func(t *testing.T) {
		s := &Scheduler{Nodes: []corev1.Node{node("n", list("cpu", "2", "pods", "1"), nil)},
			PodsOn: func(string) ([]corev1.Pod, error) { return []corev1.Pod{onNode("x", "n", nil)}, nil }}
		if p, _ := s.Place(quotaPod("web-0", nil, nil), nil); p.Message != "0/1 nodes are available: 1 Too many pods." {
			t.Errorf("%+v", p)
		}
	})
	t.Run("a replacement of a pod predicted from its status (node unknown)", func(t *testing.T) {
		s := &Scheduler{Nodes: []corev1.Node{node("n", list("cpu", "1", "pods", "1"), map[string]string{"disk": "hdd"})},
			PodsOn: func(string) ([]corev1.Pod, error) { return []corev1.Pod{onNode("x", "n", list("cpu", "1"))}, nil }}
		old := quotaPod("web-0", list("cpu", "1"), nil)
		if p, _ := s.Place(quotaPod("web-0", list("cpu", "1"), nil), old); !p.Fits || p.Node != "" {
			t.Errorf("same constraints and requests: %+v, want it to fit in its predecessor's room", p)
		}
		moved := quotaPod("web-0", list("cpu", "1"), nil)
		moved.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		if p, _ := s.Place(moved, old); p.Fits || p.Message != "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector." {
			t.Errorf("another nodeSelector: %+v, want the filters to judge it", p)
		}
	})
}
