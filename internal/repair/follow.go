package repair

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/until"
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

// WatchFollower follows with an informer on the one StatefulSet (a LIST then a WATCH, as kubectl
// rollout status does), calling done with every state it delivers, in order.
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
		states := &stateQueue{changed: make(chan struct{}, 1)}
		_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
			ListerWatcher: lw,
			ObjectType:    &appsv1.StatefulSet{},
			Handler: cache.ResourceEventHandlerFuncs{
				AddFunc:    func(obj any) { states.add(obj, false) },
				UpdateFunc: func(_, obj any) { states.add(obj, false) },
				DeleteFunc: func(obj any) { states.add(obj, true) },
			},
		})
		informerCtx, stop := context.WithCancel(ctx)
		defer stop()
		go informer.RunWithContext(informerCtx)
		err := until.Run(ctx, nil, states.changed, func(context.Context) (bool, time.Time, error) {
			for _, s := range states.take() {
				switch {
				case s.set.Name != name:
				case s.deleted:
					return false, time.Time{}, fmt.Errorf("statefulset %s/%s was deleted", namespace, name)
				case done(s.set):
					return true, time.Time{}, nil
				}
			}
			return false, time.Time{}, nil
		})
		return followError(ctx, err, namespace, name)
	}
}

// stateQueue holds the states an informer delivered, in order, until the follower takes them.
type stateQueue struct {
	mu      sync.Mutex
	states  []followedState
	changed chan struct{}
}

type followedState struct {
	set     *appsv1.StatefulSet
	deleted bool
}

func (q *stateQueue) add(obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	set, ok := obj.(*appsv1.StatefulSet)
	if !ok {
		return
	}
	q.mu.Lock()
	q.states = append(q.states, followedState{set: set, deleted: deleted})
	q.mu.Unlock()
	select {
	case q.changed <- struct{}{}:
	default:
	}
}

func (q *stateQueue) take() []followedState {
	q.mu.Lock()
	defer q.mu.Unlock()
	states := q.states
	q.states = nil
	return states
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
