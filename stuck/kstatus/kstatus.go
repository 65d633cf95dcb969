// Package kstatus is a kstatus status reader of apps/StatefulSet built on stsdiag's rules, for
// the waiters that take custom status readers: Helm 4's --wait (kube.WithKStatusReaders, Helm
// 4.1 and later) and Flux, both on github.com/fluxcd/cli-utils.
//
// kstatus alone never says Failed for a StatefulSet (cli-utils pkg/kstatus/status/core.go,
// stsConditions): a rollout that will never finish — kubernetes#67250, a pod the controller
// cannot create, a pod that never starts — stays InProgress until the waiter's timeout. This
// reader diagnoses the StatefulSet as `stsdiag check` does and says:
//
//   - Failed, with the finding's message naming the pod, when the rollout cannot finish by itself;
//   - InProgress while it can, naming the pod the controller waits on;
//   - Current once the controller reports every replica updated, Ready and available;
//   - Terminating while the StatefulSet is deleted.
//
// It reads through the ClusterReader the waiter gives it: the StatefulSet's pods, revisions and
// claims by its selector, the namespace's Warning Events, its governing Service, the nodes and
// StorageClasses, and on OpenShift the namespace's ImageStreams. What the reader cannot read
// (a caching ClusterReader that holds only pods) is left out and named in the message; without
// the pods, revisions or claims it never says Failed and falls back to kstatus's own status.
//
// A waiter asks for a status when the StatefulSet changes (and when its informers resync): a
// cause that appears on a pod without the StatefulSet changing is seen at the next change.
//
//	import stsdiagkstatus "github.com/stsdiag/stsdiag/stuck/kstatus"
//	upgrade.WaitOptions = []kube.WaitOption{kube.WithKStatusReaders(stsdiagkstatus.NewStatusReader(mapper))}
package kstatus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/event"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/object"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// Option changes what a status reader assumes.
type Option func(*reader)

// WithDiagnosis sets the diagnosis's options (thresholds, feature gates, the CLI remedies name);
// stuck.DefaultOptions otherwise.
func WithDiagnosis(o stuck.Options) Option { return func(r *reader) { r.opts = o } }

// WithServerVersion sets the API server's version ("v1.35.3"), whose controller rules apply;
// the newest release's rules otherwise.
func WithServerVersion(v string) Option { return func(r *reader) { r.serverVersion = v } }

// WithClock sets the clock the rules' time thresholds are measured on (time.Now otherwise).
func WithClock(now func() time.Time) Option { return func(r *reader) { r.now = now } }

// NewStatusReader returns a status reader of apps/StatefulSet built on stsdiag's rules. mapper
// maps the kinds it reads to resources (the waiter's).
func NewStatusReader(mapper meta.RESTMapper, opts ...Option) engine.StatusReader {
	r := &reader{mapper: mapper, opts: stuck.DefaultOptions(), now: time.Now}
	for _, o := range opts {
		o(r)
	}
	return r
}

type reader struct {
	mapper        meta.RESTMapper
	opts          stuck.Options
	serverVersion string
	now           func() time.Time
}

var statefulSetKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Supports reports whether gk is apps/StatefulSet.
func (r *reader) Supports(gk schema.GroupKind) bool { return gk == statefulSetKind.GroupKind() }

// ReadStatus reads the StatefulSet id names, then as ReadStatusForObject.
func (r *reader) ReadStatus(ctx context.Context, cr engine.ClusterReader, id object.ObjMetadata) (*event.ResourceStatus, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(statefulSetKind)
	err := cr.Get(ctx, types.NamespacedName{Namespace: id.Namespace, Name: id.Name}, u)
	switch {
	case isContext(err):
		return nil, err
	case apierrors.IsNotFound(err):
		return &event.ResourceStatus{Identifier: id, Status: status.NotFoundStatus, Message: "Resource not found"}, nil
	case err != nil:
		return &event.ResourceStatus{Identifier: id, Status: status.UnknownStatus, Error: err}, nil
	}
	return r.ReadStatusForObject(ctx, cr, u)
}

// ReadStatusForObject diagnoses the StatefulSet with what cr can read of its pods and the rest.
func (r *reader) ReadStatusForObject(ctx context.Context, cr engine.ClusterReader, u *unstructured.Unstructured) (*event.ResourceStatus, error) {
	id := object.UnstructuredToObjMetadata(u)
	rs := &event.ResourceStatus{Identifier: id, Resource: u}
	var set appsv1.StatefulSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &set); err != nil {
		rs.Status, rs.Error = status.UnknownStatus, fmt.Errorf("not a StatefulSet: %w", err)
		return rs, nil
	}
	read, err := r.read(ctx, cr, &set)
	if err != nil {
		return nil, err
	}
	rs.GeneratedResources = read.podStatuses
	if len(read.missing) > 0 {
		// Without what the rules read about pods, a Failed could be wrong: kstatus's own status,
		// and why stsdiag's rules did not run.
		res, err := status.Compute(u)
		if err != nil {
			rs.Status, rs.Error = status.UnknownStatus, err
			return rs, nil
		}
		rs.Status = res.Status
		rs.Message = joinMessage(res.Message, "stsdiag's rules did not run: "+strings.Join(read.missing, "; "))
		return rs, nil
	}
	sum, view := r.diagnose(read, &set)
	for waited := time.Duration(0); waited < reportWindow && sum != nil && sum.Status == apiv1.StatusProgressing && unreported(view, r.now()); waited += time.Second {
		// The pod the controller waits on was just created and the kubelet has not reported it
		// yet: the StatefulSet will not change when it does, and the waiter would not ask
		// again. Read it again, for at most reportWindow after its creation.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
		if read, err = r.read(ctx, cr, &set); err != nil {
			return nil, err
		}
		if len(read.missing) > 0 {
			break
		}
		rs.GeneratedResources = read.podStatuses
		sum, view = r.diagnose(read, &set)
	}
	if sum == nil {
		rs.Status, rs.Error = status.UnknownStatus, errors.New("stsdiag: the StatefulSet was not diagnosed")
		return rs, nil
	}
	rs.Status, rs.Message = statusOf(sum.Status), joinMessage(sum.Message, strings.Join(read.objs.Warnings, "; "))
	return rs, nil
}

// diagnose diagnoses what was read: the StatefulSet's summary, and the controller's view of it.
func (r *reader) diagnose(read *read, set *appsv1.StatefulSet) (*apiv1.StatefulSetSummary, *controller.View) {
	res := stuck.Diagnose(read.objs, r.opts)
	view := res.Views[types.NamespacedName{Namespace: set.Namespace, Name: set.Name}]
	for i := range res.StatefulSets {
		if s := &res.StatefulSets[i]; s.Namespace == set.Namespace && s.Name == set.Name {
			return s, view
		}
	}
	return nil, view
}

// reportWindow is how long after a pod's creation the reader waits for the kubelet to report
// it: cli-utils' watcher reads an unschedulable pod's parent again after the same window
// (status.ScheduleWindow, pkg/kstatus/status/core.go:52, object_status_reporter.go:474-479), the
// one case where it knows a pod may change while its parent does not.
const reportWindow = 15 * time.Second

// unreported reports whether the pod the controller waits on (the ordinal its sync stops at) was
// created less than reportWindow ago, is scheduled or not yet judged by the scheduler, and no
// container of it has a status yet: the kubelet will report it soon, and only then can the
// rules tell a pull that fails from one under way.
func unreported(v *controller.View, now time.Time) bool {
	if v == nil {
		return false
	}
	for _, o := range v.Ordinals {
		p := o.Pod
		if !o.Holds || p == nil || p.DeletionTimestamp != nil || now.Sub(p.CreationTimestamp.Time) >= reportWindow {
			continue
		}
		if len(p.Status.ContainerStatuses) > 0 || len(p.Status.InitContainerStatuses) > 0 {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return false // the scheduler's answer is the state; the rules judge it
			}
		}
		return true
	}
	return false
}

// statusOf is the kstatus status of a StatefulSet's rollout status.
func statusOf(s apiv1.RolloutStatus) status.Status {
	switch s {
	case apiv1.StatusStuck:
		return status.FailedStatus
	case apiv1.StatusComplete:
		return status.CurrentStatus
	case apiv1.StatusTerminating:
		return status.TerminatingStatus
	}
	return status.InProgressStatus
}

func joinMessage(msg, more string) string {
	switch {
	case more == "":
		return msg
	case msg == "":
		return more
	}
	return msg + " (" + more + ")"
}

// isContext reports whether err ends a read: the context's, which a status reader returns
// instead of a status (engine.StatusReader's contract).
func isContext(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
