package engine

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func mustParse(t *testing.T, s string) []Step {
	t.Helper()
	steps, err := ParseSteps(s)
	if err != nil {
		t.Fatalf("ParseSteps(%q): %v", s, err)
	}
	return steps
}

func TestParseStepsRejects(t *testing.T) {
	cases := map[string]string{
		"":        "--steps is empty",
		"1,,50%":  `step "": want a positive number`,
		"0":       `step "0": want a positive number`,
		"-1":      `step "-1": want a positive number`,
		"0%":      `step "0%": a percentage must be a whole number from 1% to 100%`,
		"101%":    `step "101%": a percentage must be a whole number`,
		"12.5%":   `step "12.5%": a percentage must be a whole number`,
		"2,1":     `step "1": steps must increase (1 comes after 2)`,
		"50%,25%": `step "25%": steps must increase (25% comes after 50%)`,
		"1,1":     `step "1": steps must increase`,
		"one":     `step "one": want a positive number of pods (1) or a percentage of spec.replicas (50%)`,
	}
	for in, want := range cases {
		_, err := ParseSteps(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSteps(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

// TestResolve: partitions as the acceptance names them (4 replicas, 1,50%,100% →
// 3, 2, 0), percentages rounded up, counts above replicas clamped, steps that move no pod merged,
// the implied 100%, and a mix that decreases rejected.
func TestResolve(t *testing.T) {
	cases := []struct {
		steps    string
		replicas int32
		want     []Resolved
		merged   int
	}{
		{"1,50%,100%", 4, []Resolved{{"1", 1, 3}, {"50%", 2, 2}, {"100%", 4, 0}}, 0},
		{"1,50%", 4, []Resolved{{"1", 1, 3}, {"50%", 2, 2}, {"100%", 4, 0}}, 0},
		// 50% of 3 is 1.5, rounded up to 2
		{"1,50%", 3, []Resolved{{"1", 1, 2}, {"50%", 2, 1}, {"100%", 3, 0}}, 0},
		// 10% of 4 is 0.4 → 1 pod, the same as step 1: merged
		{"1,10%,50%", 4, []Resolved{{"1", 1, 3}, {"50%", 2, 2}, {"100%", 4, 0}}, 1},
		// 1% of 1000 rounds up to 10
		{"1%,25%", 1000, []Resolved{{"1%", 10, 990}, {"25%", 250, 750}, {"100%", 1000, 0}}, 0},
		// with 1 replica every step is the whole set
		{"1,50%", 1, []Resolved{{"1", 1, 0}}, 1},
		// a count above replicas is all of them; the written 100% is kept as written
		{"2,10", 3, []Resolved{{"2", 2, 1}, {"10", 3, 0}}, 0},
		{"25%,100%", 4, []Resolved{{"25%", 1, 3}, {"100%", 4, 0}}, 0},
	}
	for _, c := range cases {
		got, merged, err := Resolve(mustParse(t, c.steps), c.replicas)
		if err != nil {
			t.Errorf("Resolve(%s, %d): %v", c.steps, c.replicas, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) || len(merged) != c.merged {
			t.Errorf("Resolve(%s, %d) = %v merged %q, want %v and %d merged", c.steps, c.replicas, got, merged, c.want, c.merged)
		}
	}
	if _, _, err := Resolve(mustParse(t, "3,50%"), 4); err == nil || err.Error() != `step "50%" moves 2 of 4 pods, fewer than step "3" before it (3): steps must increase` {
		t.Errorf("decreasing mix: %v", err)
	}
	if _, _, err := Resolve(mustParse(t, "1"), 0); err == nil || err.Error() != "spec.replicas is 0: there is no pod to canary" {
		t.Errorf("0 replicas: %v", err)
	}
}

// TestNext: the step after a partition, re-resolved when replicas change mid-canary.
func TestNext(t *testing.T) {
	steps := mustParse(t, "1,50%")
	at := func(replicas, partition int32) (int32, bool) {
		r, _, err := Resolve(steps, replicas)
		if err != nil {
			t.Fatal(err)
		}
		s, _, ok := Next(r, partition)
		return s.Partition, ok
	}
	cases := []struct {
		name                string
		replicas, partition int32
		want                int32
		ok                  bool
	}{
		{"start: partition held at replicas", 4, 4, 3, true},
		{"after step 1", 4, 3, 2, true},
		{"after 50%", 4, 2, 0, true},
		{"done", 4, 0, 0, false},
		// scaled 4 → 10 during step 1 (partition 3): 50% of 10 is partition 5, already passed
		// (pods 3..9 are on the update revision), so the next step is 100%
		{"scaled up mid-canary", 10, 3, 0, true},
		// scaled 4 → 8 before step 1 passed: partition 3 of 8 moved 5 pods; next is 100%
		{"scaled up, 50% covered", 8, 3, 0, true},
		// scaled 4 → 2 during step 1 (partition 3 > replicas, no pod on the update revision):
		// step 1 of 2 is partition 1
		{"scaled down mid-canary", 2, 3, 1, true},
	}
	for _, c := range cases {
		got, ok := at(c.replicas, c.partition)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: Next(replicas %d, partition %d) = %d %v, want %d %v", c.name, c.replicas, c.partition, got, ok, c.want, c.ok)
		}
	}
}

// TestCanaryPods: the partition is an index relative to spec.ordinals.start
// (stateful_set_control.go:603-607, stateful_set_utils.go:536-541@v1.37.2): with start 5 and 4
// replicas the pods are web-5..web-8, and partition 3 moves web-8 only.
func TestCanaryPods(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](4)}}
	if got := CanaryPods(set, 3); !reflect.DeepEqual(got, []string{"web-3"}) {
		t.Errorf("start 0, partition 3: %v", got)
	}
	if got := CanaryPods(set, 2); !reflect.DeepEqual(got, []string{"web-3", "web-2"}) {
		t.Errorf("start 0, partition 2: %v", got)
	}
	set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
	if got := CanaryPods(set, 3); !reflect.DeepEqual(got, []string{"web-8"}) {
		t.Errorf("start 5, partition 3: %v", got)
	}
	if got := CanaryPods(set, 0); !reflect.DeepEqual(got, []string{"web-8", "web-7", "web-6", "web-5"}) {
		t.Errorf("start 5, partition 0: %v", got)
	}
	if got := CanaryPods(set, 4); len(got) != 0 {
		t.Errorf("partition = replicas moves nothing: %v", got)
	}
}

func TestCheckStrategy(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	if err := CheckStrategy(set); err != nil {
		t.Errorf("unset strategy (RollingUpdate by default): %v", err)
	}
	set.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	want := "statefulset shop/web has updateStrategy OnDelete: the controller updates a pod only when someone deletes it and ignores the partition, so a canary cannot step it; use RollingUpdate"
	if err := CheckStrategy(set); err == nil || err.Error() != want {
		t.Errorf("OnDelete: %v", err)
	}
}

func opsOf(t *testing.T, body []byte) string {
	t.Helper()
	var ops []map[string]any
	if err := json.Unmarshal(body, &ops); err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestPartitionPatch: tests the UID, generation and the partition as read; adds what is absent.
func TestPartitionPatch(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1", Generation: 7}}
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](3)}}
	body, _ := PartitionPatch(set, 0)
	want := `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/generation","value":7},` +
		`{"op":"test","path":"/spec/updateStrategy/rollingUpdate/partition","value":3},{"op":"replace","path":"/spec/updateStrategy/rollingUpdate/partition","value":0}]`
	if got := opsOf(t, body); got != want {
		t.Errorf("partition 3 → 0:\n got %s\nwant %s", got, want)
	}
	set.Spec.UpdateStrategy.RollingUpdate.Partition = nil
	body, _ = PartitionPatch(set, 3)
	if got := opsOf(t, body); !strings.HasSuffix(got, `{"op":"add","path":"/spec/updateStrategy/rollingUpdate/partition","value":3}]`) {
		t.Errorf("no partition: %s", got)
	}
	set.Spec.UpdateStrategy.RollingUpdate = nil
	body, _ = PartitionPatch(set, 3)
	if got := opsOf(t, body); !strings.HasSuffix(got, `{"op":"test","path":"/spec/updateStrategy/type","value":"RollingUpdate"},{"op":"add","path":"/spec/updateStrategy/rollingUpdate","value":{"partition":3}}]`) {
		t.Errorf("no rollingUpdate: %s", got)
	}
}

// TestImagePatch: the image tested as read and replaced in the same patch as the partition.
func TestImagePatch(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1", Generation: 2}}
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}}
	set.Spec.Template.Spec.Containers = []corev1.Container{{Name: "side", Image: "side:1"}, {Name: "web", Image: "web:1"}}
	body, err := ImagePatch(set, map[string]string{"web": "web:2"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/generation","value":2},` +
		`{"op":"test","path":"/spec/template/spec/containers/1/image","value":"web:1"},{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"web:2"},` +
		`{"op":"test","path":"/spec/updateStrategy/rollingUpdate/partition","value":0},{"op":"replace","path":"/spec/updateStrategy/rollingUpdate/partition","value":3}]`
	if got := opsOf(t, body); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if _, err := ImagePatch(set, map[string]string{"app": "x"}, 3); err == nil || err.Error() != `--image app=…: statefulset shop/web has no container "app"` {
		t.Errorf("unknown container: %v", err)
	}
}
