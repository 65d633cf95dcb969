package repair_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stsdiag/stsdiag/internal/repair"
)

// TestExecutorReadsOnlyThroughItsPorts drives the executor into every outcome of every kind of
// action (outcomeCases) and fails on any GET, LIST or WATCH it makes with its client other than
// through its injected Follower and EvictionReads: the client writes; the reads are the use
// case's to choose.
func TestExecutorReadsOnlyThroughItsPorts(t *testing.T) {
	for _, c := range outcomeCases() {
		t.Run(c.reason+"/"+c.name, func(t *testing.T) {
			var inPort atomic.Int32
			var mu sync.Mutex
			var stray []string
			reading := func(a k8stesting.Action) (bool, runtime.Object, error) {
				if verb := a.GetVerb(); (verb == "get" || verb == "list" || verb == "watch") && inPort.Load() == 0 {
					mu.Lock()
					stray = append(stray, fmt.Sprintf("%s %s", verb, a.GetResource().Resource))
					mu.Unlock()
				}
				return false, nil, nil
			}
			runOutcomeWith(t, c, func(kube *fake.Clientset, exec *repair.Executor) {
				kube.PrependReactor("*", "*", reading)
				kube.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
					_, _, _ = reading(a)
					return false, nil, nil
				})
				follow := exec.Follow
				if follow == nil {
					follow = repair.WatchFollower(kube)
				}
				exec.Follow = func(ctx context.Context, namespace, name string, done func(*appsv1.StatefulSet) bool) error {
					inPort.Add(1)
					defer inPort.Add(-1)
					return follow(ctx, namespace, name, done)
				}
				exec.Reads = portReads{repair.ClientReads(kube), &inPort}
			})
			mu.Lock()
			defer mu.Unlock()
			if len(stray) > 0 {
				t.Errorf("the executor read with its client: %v", stray)
			}
		})
	}
}

// portReads counts the time spent in the injected reads.
type portReads struct {
	repair.EvictionReads
	inPort *atomic.Int32
}

func (r portReads) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	r.inPort.Add(1)
	defer r.inPort.Add(-1)
	return r.EvictionReads.Pod(ctx, namespace, name)
}

func (r portReads) Budgets(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error) {
	r.inPort.Add(1)
	defer r.inPort.Add(-1)
	return r.EvictionReads.Budgets(ctx, namespace)
}
