package explain

import (
	"fmt"
	"slices"
	"strings"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/migration"
)

// MigrationRefusal words one reason a migration is refused.
func MigrationRefusal(r migration.Refusal) string {
	switch r.Reason {
	case migration.NameMismatch:
		return fmt.Sprintf("the file's StatefulSet is %s, not %s", r.Object, r.Value)
	case migration.SelectorChanged:
		return fmt.Sprintf("spec.selector differs (%s → %s): the new StatefulSet would not adopt the pods; a selector cannot be migrated", r.From, r.To)
	case migration.ClaimTemplateChanged:
		switch r.Value {
		case "added":
			return fmt.Sprintf("%s is added: the running pods have no volume for it and the controller cannot add one to a pod; only a template's storage request can be migrated", r.Field)
		case "removed":
			return fmt.Sprintf("%s is removed: only a template's storage request can be migrated", r.Field)
		}
		return fmt.Sprintf("%s differs in more than its storage request (%s): the existing claims keep what they were created with; only the storage request can be migrated", r.Field, r.Value)
	case migration.ClaimShrink:
		return fmt.Sprintf("%s shrinks (%s → %s): a claim's request can only grow", r.Field, r.From, r.To)
	case migration.ClaimNotBound:
		return fmt.Sprintf("claim %s is %s, not Bound: the API server lets a claim's request change only once it is bound", r.Object, orDash(r.Value))
	case migration.ClaimNotExpandable:
		switch {
		case r.Key == "":
			return fmt.Sprintf("claim %s has no StorageClass: only a claim of a class with allowVolumeExpansion: true can grow", r.Object)
		case r.Detail == "not found":
			return fmt.Sprintf("claim %s: its StorageClass %s does not exist, so the API server refuses a larger request", r.Object, r.Key)
		case r.Detail == "allowVolumeExpansion is not true":
			return fmt.Sprintf("claim %s: StorageClass %s does not allow volume expansion (allowVolumeExpansion is not true): the API server refuses a larger request", r.Object, r.Key)
		}
		return fmt.Sprintf("claim %s: StorageClass %s could not be read (%s), so whether it may grow is unknown", r.Object, r.Key, r.Detail)
	case migration.GitOpsManaged:
		return fmt.Sprintf("%s manages it (%s: %s): its next sync would recreate the old object or fight the new one; change the source (git, the chart's values), pause the sync (Argo CD: no auto-sync; Flux: suspend the Kustomization or HelmRelease; Helm: no upgrade meanwhile), then run migrate with --gitops-paused",
			r.Manager, r.Key, r.Value)
	case migration.ControlledByOwner:
		return fmt.Sprintf("it is controlled by %s, which would fight its recreation: change it through its owner", r.Object)
	case migration.PartitionedRollout:
		return fmt.Sprintf("a partitioned rollout is under way (partition %s, revision %s → %s): the new StatefulSet's history starts at the update revision, so a pod below the partition that is recreated would get the new template; finish or roll back the rollout first",
			r.Value, r.From, r.To)
	case migration.PodTerminating:
		return fmt.Sprintf("pod %s is being deleted: the new StatefulSet would not adopt it (a pod being deleted is never adopted); run again once it is gone", r.Object)
	case migration.StatefulSetTerminating:
		return fmt.Sprintf("it is being deleted (finalizers: %s)", orDash(r.Detail))
	case migration.NotObserved:
		return fmt.Sprintf("the StatefulSet controller has not observed generation %s (status.observedGeneration %s): its status revisions are not the running template's; run again once it has", r.Value, r.From)
	case migration.TemplateRewritten:
		return fmt.Sprintf("created again, it would be stored with another template (%s → %s: admission or defaulting rewrites it): the controller would compute a new revision and replace every pod", r.From, r.To)
	case migration.OtherMigration:
		return fmt.Sprintf("a migration of it to another spec is under way (configmap %s): finish it with migrate and no file or flags, or see migrate --status", r.Object)
	}
	return string(r.Reason)
}

// MigrationNote words one consequence of a migration.
func MigrationNote(n migration.Note) string {
	switch n.Kind {
	case migration.RolloutInProgress:
		return fmt.Sprintf("a rollout is under way (current revision %s, update revision %s): the new StatefulSet's history starts at the update revision (the controller sets currentRevision to it when the status names none), so its currentRevision becomes %s and the rollout goes on",
			n.From, n.To, n.To)
	case migration.ParallelCures67250:
		return "a pod is stuck on an old revision (kubernetes#67250): under Parallel the controller no longer waits for it to become Ready, and replaces it by itself once the update strategy is restored — the lasting cure"
	case migration.SubdomainKept:
		return fmt.Sprintf("the running pods keep spec.subdomain %q (their DNS names) until they are recreated; new pods get %q", n.From, n.To)
	case migration.TemplateRollsOut:
		return "the template differs too: the StatefulSet is recreated with the running template first (no pod restarted), then the file's template is applied and the controller rolls it out as usual, replacing the pods"
	case migration.ResizeByPlugin:
		return "the volumes are resized by their volume plugin (a CSI driver's external-resizer, then the kubelet for the filesystem): migrate reports what the claims say and does not wait for it"
	}
	return string(n.Kind)
}

// MigrationWhy words why a migration waits or stopped.
func MigrationWhy(w migration.Why, namespace, name string) string {
	set := namespace + "/" + name
	switch w.Kind {
	case migration.WaitDeleting:
		if slices.Equal(w.Finalizers, []string{"orphan"}) || len(w.Finalizers) == 0 {
			return fmt.Sprintf("statefulset %s is being deleted: the garbage collector orphans its pods first (finalizer orphan)", set)
		}
		return fmt.Sprintf("statefulset %s is being deleted, held by finalizers %s", set, strings.Join(w.Finalizers, ", "))
	case migration.WaitOrphaning:
		return fmt.Sprintf("pod %s still names the deleted StatefulSet as its controller: the garbage collector has not orphaned it yet", w.Object)
	case migration.WaitNotSynced:
		return fmt.Sprintf("the StatefulSet controller has not synced statefulset %s yet (status.observedGeneration)", set)
	case migration.WaitNotAdopted:
		return fmt.Sprintf("pod %s has not been adopted by the new StatefulSet yet (is kube-controller-manager running?)", w.Object)
	case migration.WaitPodMissing:
		return fmt.Sprintf("pod %s is not there: the controller recreates it", w.Object)
	case migration.ChangedSincePlanned:
		return fmt.Sprintf("statefulset %s changed since it was read (generation %s → %s, or another object): it was not deleted; run migrate again", set, w.From, w.To)
	case migration.ChangedSinceSaved:
		return fmt.Sprintf("statefulset %s changed since it was saved (generation %s → %s): it was not deleted; delete configmap %s (nothing else was changed) and run migrate again",
			set, w.From, w.To, apiv1.SavedCopyName(name))
	case migration.RevisionChanged:
		return fmt.Sprintf("the controller computed %s %s for the running template, not %s: the new StatefulSet keeps updateStrategy OnDelete, so no pod is replaced; see docs/migrate.md (what can go wrong)",
			w.Object, w.To, w.From)
	case migration.PodOwnedByOther:
		return fmt.Sprintf("pod %s is controlled by %s, not by the new StatefulSet", w.Object, w.To)
	case migration.PodRevisionChanged:
		return fmt.Sprintf("pod %s's controller-revision-hash changed (%s → %s)", w.Object, w.From, w.To)
	case migration.ClaimChanged:
		return fmt.Sprintf("claim %s is gone or was replaced since it was recorded", w.Object)
	case migration.ForeignStatefulSet:
		return fmt.Sprintf("a statefulset %s (uid %s) exists that migrate did not create: check it; once it is as it should be, delete configmap %s", set, w.Object, apiv1.SavedCopyName(name))
	case migration.NotFound:
		return fmt.Sprintf("statefulset %s not found", set)
	}
	return string(w.Kind)
}

// MigrationStep words a step done.
func MigrationStep(a migration.Action, namespace, name string) apiv1.MigrationStep {
	set, copyName := namespace+"/"+name, namespace+"/"+apiv1.SavedCopyName(name)
	switch a.Kind {
	case migration.GrowClaim:
		from := a.Claim.Spec.Resources.Requests["storage"]
		return apiv1.MigrationStep{Step: apiv1.MigrationGrowClaim, Message: fmt.Sprintf("claim %s: storage request %s → %s", a.Claim.Name, from.String(), a.To.String())}
	case migration.SaveCopy:
		return apiv1.MigrationStep{Step: apiv1.MigrationSaveCopy, Message: fmt.Sprintf("saved statefulset %s in configmap %s (%d pod(s), %d claim(s), revision %s recorded)",
			set, copyName, len(a.Saved.Record.Pods), len(a.Saved.Record.Claims), a.Saved.Record.UpdateRevision)}
	case migration.RefreshRecord:
		return apiv1.MigrationStep{Step: apiv1.MigrationSaveCopy, Message: fmt.Sprintf("recorded the pods and revisions again in configmap %s (%d pod(s), revision %s)",
			copyName, len(a.Saved.Record.Pods), a.Saved.Record.UpdateRevision)}
	case migration.DeleteOrphan:
		return apiv1.MigrationStep{Step: apiv1.MigrationDeleteOrphan, Message: fmt.Sprintf("deleted statefulset %s (uid %s, resourceVersion %s) with propagationPolicy Orphan: its pods and claims stay",
			set, a.Object.UID, a.Object.ResourceVersion)}
	case migration.Create:
		return apiv1.MigrationStep{Step: apiv1.MigrationCreate, Message: fmt.Sprintf("created statefulset %s with the running template (updateStrategy OnDelete until the pods are proven adopted)", set)}
	case migration.MarkProven:
		return apiv1.MigrationStep{Step: apiv1.MigrationProve, Message: proofLine(a.Proof)}
	case migration.ApplySpec:
		return apiv1.MigrationStep{Step: apiv1.MigrationApplySpec, Message: fmt.Sprintf("applied the spec asked for to statefulset %s (updateStrategy %s)", set, a.Object.Spec.UpdateStrategy.Type)}
	case migration.RemoveCopy:
		return apiv1.MigrationStep{Step: apiv1.MigrationRemoveCopy, Message: fmt.Sprintf("removed configmap %s", copyName)}
	}
	return apiv1.MigrationStep{Message: string(a.Kind)}
}

// proofLine is the proof in one line.
func proofLine(p *apiv1.MigrationProof) string {
	replaced := 0
	for _, pod := range p.Pods {
		if pod.ReplacedBy != "" {
			replaced++
		}
	}
	s := fmt.Sprintf("proven: %d pod(s) adopted by the new StatefulSet (uid %s) with the same UIDs and controller-revision-hash; update revision %s → %s, current revision %s → %s; %d claim(s) kept",
		len(p.Pods)-replaced, p.NewUID, p.UpdateRevision.From, p.UpdateRevision.To, p.CurrentRevision.From, p.CurrentRevision.To, p.ClaimsKept)
	if replaced > 0 {
		s += fmt.Sprintf("; %d pod(s) replaced by the new StatefulSet's controller (proof.pods[].replacedBy)", replaced)
	}
	return s
}

// MigrationPlanSteps are the steps a plan takes, worded, in order (a plan's result has none).
func MigrationPlanSteps(p *migration.Plan, namespace, name string) []apiv1.MigrationStep {
	set, copyName := namespace+"/"+name, namespace+"/"+apiv1.SavedCopyName(name)
	var steps []apiv1.MigrationStep
	for _, g := range p.Growths {
		steps = append(steps, apiv1.MigrationStep{Step: apiv1.MigrationGrowClaim, Message: fmt.Sprintf("patch claim %s: storage request %s → %s (UID and resourceVersion preconditions)", g.Claim, g.From.String(), g.To.String())})
	}
	steps = append(steps,
		apiv1.MigrationStep{Step: apiv1.MigrationSaveCopy, Message: fmt.Sprintf("save statefulset %s, its pods and revisions in configmap %s (owned by nothing)", set, copyName)},
		apiv1.MigrationStep{Step: apiv1.MigrationDeleteOrphan, Message: fmt.Sprintf("delete statefulset %s (uid %s) with propagationPolicy Orphan, UID and resourceVersion preconditions; wait until it is gone", set, p.Running.UID)},
		apiv1.MigrationStep{Step: apiv1.MigrationCreate, Message: fmt.Sprintf("create statefulset %s with the running template and the new fields, updateStrategy OnDelete until the proof", set)},
		apiv1.MigrationStep{Step: apiv1.MigrationProve, Message: fmt.Sprintf("prove every pod adopted: same UIDs, owner the new StatefulSet, same controller-revision-hash, update revision %s kept", p.Running.Status.UpdateRevision)},
		apiv1.MigrationStep{Step: apiv1.MigrationApplySpec, Message: fmt.Sprintf("apply the spec asked for (updateStrategy %s%s)", p.Final.Spec.UpdateStrategy.Type, templateTail(p))},
		apiv1.MigrationStep{Step: apiv1.MigrationRemoveCopy, Message: fmt.Sprintf("remove configmap %s", copyName)},
	)
	return steps
}

func templateTail(p *migration.Plan) string {
	for _, c := range p.Changes {
		if c.Field == "spec.template" {
			return "; the file's template then rolls out"
		}
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
