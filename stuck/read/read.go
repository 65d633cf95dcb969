// Package read reads from a cluster what stuck.Diagnose needs: the StatefulSets of a scope with
// their pods, ControllerRevisions, PersistentVolumeClaims and Warning Events, the StorageClasses,
// Services and Nodes that explain them, OpenShift's ImageStreams where the image API is served,
// and the controller owners of terminating StatefulSets. It is the I/O beside the pure package
// stuck, as kstatus's readers are beside its status computation.
//
//	objs, err := read.List{Clients: read.Clients{Kube: kube}, Scope: read.Scope{Namespace: "shop"}}.Objects(ctx)
//	if err != nil { ... }
//	res := stuck.Diagnose(objs, stuck.DefaultOptions())
//
// List reads with one LIST per kind. stsdiag's own command line reads the same way for a namespace
// or named StatefulSets, and uses other implementations of Reader for all namespaces (one namespace
// at a time, or triaged by the StatefulSets' statuses) and for informers' caches.
package read

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
)

// Reader reads a scope's objects for a diagnosis and hands them to fn: one snapshot of the whole
// scope, or one per namespace in turn, never concurrently. Every snapshot carries the server's
// version, whether the image API is in use and the warnings of what could not be read (a reader
// handing out several may repeat a warning); a reader hands out at least one, empty when the
// scope holds nothing. A reader that cannot finish the way it began calls fn(nil) and starts
// over: the caller drops what it was handed before.
type Reader interface {
	Read(ctx context.Context, fn func(*stuck.Objects) error) error
}

// Clients are the API clients a read uses. Image may be nil (then no ImageStream is read, and
// image lookup is not judged); Dynamic may be nil (then the owners of terminating StatefulSets
// are not looked up, and a recreated owner is not detected).
type Clients struct {
	Kube    kubernetes.Interface
	Image   imageclient.Interface
	Dynamic dynamic.Interface
}

// Scope selects what to read.
type Scope struct {
	// Namespace to read; "" reads all namespaces.
	Namespace string
	// Names of StatefulSets in scope; empty: all of them. A name that does not exist is a
	// NotFoundError.
	Names []string
	// Selector selects StatefulSets by label; nil: all.
	Selector labels.Selector
	// OpenShift says whether to read the image API; "" is openshift.ModeAuto.
	OpenShift openshift.Mode
}

// NotFoundError means a namespace or a StatefulSet the scope names does not exist.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What + " not found" }

// List reads a scope with one LIST per kind, in parallel, whatever the scope's size: unpaged, so
// that the API server answers each from its watch cache (a LIST with a limit is read from etcd
// on most releases). Besides, it GETs the namespace the scope names, asks discovery for the
// server's version and the image API, and GETs each controller owner of a terminating
// StatefulSet.
type List struct {
	Clients Clients
	Scope   Scope
}

var _ Reader = List{}

// Read hands fn one snapshot of the scope.
func (l List) Read(ctx context.Context, fn func(*stuck.Objects) error) error {
	objs, err := l.Objects(ctx)
	if err != nil {
		return err
	}
	return fn(objs)
}

// Objects reads the scope. Every StatefulSet of the namespaces read is in the snapshot (which
// names exist matters to the rules), those of the scope are Selected. A kind a diagnosis cannot do
// without (StatefulSets, pods, ControllerRevisions, claims) that cannot be read fails the read;
// one it can is left out with a warning (Objects.Warnings) when its absence changes what can be
// found.
func (l List) Objects(ctx context.Context) (*stuck.Objects, error) {
	if l.Clients.Kube == nil {
		return nil, errors.New("read: no Kubernetes clientset")
	}
	namespaces, err := l.Scope.ReadNamespace(ctx, l.Clients.Kube)
	if err != nil {
		return nil, err
	}
	objs := &stuck.Objects{Now: time.Now(), Namespaces: namespaces}
	g, gctx := errgroup.WithContext(ctx)
	var on bool
	g.Go(func() error {
		mode := l.Scope.OpenShift
		if mode == "" {
			mode = openshift.ModeAuto
		}
		var err error
		on, err = openshift.Enabled(gctx, mode, l.Clients.Kube.Discovery())
		return err
	})
	g.Go(func() error {
		objs.ServerVersion = ServerVersion(l.Clients.Kube)
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	objs.OpenShift = on
	e := environment{allNamespaces: l.Scope.Namespace == "", openShift: on, imageClient: l.Clients.Image != nil}
	var mu sync.Mutex
	var unread []unreadKind
	g, gctx = errgroup.WithContext(ctx)
	for i := range kinds {
		k := &kinds[i]
		if k.when != nil && !k.when(e) {
			continue
		}
		g.Go(func() error {
			ns := l.Scope.Namespace
			if k.clusterScoped {
				ns = ""
			}
			err := k.read(gctx, l.Clients, ns, objs, &mu)
			switch {
			case err == nil:
				return nil
			case k.required:
				return fmt.Errorf("listing %s in %s: %w", k.resource, where(ns), err)
			}
			mu.Lock()
			unread = append(unread, unreadKind{k, err})
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	sort.Slice(unread, func(i, j int) bool { return unread[i].kind.order < unread[j].kind.order })
	for _, u := range unread {
		if w := u.warning(objs, l.Scope.Namespace); w != "" {
			objs.Warnings = append(objs.Warnings, w)
		}
	}
	owners, warnings := NewOwners(l.Clients).LookUp(ctx, objs.OwnersToLookUp())
	objs.Owners = owners
	objs.Warnings = append(objs.Warnings, warnings...)
	if err := l.Scope.Select(objs); err != nil {
		return nil, err
	}
	return objs, nil
}

// ReadNamespace GETs the namespace the scope names: it fails when the namespace does not exist
// (NotFoundError) or the API server cannot be reached, and returns the namespace when it could be
// read (its labels matter to OpenShift's image lookup); nothing for all namespaces.
func (s Scope) ReadNamespace(ctx context.Context, kube kubernetes.Interface) ([]corev1.Namespace, error) {
	ns := s.Namespace
	if ns == "" {
		return nil, nil
	}
	namespace, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil:
		namespace.ManagedFields = nil
		return []corev1.Namespace{*namespace}, nil
	case apierrors.IsNotFound(err):
		return nil, &NotFoundError{What: fmt.Sprintf("namespace %q", ns)}
	case !apierrors.IsForbidden(err) && apierrors.ReasonForError(err) == metav1.StatusReasonUnknown:
		return nil, fmt.Errorf("cannot reach the API server: %w", err)
	}
	return nil, nil
}

// Select marks the scope's StatefulSets of the objects Selected (none when the scope names none
// and selects by no label: all are in scope); a name that does not exist is a NotFoundError. The
// other StatefulSets stay in the objects: which names exist matters to the rules.
func (s Scope) Select(objs *stuck.Objects) error {
	if len(s.Names) == 0 && (s.Selector == nil || s.Selector.Empty()) {
		return nil
	}
	objs.Selected = map[types.NamespacedName]bool{}
	byName := map[string]bool{}
	for _, set := range objs.StatefulSets {
		if s.Selector != nil && !s.Selector.Matches(labels.Set(set.Labels)) {
			continue
		}
		byName[set.Name] = true
		if len(s.Names) == 0 {
			objs.Selected[types.NamespacedName{Namespace: set.Namespace, Name: set.Name}] = true
		}
	}
	var missing []string
	for _, name := range s.Names {
		found := false
		for _, set := range objs.StatefulSets {
			if set.Name == name && byName[name] {
				objs.Selected[types.NamespacedName{Namespace: set.Namespace, Name: set.Name}] = true
				found = true
			}
		}
		if !found {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		in := "any namespace"
		if s.Namespace != "" {
			in = fmt.Sprintf("namespace %q", s.Namespace)
		}
		return &NotFoundError{What: fmt.Sprintf("statefulset %q in %s", strings.Join(missing, `", "`), in)}
	}
	return nil
}

// ServerVersion is the API server's gitVersion, "" when it cannot be read or says nothing (no
// permission, a fake, a build without a version stamped, v0.0.0-master): then the newest
// controller rules apply.
func ServerVersion(kube kubernetes.Interface) string {
	info, err := kube.Discovery().ServerVersion()
	if err != nil || info == nil || info.Major == "0" || strings.HasPrefix(info.GitVersion, "v0.0.0") {
		return ""
	}
	return info.GitVersion
}

// where names a namespace, or all of them, in a message.
func where(namespace string) string {
	if namespace == "" {
		return "all namespaces"
	}
	return fmt.Sprintf("namespace %q", namespace)
}

// firstLine is the first line of an error's message.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}
