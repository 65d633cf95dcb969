package preflight

import (
	"context"
	"fmt"
	"sync"

	imagev1 "github.com/openshift/api/image/v1"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/internal/preflight/predict"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
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
		warnings = append(warnings, fmt.Sprintf("listing %s: %s", resource, firstLine(err)))
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

// readNamespace reads what the StatefulSets of one namespace meet. A namespace that does not
// exist holds nothing.
func readNamespace(ctx context.Context, c read.Clients, name string, openShift bool) (*predict.Namespace, []string, error) {
	ns := &predict.Namespace{Name: name, Objects: &stuck.Objects{}}
	got, err := c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ns, nil, nil
	case err == nil:
		ns.Exists = true
		got.ManagedFields = nil
		ns.Objects.Namespaces = []corev1.Namespace{*got}
	case apierrors.IsForbidden(err):
		ns.Exists = true // cannot tell; the LISTs below say whether it can be read
	default:
		return nil, nil, fmt.Errorf("cannot reach the API server: %w", err)
	}
	var mu sync.Mutex
	var warnings []string
	optional := func(resource string, err error) error {
		if err == nil {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, fmt.Sprintf("listing %s in namespace %s: %s", resource, name, firstLine(err)))
		return nil
	}
	required := func(resource string, err error) error {
		if err != nil {
			return fmt.Errorf("listing %s in namespace %s: %w", resource, name, err)
		}
		return nil
	}
	o := ns.Objects
	list := metav1.ListOptions{}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		l, err := c.Kube.AppsV1().StatefulSets(name).List(gctx, list)
		if err == nil {
			o.StatefulSets = slim(l.Items)
		}
		return required("statefulsets", err)
	})
	g.Go(func() error {
		l, err := c.Kube.CoreV1().Pods(name).List(gctx, list)
		if err == nil {
			o.Pods = slim(l.Items)
		}
		return required("pods", err)
	})
	g.Go(func() error {
		l, err := c.Kube.AppsV1().ControllerRevisions(name).List(gctx, list)
		if err == nil {
			o.Revisions = slim(l.Items)
		}
		return required("controllerrevisions", err)
	})
	g.Go(func() error {
		l, err := c.Kube.CoreV1().PersistentVolumeClaims(name).List(gctx, list)
		if err == nil {
			o.PVCs = slim(l.Items)
		}
		return required("persistentvolumeclaims", err)
	})
	g.Go(func() error {
		l, err := c.Kube.CoreV1().Events(name).List(gctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning})
		if err == nil {
			o.Events = slim(l.Items)
		}
		return optional("events", err)
	})
	g.Go(func() error {
		l, err := c.Kube.CoreV1().Services(name).List(gctx, list)
		if err == nil {
			o.Services, o.ServicesListed = slim(l.Items), true
		}
		return optional("services", err)
	})
	g.Go(func() error {
		l, err := c.Kube.CoreV1().ResourceQuotas(name).List(gctx, list)
		if err == nil {
			ns.Quotas = slim(l.Items)
		}
		return optional("resourcequotas (quota not counted)", err)
	})
	g.Go(func() error {
		l, err := c.Kube.CoreV1().LimitRanges(name).List(gctx, list)
		if err == nil {
			ns.LimitRanges = slim(l.Items)
		}
		return optional("limitranges", err)
	})
	if openShift {
		g.Go(func() error {
			streams, err := openshift.ListImageStreams(gctx, c.Image, name)
			if err == nil {
				o.ImageStreams = streams
			}
			return optional("imagestreams", err)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return ns, warnings, nil
}

// object is what slim clears managed fields of.
type object interface {
	appsv1.StatefulSet | corev1.Pod | appsv1.ControllerRevision | corev1.PersistentVolumeClaim | corev1.Event |
		corev1.Service | corev1.ResourceQuota | corev1.LimitRange | storagev1.StorageClass | imagev1.ImageStream
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
