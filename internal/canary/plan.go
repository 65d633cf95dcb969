package canary

import (
	"fmt"
	"io"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// Plan is what a canary will do, shown before its first write (Options.Approve).
type Plan struct {
	Namespace, Name string
	Replicas        int32
	PartitionBefore int32
	Steps           []apiv1.CanaryStep
	// Images are --image's changes (container → reference); CurrentImages the template's now.
	Images, CurrentImages map[string]string
	// Pending: the template already differs from the current revision (no --image).
	Pending bool
	// ServerAccepted: the API server accepted the first step's patch in a dry run.
	ServerAccepted bool
}

// Print writes the plan, one line each.
func (p Plan) Print(w io.Writer) {
	fmt.Fprintf(w, "Canary of statefulset %s/%s (%d replicas, partition %d now):\n", p.Namespace, p.Name, p.Replicas, p.PartitionBefore)
	names := make([]string, 0, len(p.Images))
	for name := range p.Images {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(w, "  image of container %s: %s → %s (with the first step's partition, one patch)\n", name, p.CurrentImages[name], p.Images[name])
	}
	if len(p.Images) == 0 && p.Pending {
		fmt.Fprintln(w, "  the template already changed: its update revision is stepped out")
	}
	for _, s := range p.Steps {
		fmt.Fprintf(w, "  step %s: partition %d, %d of %d pods on the update revision\n", s.Step, s.Partition, s.Pods, p.Replicas)
	}
	if p.ServerAccepted {
		fmt.Fprintln(w, "The API server accepted the first step's patch (server-side dry run, nothing persisted).")
	}
}

func images(set *appsv1.StatefulSet) map[string]string {
	out := map[string]string{}
	for _, c := range set.Spec.Template.Spec.Containers {
		out[c.Name] = c.Image
	}
	return out
}

// String is the plan as Print writes it.
func (p Plan) String() string {
	var b strings.Builder
	p.Print(&b)
	return b.String()
}
