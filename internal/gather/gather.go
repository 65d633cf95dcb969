// Package gather holds the command line's readers beside the public one (stuck/read's List,
// which Lister wraps): all namespaces a page at a time (Paged), triaged by the StatefulSets'
// statuses (Triaged), and informers' caches (Live), all read.Reader implementations; plus the
// extras (the controller manager's Lease, previous container logs).
package gather

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/stsdiag/stsdiag/internal/probe"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// Clients are the API clients gathering uses: the public reader's (read.Clients), and those of
// the all-namespaces and informer reads.
type Clients struct {
	read.Clients
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

// Scope selects what to gather (read.Scope).
type Scope = read.Scope

// NotFoundError means a namespace or StatefulSet the user named does not exist (read's).
type NotFoundError = read.NotFoundError

// Source gives snapshots of a scope, with warnings naming optional data they lack: Lister reads
// the cluster afresh, Live reads its informer caches.
type Source interface {
	Snapshot(ctx context.Context) (*stuck.Objects, []string, error)
}

var (
	_ Source = Lister{}
	_ Source = (*Live)(nil)
)

// Lister is a Source that reads afresh on every call, with the public reader (read.List) over
// the reading clientset (c.Read when set).
type Lister struct {
	Clients Clients
	Scope   Scope
}

// SourceFor is where the diagnosis of a namespace or of named StatefulSets reads: a fresh LIST of
// the scope (Lister), with admission's answers to its predicted image rewrites when asked
// (--confirm-with-admission). check and fix both read through it.
func SourceFor(c Clients, scope Scope, admission bool) Source {
	var src Source = Lister{Clients: c, Scope: scope}
	if admission {
		src = probe.Source{Source: src, Kube: c.Kube}
	}
	return src
}

// Snapshot reads the scope.
func (l Lister) Snapshot(ctx context.Context) (*stuck.Objects, []string, error) {
	return Gather(ctx, l.Clients, l.Scope)
}

// Gather reads the scope with the public reader (read.List); the warnings are the snapshot's.
func Gather(ctx context.Context, c Clients, scope Scope) (*stuck.Objects, []string, error) {
	rc := c.Clients
	rc.Kube = c.reader()
	objs, err := read.List{Clients: rc, Scope: scope}.Objects(ctx)
	if err != nil {
		return nil, nil, err
	}
	slimAll(objs)
	return objs, objs.Warnings, nil
}

// slimAll slims every object of the snapshot (snapshot.Slim), as the reading clientset does when
// it decodes (c.Read); ImageStreams, read as JSON, in any case.
func slimAll(s *stuck.Objects) {
	each := func(n int, at func(int) any) {
		for i := 0; i < n; i++ {
			snapshot.SlimInPlace(at(i))
		}
	}
	each(len(s.StatefulSets), func(i int) any { return &s.StatefulSets[i] })
	each(len(s.Pods), func(i int) any { return &s.Pods[i] })
	each(len(s.Revisions), func(i int) any { return &s.Revisions[i] })
	each(len(s.PVCs), func(i int) any { return &s.PVCs[i] })
	each(len(s.Events), func(i int) any { return &s.Events[i] })
	each(len(s.StorageClasses), func(i int) any { return &s.StorageClasses[i] })
	each(len(s.Services), func(i int) any { return &s.Services[i] })
	each(len(s.Nodes), func(i int) any { return &s.Nodes[i] })
	each(len(s.Namespaces), func(i int) any { return &s.Namespaces[i] })
	each(len(s.ImageStreams), func(i int) any { return &s.ImageStreams[i] })
}
