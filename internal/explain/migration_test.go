package explain_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/migration"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestMigrationWording locks the words of every refusal, note and wait or failure of migrate:
// testdata/golden/migration.txt. Run with -update to accept a change of wording. A kind with no
// words of its own (the bare kind printed) fails.
func TestMigrationWording(t *testing.T) {
	refusals := []migration.Refusal{
		{Reason: migration.NameMismatch, Object: "shop/db", Value: "shop/web"},
		{Reason: migration.SelectorChanged, From: "app=web", To: "app=web2"},
		{Reason: migration.ClaimTemplateChanged, Field: "spec.volumeClaimTemplates[logs]", Value: "added"},
		{Reason: migration.ClaimTemplateChanged, Field: "spec.volumeClaimTemplates[logs]", Value: "removed"},
		{Reason: migration.ClaimTemplateChanged, Field: "spec.volumeClaimTemplates[data]", Value: `spec.storageClassName="fast"`},
		{Reason: migration.ClaimShrink, Field: "spec.volumeClaimTemplates[data].spec.resources.requests.storage", From: "2Gi", To: "1Gi"},
		{Reason: migration.ClaimNotBound, Object: "data-web-2", Value: "Pending"},
		{Reason: migration.ClaimNotExpandable, Object: "data-web-0", Detail: "no StorageClass"},
		{Reason: migration.ClaimNotExpandable, Object: "data-web-0", Key: "gone", Detail: "not found"},
		{Reason: migration.ClaimNotExpandable, Object: "data-web-0", Key: "slow", Detail: "allowVolumeExpansion is not true"},
		{Reason: migration.ClaimNotExpandable, Object: "data-web-0", Key: "fast", Detail: `storageclasses.storage.k8s.io is forbidden`},
		{Reason: migration.GitOpsManaged, Manager: "Argo CD", Key: "argocd.argoproj.io/tracking-id", Value: "app:apps/StatefulSet:shop/web"},
		{Reason: migration.ControlledByOwner, Object: "Database/db"},
		{Reason: migration.PartitionedRollout, Value: "2", From: "web-a", To: "web-b"},
		{Reason: migration.PodTerminating, Object: "web-1"},
		{Reason: migration.StatefulSetTerminating, Detail: "example.com/hold"},
		{Reason: migration.NotObserved, Value: "4", From: "3"},
		{Reason: migration.TemplateRewritten, From: `spec.containers[web].image="web:1"`, To: `spec.containers[web].image="registry/web@sha256:abc"`},
		{Reason: migration.OtherMigration, Object: "shop/stsdiag-migrate-web"},
	}
	notes := []migration.Note{{Kind: migration.RolloutInProgress, From: "web-a", To: "web-b"}, {Kind: migration.ParallelCures67250},
		{Kind: migration.SubdomainKept, From: "web", To: "web-headless"}, {Kind: migration.TemplateRollsOut}, {Kind: migration.ResizeByPlugin}}
	whys := []migration.Why{{Kind: migration.WaitDeleting, Finalizers: []string{"orphan"}}, {Kind: migration.WaitDeleting, Finalizers: []string{"example.com/hold", "orphan"}},
		{Kind: migration.WaitOrphaning, Object: "web-0"}, {Kind: migration.WaitNotSynced}, {Kind: migration.WaitNotAdopted, Object: "web-1"},
		{Kind: migration.WaitPodMissing, Object: "web-2"}, {Kind: migration.ChangedSincePlanned, From: "3", To: "4"},
		{Kind: migration.ChangedSinceSaved, From: "3", To: "4"}, {Kind: migration.RevisionChanged, Object: "updateRevision", From: "web-a", To: "web-c"},
		{Kind: migration.PodOwnedByOther, Object: "web-0", To: "StatefulSet/web other-uid"}, {Kind: migration.PodRevisionChanged, Object: "web-0", From: "web-a", To: "web-b"},
		{Kind: migration.ClaimChanged, Object: "data-web-0"}, {Kind: migration.ForeignStatefulSet, Object: "uid-x"}, {Kind: migration.NotFound}}
	var b strings.Builder
	b.WriteString("# migrate: every refusal, note, wait and failure, as explain words it.\n\n")
	for _, r := range refusals {
		text := explain.MigrationRefusal(r)
		if text == string(r.Reason) {
			t.Errorf("refusal %s has no words", r.Reason)
		}
		fmt.Fprintf(&b, "refusal %s: %s\n", r.Reason, text)
	}
	for _, n := range notes {
		text := explain.MigrationNote(n)
		if text == string(n.Kind) {
			t.Errorf("note %s has no words", n.Kind)
		}
		fmt.Fprintf(&b, "note %s: %s\n", n.Kind, text)
	}
	for _, w := range whys {
		text := explain.MigrationWhy(w, "shop", "web")
		if text == string(w.Kind) {
			t.Errorf("why %s has no words", w.Kind)
		}
		fmt.Fprintf(&b, "why %s: %s\n", w.Kind, text)
	}
	snapshottest.Golden(t, "migration.txt", []byte(b.String()), *update)
}
