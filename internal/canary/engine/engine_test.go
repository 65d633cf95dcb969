package engine

import "testing"

// TestDecide: the engine over facts, as the CLI and watch drive it (4 replicas, steps 1,50%).
func TestDecide(t *testing.T) {
	steps := mustParse(t, "1,50%")
	cases := []struct {
		name  string
		facts Facts
		verb  Verb
		to    int32
	}{
		{"not observed yet", Facts{Replicas: 4, Partition: 4, Pending: true, Parked: true}, Wait, 0},
		{"nothing pending", Facts{Replicas: 4, Partition: 0, Observed: true}, Done, 0},
		{"held at replicas: first step at once", Facts{Replicas: 4, Partition: 4, Observed: true, Pending: true, Parked: true}, Advance, 3},
		{"held above replicas: first step at once", Facts{Replicas: 4, Partition: 10, Observed: true, Pending: true, Parked: true}, Advance, 3},
		{"step 1 not healthy yet", Facts{Replicas: 4, Partition: 3, Observed: true, Pending: true}, Wait, 0},
		{"step 1 healthy", Facts{Replicas: 4, Partition: 3, Observed: true, Pending: true, Healthy: true}, Advance, 2},
		{"step 50% healthy", Facts{Replicas: 4, Partition: 2, Observed: true, Pending: true, Healthy: true}, Advance, 0},
		{"last step under way", Facts{Replicas: 4, Partition: 0, Observed: true, Pending: true, Healthy: true}, Wait, 0},
		{"stuck in step 1", Facts{Replicas: 4, Partition: 3, Observed: true, Pending: true, Stuck: true, Healthy: false}, RollBack, 0},
		// scaled 4 → 10 in step 1: 50% of 10 (partition 5) already passed, next is 100%
		{"scaled up in step 1", Facts{Replicas: 10, Partition: 3, Observed: true, Pending: true, Healthy: true}, Advance, 0},
	}
	for _, c := range cases {
		d, err := Decide(steps, c.facts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d.Verb != c.verb || (c.verb == Advance && d.Step.Partition != c.to) {
			t.Errorf("%s: %s to %d, want %s to %d", c.name, d.Verb, d.Step.Partition, c.verb, c.to)
		}
	}
	if _, err := Decide(steps, Facts{Replicas: 0, Observed: true, Pending: true}); err == nil {
		t.Error("0 replicas: no error")
	}
}
