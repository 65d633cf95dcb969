package repair

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/stsdiag/stsdiag/internal/rollout"
)

// Follower follows one StatefulSet, calling done with each state it sees (the current one
// first), until done returns true. It returns nil then; an error wrapping rollout.ErrTimeout
// when ctx's deadline passes first; one wrapping ctx's error (context.Canceled) when ctx is
// cancelled otherwise, e.g. by a signal; or why the StatefulSet cannot be followed (deleted, an
// API error).
//
// fix --wait follows a rollout until rollout.Complete, and the executor follows a patched
// StatefulSet until its controller has observed the patch, both with the same follower.
type Follower func(ctx context.Context, namespace, name string, done func(*appsv1.StatefulSet) bool) error

// WatchFollower follows with a LIST then a WATCH of the one StatefulSet, as kubectl rollout
// status does.
func WatchFollower(kube kubernetes.Interface) Follower {
	return func(ctx context.Context, namespace, name string, done func(*appsv1.StatefulSet) bool) error {
		selector := fields.OneTermEqualSelector("metadata.name", name).String()
		lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = selector
				return kube.AppsV1().StatefulSets(namespace).List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = selector
				return kube.AppsV1().StatefulSets(namespace).Watch(ctx, o)
			},
		}, kube)
		_, err := watchtools.UntilWithSync(ctx, lw, &appsv1.StatefulSet{}, nil, func(ev watch.Event) (bool, error) {
			set, ok := ev.Object.(*appsv1.StatefulSet)
			switch {
			case !ok || set.Name != name:
				return false, nil
			case ev.Type == watch.Deleted:
				return false, fmt.Errorf("statefulset %s/%s was deleted", namespace, name)
			}
			return done(set), nil
		})
		return followError(ctx, err, namespace, name)
	}
}

// followError tells a deadline from a cancellation: client-go's watch helpers report both as
// the same "interrupted" error (wait.Interrupted), so ctx decides.
func followError(ctx context.Context, err error, namespace, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w of statefulset %s/%s", rollout.ErrTimeout, namespace, name)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted while following statefulset %s/%s: %w", namespace, name, ctx.Err())
	}
	return err
}
