package harness

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// PodDeletion is a pod seen deleted, with the UID of its controller then ("" for none).
type PodDeletion struct {
	Name       string
	UID, Owner types.UID
}

// Deletions records the pod deletions of a namespace, from the moment it is started until Stop.
type Deletions struct {
	mu   sync.Mutex
	seen []PodDeletion
	stop func()
}

// WatchDeletions watches the namespace's pods from now on (a retrying WATCH from the resource
// version of a LIST: no deletion between the two is missed) and records each deletion.
func WatchDeletions(ctx context.Context, cs kubernetes.Interface, ns string) (*Deletions, error) {
	pods := cs.CoreV1().Pods(ns)
	l, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	w, err := watchtools.NewRetryWatcherWithContext(wctx, l.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, o) }})
	if err != nil {
		cancel()
		return nil, err
	}
	d := &Deletions{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			if pod, ok := e.Object.(*corev1.Pod); ok && e.Type == watch.Deleted {
				var owner types.UID
				if ref := metav1.GetControllerOf(pod); ref != nil {
					owner = ref.UID
				}
				d.mu.Lock()
				d.seen = append(d.seen, PodDeletion{Name: pod.Name, UID: pod.UID, Owner: owner})
				d.mu.Unlock()
			}
		}
	}()
	d.stop = func() { w.Stop(); cancel(); <-done }
	return d, nil
}

// List returns the deletions seen so far.
func (d *Deletions) List() []PodDeletion {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.seen)
}

// Stop ends the watch.
func (d *Deletions) Stop() { d.stop() }
