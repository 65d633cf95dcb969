// The words of preflight's own findings: each finding's Message, Short and Remedy, written from
// its facts alone, as predictions (what the apply would lead to) and with remedies that act
// before the apply. A cause check also reports keeps check's words (stuck's Finding.Word).

package predict

import (
	"fmt"
	"strings"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// Word fills the finding's words from its facts; facts stuck words (a pod the API server
// refuses) get check's words.
func Word(f *stuck.Finding, cli string) {
	w := words{f: f, cli: cli}
	switch fx := f.Facts.(type) {
	case ApplyRefusal:
		w.applyRefused(fx)
	case ImageMissing:
		w.imageMissing(fx.Image)
	case ImageUnchecked:
		w.imageUnchecked(fx.Image)
	case Unschedulable:
		w.unschedulable(fx)
	case ClaimWouldPend:
		w.claimWouldPend(fx)
	case PartitionHolds:
		w.partitionHolds(fx)
	default:
		f.Word(cli)
	}
}

type words struct {
	f   *stuck.Finding
	cli string
}

func (w words) set() string {
	return fmt.Sprintf("statefulset/%s -n %s", w.f.StatefulSet, w.f.Namespace)
}

func (w words) applyRefused(s ApplyRefusal) {
	f := w.f
	f.Message = fmt.Sprintf("the API server refuses the apply of StatefulSet %s (a server-side dry run): %s", f.StatefulSet, s.Error)
	f.Short = "apply refused: " + s.Error
	switch s.Reason {
	case ApplyImmutable:
		fields := strings.Join(s.Causes, "; ")
		f.Message = fmt.Sprintf("the API server refuses the apply of StatefulSet %s: it changes fields that cannot change once a StatefulSet exists (%s); only replicas, ordinals, template, updateStrategy, revisionHistoryLimit, persistentVolumeClaimRetentionPolicy and minReadySeconds may", f.StatefulSet, fields)
		f.Short = "apply refused: immutable field(s): " + fields
		f.Remedy = fmt.Sprintf("keep those fields as they are in the manifest; or, to change them, delete the StatefulSet but not its pods and claims (%s delete %s --cascade=orphan) and apply: the new StatefulSet adopts the pods (claims of a changed volumeClaimTemplate are not resized or replaced)", w.cli, w.set())
	case ApplyAdmissionDenied:
		f.Short = fmt.Sprintf("apply refused: %s %s denies it: %s", s.PolicyKind, s.Policy, s.Denial)
		f.Remedy = fmt.Sprintf("change the manifest to satisfy %s %s (%s), or ask the policy's owner", s.PolicyKind, s.Policy, s.Denial)
	case ApplyNamespaceMissing:
		f.Remedy = fmt.Sprintf("create namespace %s first, or add it to the manifests", f.Namespace)
	case ApplyInvalid:
		f.Remedy = "fix what the API server names in the manifest: " + strings.Join(s.Causes, "; ")
	default:
		f.Remedy = "fix what the API server says in the manifest, or the permission it names"
	}
}

func (w words) imageMissing(s Image) {
	f := w.f
	answer := fmt.Sprintf("registry %s answers %s", s.Registry, s.Answer)
	f.Message = fmt.Sprintf("image %q of %s %q would not be pulled: %s for %s", s.Image, containerKind(s.Init), s.Container, answer, s.Pulled)
	if s.NoStream != "" {
		f.Message += fmt.Sprintf(" (namespace %s has no ImageStream %s, so OpenShift's image lookup leaves the name as it is and the kubelet pulls it from docker.io)", f.Namespace, s.NoStream)
	}
	f.Message += fmt.Sprintf("; %s, the first pod the controller would create from revision %s, would wait in ErrImagePull and ImagePullBackOff", s.Pod, s.Revision)
	f.Message += w.blocks(s.Blocked, s.Ordered)
	f.Short = fmt.Sprintf("image %s: %s", s.Image, s.Answer)
	switch {
	case s.NoStream != "":
		f.Remedy = fmt.Sprintf("before the apply, make the ImageStream tag exist (oc tag SOURCE %s:%s -n %s, then oc set image-lookup %s -n %s), or write the image by digest in the manifest",
			s.NoStream, tagOf(s.Image), f.Namespace, s.NoStream, f.Namespace)
	case s.SecretsTried:
		f.Remedy = "the registry refuses the pull secrets the kubelet would use: fix the imagePullSecrets of the manifest (spec.template.spec.imagePullSecrets, or its ServiceAccount's) before the apply"
	default:
		f.Remedy = fmt.Sprintf("before the apply, push %s or fix the image of %s %q in the manifest", s.Pulled, containerKind(s.Init), s.Container)
	}
}

func (w words) imageUnchecked(s Image) {
	f := w.f
	answer := fmt.Sprintf("registry %s could not be asked for %s: %s", s.Registry, s.Pulled, s.Answer)
	if s.Check == apiv1.ImageUnauthorized {
		answer = fmt.Sprintf("registry %s refuses this runner's credentials for %s: %s", s.Registry, s.Pulled, s.Answer)
	}
	f.Message = fmt.Sprintf("image %q of %s %q was not verified: %s; the kubelet may still pull it (the nodes may reach registries and hold credentials this runner does not)",
		s.Image, containerKind(s.Init), s.Container, answer)
	f.Short = fmt.Sprintf("image %s not verified: %s", s.Image, s.Answer)
	f.Remedy = fmt.Sprintf("check that %s exists (crane digest %s), or run preflight where registry %s is reachable with the credentials the nodes use (docker login); --skip-images skips the registry checks", s.Pulled, s.Pulled, s.Registry)
}

func (w words) unschedulable(s Unschedulable) {
	f := w.f
	verb := "create"
	if s.Replace {
		verb = "recreate"
	}
	f.Message = fmt.Sprintf("%s, which the controller would %s, would not be scheduled: %s", s.Pod, verb, strings.TrimSuffix(s.Message, "."))
	f.Message += w.blocks(s.Blocked, s.Ordered)
	f.Short = "would be unschedulable: " + s.Message
	f.Remedy = fmt.Sprintf("no node takes the pod: before the apply, lower its resource requests, relax its nodeSelector, affinity or tolerations in the manifest, or add nodes that fit (%s describe nodes)", w.cli)
}

func (w words) claimWouldPend(s ClaimWouldPend) {
	f := w.f
	why := claimWhy(s.Why, s.Class)
	f.Message = fmt.Sprintf("PersistentVolumeClaim %s, which the controller would create for %s, would stay Pending: %s; %s would not be scheduled", s.Claim, s.Pod, why, s.Pod)
	f.Message += w.blocks(s.Blocked, s.Ordered)
	f.Short = fmt.Sprintf("claim %s would stay Pending: %s", s.Claim, why)
	if s.Why == facts.NoDefaultClass {
		f.Remedy = fmt.Sprintf("before the apply, set storageClassName in the volumeClaimTemplates of the manifest (%s get storageclass), or mark a StorageClass as the default", w.cli)
	} else {
		f.Remedy = fmt.Sprintf("before the apply, create StorageClass %q or name an existing one in the volumeClaimTemplates of the manifest (%s get storageclass); volumeClaimTemplates cannot change once the StatefulSet exists", s.Class, w.cli)
	}
}

func claimWhy(why facts.ClaimWhy, class string) string {
	if why == facts.NoDefaultClass {
		return "it names no StorageClass and the cluster has no default StorageClass"
	}
	return fmt.Sprintf("StorageClass %q does not exist", class)
}

func (w words) partitionHolds(s PartitionHolds) {
	f := w.f
	f.Message = fmt.Sprintf("the apply makes revision %s, but the rolling update's partition (%d) is at or above spec.replicas (%d): the controller updates no pod to it until the partition is lowered", s.Revision, s.Partition, s.Replicas)
	f.Short = fmt.Sprintf("partition %d of %d replicas: no pod gets revision %s", s.Partition, s.Replicas, s.Revision)
	f.Remedy = fmt.Sprintf("if every pod should run the new template, set spec.updateStrategy.rollingUpdate.partition to 0 in the manifest; to roll it out step by step, %s stsdiag canary %s -n %s --steps 1,50%%,100%%", w.cli, f.StatefulSet, f.Namespace)
}

// blocks says which later pods wait under OrderedReady.
func (w words) blocks(blocked []facts.Blocked, ordered bool) string {
	if !ordered || len(blocked) == 0 {
		return ""
	}
	var names []string
	for _, b := range blocked {
		names = append(names, b.Pod)
	}
	w.f.Details.Blocks = nil
	for _, b := range blocked {
		w.f.Details.Blocks = append(w.f.Details.Blocks, b.Pod+" (not "+map[facts.BlockedWhy]string{facts.NotCreated: "created", facts.NotUpdated: "updated", facts.NotReady: "ready"}[b.Why]+")")
	}
	return fmt.Sprintf("; under OrderedReady the controller would then create or update no later pod (%s)", strings.Join(names, ", "))
}

func containerKind(init bool) string {
	if init {
		return "init container"
	}
	return "container"
}

// tagOf is the tag of an image reference, "latest" when it has none.
func tagOf(image string) string {
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.Index(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i >= 0 {
		return name[i+1:]
	}
	return "latest"
}
