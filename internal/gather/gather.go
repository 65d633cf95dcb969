// Package gather does every API read of a diagnosis: one LIST per kind of its resource table
// (Gather), or one shared informer per kind (Live), both a Source of snapshots; plus the
// explicit extras (owners of terminating StatefulSets, previous container logs).
package gather

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/stsdiag/stsdiag/internal/imageapi"
	"github.com/stsdiag/stsdiag/stuck"
)

// Clients are the API clients gathering uses. Image may be nil on plain Kubernetes; Dynamic
// (for owners of any kind) may be nil, then recreated owners are not detected.
type Clients struct {
	Kube    kubernetes.Interface
	Image   imageclient.Interface
	Dynamic dynamic.Interface
	// Metadata, if set, LISTs what only ownership matters of as metadata (Triage's
	// ControllerRevisions).
	Metadata metadata.Interface
	// Read, if set, serves the LISTs and WATCHes of the resource table instead of Kube: a
	// clientset decoding only what diagnosis reads (slimpb.NewClientset). Never written through.
	Read kubernetes.Interface
}

// reader is the clientset of the resource table's LISTs and WATCHes.
func (c Clients) reader() kubernetes.Interface {
	if c.Read != nil {
		return c.Read
	}
	return c.Kube
}

// Scope selects what to gather.
type Scope struct {
	// Namespace to look in; empty means all namespaces.
	Namespace string
	// Names of StatefulSets; empty means all.
	Names []string
	// Selector filters StatefulSets by label.
	Selector  labels.Selector
	OpenShift imageapi.Mode
}

// NotFoundError means a namespace or StatefulSet the user named does not exist.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What + " not found" }

// Source gives snapshots of a scope, with warnings naming optional data they lack: Lister reads
// the cluster afresh, Live reads its informer caches.
type Source interface {
	Snapshot(ctx context.Context) (*stuck.Objects, []string, error)
}

var (
	_ Source = Lister{}
	_ Source = (*Live)(nil)
)

// Lister is a Source that gathers afresh (Gather) on every call.
type Lister struct {
	Clients Clients
	Scope   Scope
}

// Snapshot gathers the scope.
func (l Lister) Snapshot(ctx context.Context) (*stuck.Objects, []string, error) {
	return Gather(ctx, l.Clients, l.Scope)
}

// Gather reads everything a diagnosis needs: one LIST per kind of the resource table (in
// parallel, whatever the cluster's size), discovery, a GET of the namespace the scope names and a
// GET per controller owner of a terminating StatefulSet. Warnings list optional data that could
// not be read.
func Gather(ctx context.Context, c Clients, scope Scope) (*stuck.Objects, []string, error) {
	namespaces, err := checkNamespace(ctx, c, scope.Namespace)
	if err != nil {
		return nil, nil, err
	}
	s := &stuck.Objects{Now: time.Now(), Namespaces: namespaces}
	listed, err := listResources(ctx, c, scope, s)
	if err != nil {
		return nil, nil, err
	}
	var missing []unread
	for i, l := range listed {
		switch {
		case l.err != nil:
			missing = append(missing, unread{&resources[i], l.err})
		case l.read:
			resources[i].put(s, nil)
			if !setItems(s, l.list) {
				objs, err := meta.ExtractList(l.list)
				if err != nil {
					return nil, nil, err
				}
				resources[i].put(s, objs)
			}
		}
	}
	warns := warnings(s, scope.Namespace, missing)
	owners, ownerWarnings := lookUpOwners(ctx, c, newMapper(c), stuck.TerminatingOwners(s.StatefulSets))
	s.Owners = owners
	if err := selectStatefulSets(s, scope); err != nil {
		return nil, nil, err
	}
	return s, append(warns, ownerWarnings...), nil
}

// listing is what one LIST of the resource table gave.
type listing struct {
	read bool
	list runtime.Object
	// err is set when an optional kind could not be read.
	err error
}

// listResources runs the LISTs of the resource table in parallel, with discovery (which sets
// s.OpenShift and s.ServerVersion). It fails when a required kind cannot be read.
func listResources(ctx context.Context, c Clients, scope Scope, s *stuck.Objects) ([]listing, error) {
	g, gctx := errgroup.WithContext(ctx)
	environment := sync.OnceValues(func() (env, error) {
		on, err := imageapi.Enabled(gctx, scope.OpenShift, c.Kube.Discovery())
		return env{allNamespaces: scope.Namespace == "", openShift: on, imageClient: c.Image != nil}, err
	})
	g.Go(func() (err error) {
		e, err := environment()
		s.OpenShift = e.openShift
		return err
	})
	g.Go(func() error {
		s.ServerVersion = serverVersion(c)
		return nil
	})
	out := make([]listing, len(resources))
	for i := range resources {
		r := &resources[i]
		g.Go(func() error {
			if r.when != nil {
				if e, err := environment(); err != nil || !r.wanted(e) {
					return err
				}
			}
			list, err := r.listAll(gctx, c, scope.Namespace)
			if err != nil && r.required {
				return r.listError(scope.Namespace, err)
			}
			out[i] = listing{read: err == nil, list: list, err: err}
			return nil
		})
	}
	return out, g.Wait()
}

// setItems stores the items of a LIST in the snapshot's field of their type, in place: at 100k
// pods a copy would double their memory.
// It reports false when the snapshot has no such field (then put the items).
func setItems(s *stuck.Objects, list runtime.Object) bool {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	items := v.Elem().FieldByName("Items")
	return items.IsValid() && setSlice(s, items)
}

// selectStatefulSets marks the StatefulSets in scope. All StatefulSets of the namespace stay in the
// snapshot: orphan detection needs to know which names exist today.
func selectStatefulSets(s *stuck.Objects, scope Scope) error {
	if len(scope.Names) == 0 && (scope.Selector == nil || scope.Selector.Empty()) {
		return nil
	}
	s.Selected = map[types.NamespacedName]bool{}
	byName := map[string]bool{}
	for _, set := range s.StatefulSets {
		if scope.Selector != nil && !scope.Selector.Matches(labels.Set(set.Labels)) {
			continue
		}
		byName[set.Name] = true
		if len(scope.Names) == 0 {
			s.Selected[types.NamespacedName{Namespace: set.Namespace, Name: set.Name}] = true
		}
	}
	var missing []string
	for _, name := range scope.Names {
		found := false
		for _, set := range s.StatefulSets {
			if set.Name == name && byName[name] {
				s.Selected[types.NamespacedName{Namespace: set.Namespace, Name: set.Name}] = true
				found = true
			}
		}
		if !found {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		where := "any namespace"
		if scope.Namespace != "" {
			where = fmt.Sprintf("namespace %q", scope.Namespace)
		}
		return &NotFoundError{What: fmt.Sprintf("statefulset %q in %s", strings.Join(missing, `", "`), where)}
	}
	return nil
}

// checkNamespace fails when a namespace the user named does not exist or the API cannot be
// reached, and returns the namespace when it could be read.
func checkNamespace(ctx context.Context, c Clients, ns string) ([]corev1.Namespace, error) {
	if ns == "" {
		return nil, nil
	}
	namespace, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil:
		return []corev1.Namespace{*namespace}, nil
	case apierrors.IsNotFound(err):
		return nil, &NotFoundError{What: fmt.Sprintf("namespace %q", ns)}
	case !apierrors.IsForbidden(err) && apierrors.ReasonForError(err) == metav1.StatusReasonUnknown:
		return nil, fmt.Errorf("cannot reach the API server: %w", err)
	}
	return nil, nil
}

func firstLine(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// serverVersion is the API server's gitVersion, "" when it cannot be read (a fake, or no
// permission: then the newest controller rules apply).
func serverVersion(c Clients) string {
	info, err := c.Kube.Discovery().ServerVersion()
	if err != nil || info == nil || info.Major == "0" {
		return ""
	}
	return info.GitVersion
}
