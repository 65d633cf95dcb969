package engine

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/internal/jsonpatch"
)

const partitionPath = "/spec/updateStrategy/rollingUpdate/partition"

// PartitionPatch is the JSON patch that moves the partition of set (as read) to partition. It
// tests the UID, the generation and the partition as read, so that a concurrent change of any of
// them fails the patch (422) instead of being overwritten. A partition or rollingUpdate the
// object lacks (the API server defaults both, so only a hand-made object lacks them) is added,
// after testing the strategy is RollingUpdate.
func PartitionPatch(set *appsv1.StatefulSet, partition int32) ([]byte, error) {
	return PartitionOps(set, partition).Marshal()
}

// PartitionOps are PartitionPatch's operations, for a patch that changes more in the same write.
func PartitionOps(set *appsv1.StatefulSet, partition int32) jsonpatch.Patch {
	return append(guards(set), partitionOps(set, partition)...)
}

// ImagePatch changes the image of containers (name → reference) and the partition in one patch,
// with PartitionPatch's tests and a test of each container's image as read.
func ImagePatch(set *appsv1.StatefulSet, images map[string]string, partition int32) ([]byte, error) {
	ops := guards(set)
	var changes jsonpatch.Patch
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
			ops = append(ops, jsonpatch.Test(path, c.Image))
			changes = append(changes, jsonpatch.Replace(path, ref))
		}
	}
	for name := range images {
		if !found[name] {
			return nil, fmt.Errorf("--image %s=…: statefulset %s/%s has no container %q", name, set.Namespace, set.Name, name)
		}
	}
	ops = append(ops, changes...)
	return append(ops, partitionOps(set, partition)...).Marshal()
}

func guards(set *appsv1.StatefulSet) jsonpatch.Patch {
	return jsonpatch.Patch{jsonpatch.Test("/metadata/uid", string(set.UID)), jsonpatch.Test("/metadata/generation", set.Generation)}
}

func partitionOps(set *appsv1.StatefulSet, partition int32) jsonpatch.Patch {
	ru := set.Spec.UpdateStrategy.RollingUpdate
	switch {
	case ru == nil:
		return jsonpatch.Patch{
			jsonpatch.Test("/spec/updateStrategy/type", string(appsv1.RollingUpdateStatefulSetStrategyType)),
			jsonpatch.Add("/spec/updateStrategy/rollingUpdate", map[string]int32{"partition": partition}),
		}
	case ru.Partition == nil:
		return jsonpatch.Patch{jsonpatch.Add(partitionPath, partition)}
	}
	return jsonpatch.Patch{jsonpatch.Test(partitionPath, *ru.Partition), jsonpatch.Replace(partitionPath, partition)}
}

// PatchOptions are the options of every canary patch: its field manager.
var PatchOptions = metav1.PatchOptions{FieldManager: "stsdiag-canary"}
