package stuck

import (
	"fmt"
	"strings"

	"github.com/stsdiag/stsdiag/stuck/facts"
)

// withoutSet words PodsWithoutStatefulSet.
func (w words) withoutSet(s facts.WithoutSet) {
	f := w.f
	pods := strings.Join(s.Pods, ", ")
	migrate := fmt.Sprintf("%s stsdiag migrate %s -n %s", w.cli, f.StatefulSet, f.Namespace)
	copyName := s.SavedCopy[strings.Index(s.SavedCopy, "/")+1:]
	unmanaged := "no controller manages them: a pod that fails or is deleted is not recreated"
	saved := fmt.Sprintf("if `stsdiag migrate` began this, it keeps the original in configmap %s and the same command finishes the migration", copyName)
	switch s.State {
	case facts.WithoutSetGone:
		f.Message = fmt.Sprintf("pod(s) %s were created by StatefulSet %s, which no longer exists (deleted with --cascade=orphan: a migration stopped half-way); %s; %s",
			pods, f.StatefulSet, unmanaged, saved)
		f.Short = fmt.Sprintf("%d pod(s) without their StatefulSet (gone): %s", len(s.Pods), pods)
		f.Remedy = fmt.Sprintf("%s (if it began this: configmap %s exists); else create the StatefulSet again with the same template and selector, as docs/migrate.md says", migrate, copyName)
	case facts.WithoutSetDeleting:
		held := "being deleted"
		if len(s.HeldBy) > 0 {
			held = "held by finalizers " + strings.Join(s.HeldBy, ", ")
		}
		f.Message = fmt.Sprintf("pod(s) %s were released by StatefulSet %s, which has been terminating for %s (%s; deleted with --cascade=orphan: a migration under way or stopped half-way); %s; %s",
			pods, f.StatefulSet, s.DeletingFor, held, unmanaged, saved)
		f.Short = fmt.Sprintf("%d pod(s) without their StatefulSet (terminating, %s)", len(s.Pods), held)
		f.Remedy = fmt.Sprintf("the StatefulSet is %s: find the controller that owns them; then %s", held, migrate)
	case facts.WithoutSetNotAdopted:
		if s.Selected {
			f.Message = fmt.Sprintf("pod(s) %s have no controller, and StatefulSet %s, which selects them, has not adopted them in %s (the StatefulSet controller adopts an orphan its selector matches on its next sync: is kube-controller-manager running?); %s; %s",
				pods, f.StatefulSet, s.For, unmanaged, saved)
			f.Short = fmt.Sprintf("%d pod(s) not adopted by StatefulSet %s in %s", len(s.Pods), f.StatefulSet, s.For)
			f.Remedy = fmt.Sprintf("make sure kube-controller-manager runs; %s proves the adoption and finishes a migration it began", migrate)
			return
		}
		f.Message = fmt.Sprintf("pod(s) %s have no controller, and StatefulSet %s's selector does not match their labels: it never adopts them, and cannot create its own pods of those names while they exist; %s",
			pods, f.StatefulSet, unmanaged)
		f.Short = fmt.Sprintf("%d pod(s) of StatefulSet %s's names that its selector does not match", len(s.Pods), f.StatefulSet)
		f.Remedy = fmt.Sprintf("delete them (%s delete pod -n %s %s; their PersistentVolumeClaims are kept) so that the StatefulSet creates its own", w.cli, f.Namespace, strings.Join(s.Pods, " "))
	}
}
