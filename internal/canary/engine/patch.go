package engine

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// op is one RFC 6902 operation.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

const partitionPath = "/spec/updateStrategy/rollingUpdate/partition"

// PartitionPatch is the JSON patch that moves the partition of set (as read) to partition. It
// tests the UID, the generation and the partition as read, so that a concurrent change of any of
// them fails the patch (422) instead of being overwritten. A partition or rollingUpdate the
// object lacks (the API server defaults both, so only a hand-made object lacks them) is added,
// after testing the strategy is RollingUpdate.
func PartitionPatch(set *appsv1.StatefulSet, partition int32) ([]byte, error) {
	return json.Marshal(append(guards(set), partitionOps(set, partition)...))
}

// ImagePatch changes the image of containers (name → reference) and the partition in one patch,
// with PartitionPatch's tests and a test of each container's image as read.
func ImagePatch(set *appsv1.StatefulSet, images map[string]string, partition int32) ([]byte, error) {
	ops := guards(set)
	var changes []op
	found := map[string]bool{}
	for _, list := range []struct {
		path string
		cs   []corev1.Container
	}{{"initContainers", set.Spec.Template.Spec.InitContainers}, {"containers", set.Spec.Template.Spec.Containers}} {
		for i, c := range list.cs {
			ref, ok := images[c.Name]
			if !ok {
				continue
			}
			found[c.Name] = true
			path := fmt.Sprintf("/spec/template/spec/%s/%d/image", list.path, i)
			ops = append(ops, op{Op: "test", Path: path, Value: c.Image})
			changes = append(changes, op{Op: "replace", Path: path, Value: ref})
		}
	}
	for name := range images {
		if !found[name] {
			return nil, fmt.Errorf("--image %s=…: statefulset %s/%s has no container %q", name, set.Namespace, set.Name, name)
		}
	}
	ops = append(ops, changes...)
	return json.Marshal(append(ops, partitionOps(set, partition)...))
}

func guards(set *appsv1.StatefulSet) []op {
	return []op{
		{Op: "test", Path: "/metadata/uid", Value: string(set.UID)},
		{Op: "test", Path: "/metadata/generation", Value: set.Generation},
	}
}

func partitionOps(set *appsv1.StatefulSet, partition int32) []op {
	ru := set.Spec.UpdateStrategy.RollingUpdate
	switch {
	case ru == nil:
		return []op{
			{Op: "test", Path: "/spec/updateStrategy/type", Value: string(appsv1.RollingUpdateStatefulSetStrategyType)},
			{Op: "add", Path: "/spec/updateStrategy/rollingUpdate", Value: map[string]int32{"partition": partition}},
		}
	case ru.Partition == nil:
		return []op{{Op: "add", Path: partitionPath, Value: partition}}
	}
	return []op{
		{Op: "test", Path: partitionPath, Value: *ru.Partition},
		{Op: "replace", Path: partitionPath, Value: partition},
	}
}

// PatchOptions are the options of every canary patch: its field manager.
var PatchOptions = metav1.PatchOptions{FieldManager: "stsdiag-canary"}
