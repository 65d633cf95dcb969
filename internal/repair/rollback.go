package repair

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/jsonpatch"
	"github.com/stsdiag/stsdiag/internal/model"
)

// rollback writes the revision's template with a JSON patch that first tests the object's UID,
// its generation (any spec change since diagnosis bumps it) and the image of every container as
// diagnosed, so a concurrent change is never overwritten. When a test fails it diagnoses again,
// once, and retries only if the fresh diagnosis still calls for a rollback of that StatefulSet.
func (e *Executor) rollback(ctx context.Context, a *model.Action) (done bool, generation int64, err error) {
	return e.guardedPatch(ctx, a, guarded{send: e.sendRollback, fresh: e.freshRollback})
}

func (e *Executor) sendRollback(ctx context.Context, a *model.Action) (*appsv1.StatefulSet, error) {
	r := a.Guard
	if r == nil || len(r.Template) == 0 || a.UID == "" {
		return nil, fmt.Errorf("rollback of %s/%s planned without a template or UID", a.Namespace, a.StatefulSet)
	}
	ops := jsonpatch.Patch{jsonpatch.Test("/metadata/uid", a.UID), jsonpatch.Test("/metadata/generation", r.Generation)}
	for _, t := range r.Tests {
		ops = append(ops, jsonpatch.Test(t.Path, t.From))
	}
	ops = append(ops, jsonpatch.Replace("/spec/template", r.Template))
	body, err := ops.Marshal()
	if err != nil {
		return nil, err
	}
	return e.Kube.AppsV1().StatefulSets(a.Namespace).Patch(ctx, a.StatefulSet, types.JSONPatchType, body,
		metav1.PatchOptions{DryRun: e.dryRunOptions(), FieldManager: "stsdiag"})
}

// freshRollback diagnoses again and returns the StatefulSet's rollback, if one is still called for.
func (e *Executor) freshRollback(ctx context.Context, a model.Action) (model.Action, bool, error) {
	replanned, err := e.replan(ctx)
	if err != nil {
		return a, false, err
	}
	for _, fresh := range replanned.Actions {
		if fresh.Kind() == apiv1.Rollback && fresh.Namespace == a.Namespace && fresh.StatefulSet == a.StatefulSet {
			return fresh, true, nil
		}
	}
	return a, false, nil
}
