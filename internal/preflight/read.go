package preflight

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	imagev1 "github.com/openshift/api/image/v1"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/internal/preflight/predict"
	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// The reads of a preflight, bounded whatever the cluster's size: once, the server's version, the
// image API, the nodes and the StorageClasses; per namespace of the input, one LIST of each kind
// a judgement needs there (never a cluster-wide LIST of pods); per node, its pods, only when a
// pod's room on it is in question (predict.Scheduler).

// readCluster reads what every StatefulSet meets.
func readCluster(ctx context.Context, c read.Clients, mode openshift.Mode) (predict.Cluster, []string, error) {
	var out predict.Cluster
	var warnings []string
	var mu sync.Mutex
	warn := func(resource string, err error) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, fmt.Sprintf("listing %s: %s", resource, text.FirstLine(err)))
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		on, err := openshift.Enabled(gctx, mode, c.Kube.Discovery())
		if err != nil {
			return fmt.Errorf("cannot reach the API server: %w", err)
		}
		out.OpenShift = on && c.Image != nil
		out.ServerVersion = read.ServerVersion(c.Kube)
		return nil
	})
	g.Go(func() error {
		l, err := c.Kube.CoreV1().Nodes().List(gctx, metav1.ListOptions{})
		if err != nil {
			warn("nodes", err)
			return nil
		}
		out.Nodes, out.NodesListed = l.Items, true
		return nil
	})
	g.Go(func() error {
		// The statuses a triaged read trusts are current only while kube-controller-manager leads.
		l, err := c.Kube.CoordinationV1().Leases(stuck.ControllerManagerLeaseNamespace).Get(gctx, stuck.ControllerManagerLeaseName, metav1.GetOptions{})
		switch {
		case err == nil:
			out.ControllerManager = &stuck.ControllerManagerLease{Lease: l}
		case apierrors.IsNotFound(err):
			out.ControllerManager = &stuck.ControllerManagerLease{NotFound: true}
		default:
			out.ControllerManager = &stuck.ControllerManagerLease{Err: text.FirstLine(err)}
		}
		return nil
	})
	g.Go(func() error {
		l, err := c.Kube.StorageV1().StorageClasses().List(gctx, metav1.ListOptions{})
		if err != nil {
			warn("storageclasses (claims' classes not judged)", err)
			return nil
		}
		out.StorageClasses, out.StorageClassesListed = l.Items, true
		return nil
	})
	if err := g.Wait(); err != nil {
		return out, nil, err
	}
	return out, warnings, nil
}

// wholeClusterAbove: an input spanning more namespaces than this reads the small kinds
// (Namespaces, Services, ResourceQuotas, LimitRanges, ImageStreams) with one LIST each over the
// cluster rather than one per namespace: fewer requests, and none of them lists pods.
const wholeClusterAbove = 8

// readNamespaces reads what the StatefulSets of each namespace of the input meet: per namespace
// its StatefulSets, pods and ControllerRevisions, and the Warning Events where a
// StatefulSet of the input is not settled (check's words for a pod stuck now), the claims where
// they matter (readNamespace); the small kinds per namespace, or over the cluster for many
// namespaces. seed adds what the manifests add to each namespace before it is read; ready is
// handed each namespace once it is read. A namespace that does not exist holds
// nothing. sets are the input's StatefulSets by namespace.
func readNamespaces(ctx context.Context, c read.Clients, sets map[string][]*appsv1.StatefulSet, openShift, trustStatuses bool, seed, ready func(*predict.Namespace)) (map[string]*predict.Namespace, []string, error) {
	out := map[string]*predict.Namespace{}
	fresh := func(name string) *predict.Namespace {
		ns := &predict.Namespace{Name: name, Objects: &stuck.Objects{}}
		seed(ns)
		return ns
	}
	for name := range sets {
		out[name] = fresh(name)
	}
	r := &reads{}
	perNamespace := len(sets) <= wholeClusterAbove
	if !perNamespace {
		// Someone who may read some namespaces only reads them one by one.
		whole := &reads{}
		var forbidden *ForbiddenError
		if err := readSmallKinds(ctx, c, "", out, openShift, whole); errors.As(err, &forbidden) || (err == nil && len(whole.warnings) > 0) {
			perNamespace = true
			for name := range out {
				out[name] = fresh(name)
			}
		} else if err != nil {
			return nil, nil, err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2 * wholeClusterAbove)
	for name, ns := range out {
		g.Go(func() error {
			if perNamespace {
				if err := readSmallKinds(gctx, c, name, out, openShift, r); err != nil {
					return err
				}
			}
			if ns.Exists {
				if err := readNamespace(gctx, c, ns, sets[name], trustStatuses, r); err != nil {
					return err
				}
			}
			ready(ns)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	sort.Strings(r.warnings)
	return out, r.warnings, nil
}

// reads collects the warnings of what could not be read.
type reads struct {
	mu       sync.Mutex
	warnings []string
}

// optional records a kind that could not be read; the judgement goes on without it.
func (r *reads) optional(resource, where string, err error) error {
	if err == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, fmt.Sprintf("listing %s %s: %s", resource, where, text.FirstLine(err)))
	return nil
}

// required fails the read for a kind no judgement can do without.
func required(resource, where string, err error) error {
	if err != nil {
		return fmt.Errorf("listing %s %s: %w", resource, where, err)
	}
	return nil
}

func where(namespace string) string {
	if namespace == "" {
		return "in all namespaces"
	}
	return "in namespace " + namespace
}

// readSmallKinds reads the Namespaces (whether each exists, its labels), Services,
// ResourceQuotas, LimitRanges and ImageStreams of namespace ("" for all of them) into out.
func readSmallKinds(ctx context.Context, c read.Clients, namespace string, out map[string]*predict.Namespace, openShift bool, r *reads) error {
	var mu sync.Mutex
	each := func(ns string, fn func(*predict.Namespace)) {
		mu.Lock()
		defer mu.Unlock()
		if n := out[ns]; n != nil {
			fn(n)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var items []corev1.Namespace
		if namespace == "" {
			l, err := c.Kube.CoreV1().Namespaces().List(gctx, metav1.ListOptions{})
			if err != nil {
				return unreachable(err)
			}
			items = l.Items
		} else {
			got, err := c.Kube.CoreV1().Namespaces().Get(gctx, namespace, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case apierrors.IsForbidden(err):
				// Cannot tell: the LISTs say whether it can be read.
				each(namespace, func(n *predict.Namespace) { n.Exists = true })
				return nil
			case err != nil:
				return unreachable(err)
			}
			items = []corev1.Namespace{*got}
		}
		for _, item := range slim(items) {
			each(item.Name, func(n *predict.Namespace) { n.Exists, n.Objects.Namespaces = true, []corev1.Namespace{item} })
		}
		return nil
	})
	g.Go(func() error {
		l, err := c.Kube.CoreV1().Services(namespace).List(gctx, metav1.ListOptions{})
		if err != nil {
			return r.optional("services", where(namespace), err)
		}
		for _, item := range slim(l.Items) {
			each(item.Namespace, func(n *predict.Namespace) {
				n.Objects.Services, n.Objects.ServicesListed = append(n.Objects.Services, item), true
			})
		}
		for ns := range out {
			if namespace == "" || ns == namespace {
				each(ns, func(n *predict.Namespace) { n.Objects.ServicesListed = true })
			}
		}
		return nil
	})
	g.Go(func() error {
		l, err := c.Kube.CoreV1().ResourceQuotas(namespace).List(gctx, metav1.ListOptions{})
		if err != nil {
			return r.optional("resourcequotas (quota not counted)", where(namespace), err)
		}
		for _, item := range slim(l.Items) {
			each(item.Namespace, func(n *predict.Namespace) { n.Quotas = append(n.Quotas, item) })
		}
		return nil
	})
	g.Go(func() error {
		l, err := c.Kube.CoreV1().LimitRanges(namespace).List(gctx, metav1.ListOptions{})
		if err != nil {
			return r.optional("limitranges", where(namespace), err)
		}
		for _, item := range slim(l.Items) {
			each(item.Namespace, func(n *predict.Namespace) { n.LimitRanges = append(n.LimitRanges, item) })
		}
		return nil
	})
	if openShift {
		g.Go(func() error {
			streams, err := openshift.ListImageStreams(gctx, c.Image, namespace)
			if err != nil {
				return r.optional("imagestreams", where(namespace), err)
			}
			for _, item := range streams {
				each(item.Namespace, func(n *predict.Namespace) { n.Objects.ImageStreams = append(n.Objects.ImageStreams, item) })
			}
			return nil
		})
	}
	return g.Wait()
}

// readNamespace reads one namespace's StatefulSets and ControllerRevisions, its pods unless every
// StatefulSet of the input there is settled, then its claims and Warning Events where a judgement
// needs them: where a StatefulSet of the input is not settled (check's rules over pods stuck now
// read both), and the claims where the controller would create a pod with claim templates.
//
// A settled StatefulSet (controller.StatusSettled, its status trusted while kube-controller-manager
// renews its Lease) runs one pod per ordinal, each Ready on the update revision, from the
// template: its pods are predicted from its status (predict.SettledPods) rather than read, as
// check -A triages (docs/usage.md). The manifests' ResourceQuotas count the pods read, so a
// namespace they name is read whole.
func readNamespace(ctx context.Context, c read.Clients, ns *predict.Namespace, input []*appsv1.StatefulSet, trustStatuses bool, r *reads) error {
	o, name, list := ns.Objects, ns.Name, metav1.ListOptions{}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		l, err := c.Kube.AppsV1().StatefulSets(name).List(gctx, list)
		if err == nil {
			o.StatefulSets = slim(l.Items)
		}
		return required("statefulsets", where(name), err)
	})
	g.Go(func() error {
		l, err := c.Kube.AppsV1().ControllerRevisions(name).List(gctx, list)
		if err == nil {
			o.Revisions = slim(l.Items)
		}
		return required("controllerrevisions", where(name), err)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	unsettled, creates := needs(o.StatefulSets, input)
	g, gctx = errgroup.WithContext(ctx)
	if unsettled || creates || !trustStatuses || len(ns.ManifestQuotas) > 0 {
		g.Go(func() error {
			l, err := c.Kube.CoreV1().Pods(name).List(gctx, list)
			if err == nil {
				o.Pods = slim(l.Items)
			}
			return required("pods", where(name), err)
		})
	} else {
		ns.PodsFromStatus = true
		for _, in := range input {
			for i := range o.StatefulSets {
				if o.StatefulSets[i].Name == in.Name {
					o.Pods = append(o.Pods, predict.SettledPods(&o.StatefulSets[i], ns.LimitRanges)...)
				}
			}
		}
	}
	if unsettled || creates {
		g.Go(func() error {
			l, err := c.Kube.CoreV1().PersistentVolumeClaims(name).List(gctx, list)
			if err == nil {
				o.PVCs = slim(l.Items)
			}
			return required("persistentvolumeclaims", where(name), err)
		})
	}
	if unsettled {
		g.Go(func() error {
			l, err := c.Kube.CoreV1().Events(name).List(gctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning})
			if err == nil {
				o.Events = slim(l.Items)
			}
			return r.optional("events (findings carry no pod events)", where(name), err)
		})
	}
	return g.Wait()
}

// needs says whether a StatefulSet of the input is live and not settled (controller.StatusSettled:
// it may hold a pod stuck now), and whether the controller would create a pod: a new
// StatefulSet, or one with more replicas than pods. A settled StatefulSet has every replica on
// its update revision, so its pods are only replaced, their claims kept.
func needs(live []appsv1.StatefulSet, input []*appsv1.StatefulSet) (unsettled, creates bool) {
	for _, in := range input {
		var set *appsv1.StatefulSet
		for i := range live {
			if live[i].Name == in.Name {
				set = &live[i]
			}
		}
		switch {
		case set == nil:
			creates = true
		case !controller.StatusSettled(set):
			unsettled = true
		case controller.Replicas(in) > set.Status.Replicas:
			creates = true
		}
	}
	return unsettled, creates
}

func unreachable(err error) error {
	if apierrors.IsForbidden(err) {
		return &ForbiddenError{err}
	}
	return fmt.Errorf("cannot reach the API server: %w", err)
}

// object is what slim clears managed fields of.
type object interface {
	appsv1.StatefulSet | corev1.Pod | appsv1.ControllerRevision | corev1.PersistentVolumeClaim | corev1.Event |
		corev1.Service | corev1.ResourceQuota | corev1.LimitRange | corev1.Namespace | storagev1.StorageClass | imagev1.ImageStream
}

// slim drops managed fields, which no judgement reads.
func slim[T object](items []T) []T {
	for i := range items {
		any(&items[i]).(metav1.Object).SetManagedFields(nil)
	}
	return items
}

// podsOn reads the pods bound to a node, once each.
type podsOn struct {
	c     read.Clients
	ctx   context.Context
	mu    sync.Mutex
	cache map[string][]corev1.Pod
}

func (p *podsOn) read(node string) ([]corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pods, ok := p.cache[node]; ok {
		return pods, nil
	}
	// The scheduler's own view: bound pods that are not terminal (scheduler.go:654@v1.37.2).
	l, err := p.c.Kube.CoreV1().Pods("").List(p.ctx, metav1.ListOptions{
		FieldSelector: "spec.nodeName=" + node + ",status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		return nil, err
	}
	if p.cache == nil {
		p.cache = map[string][]corev1.Pod{}
	}
	p.cache[node] = l.Items
	return l.Items, nil
}
