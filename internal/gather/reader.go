package gather

import (
	"context"
	"errors"

	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// The readers of a diagnosis are read.Reader's implementations: Lister (one LIST per kind, the
// public read.List), Paged (all namespaces a page at a time), Triaged (all namespaces by the
// StatefulSets' statuses) and *Live (informers' caches). Each snapshot carries its warnings
// (the multi-namespace readers give each warning once, with the first snapshot it concerns).
var (
	_ read.Reader = Lister{}
	_ read.Reader = Paged{}
	_ read.Reader = Triaged{}
	_ read.Reader = (*Live)(nil)
)

// Read hands fn one snapshot of the scope (Gather).
func (l Lister) Read(ctx context.Context, fn func(*stuck.Objects) error) error {
	return readOne(ctx, l, fn)
}

// Read hands fn one snapshot of the caches.
func (l *Live) Read(ctx context.Context, fn func(*stuck.Objects) error) error {
	return readOne(ctx, l, fn)
}

func readOne(ctx context.Context, src Source, fn func(*stuck.Objects) error) error {
	snap, warnings, err := src.Snapshot(ctx)
	if err != nil {
		return err
	}
	snap.Warnings = warnings
	return fn(snap)
}

// Paged reads all namespaces (Scope by selector only) one namespace at a time, in pages of
// PageSize (0: DefaultPageSize), holding one namespace and a page per kind in memory
// (EachNamespace). When the pages cannot be read namespace by namespace (ErrRestart) it calls
// fn(nil) and hands out one snapshot of everything instead (Gather): never a namespace read in
// part.
type Paged struct {
	Clients  Clients
	Scope    Scope
	PageSize int64
}

// Read reads the scope.
func (p Paged) Read(ctx context.Context, fn func(*stuck.Objects) error) error {
	handed := false
	streamed, err := eachNamespace(ctx, p.Clients, p.Scope, p.PageSize, func(s *stuck.Objects) error {
		handed = true
		return fn(s)
	}, nil)
	if errors.Is(err, ErrRestart) {
		if err := fn(nil); err != nil {
			return err
		}
		return readOne(ctx, Lister{Clients: p.Clients, Scope: p.Scope}, fn)
	}
	if err != nil || handed {
		return err
	}
	return fn(streamed.empty())
}

// Triaged reads all namespaces (Scope by selector only) by what the StatefulSets' statuses say
// (Triage): the namespaces it reads deep whole, the settled ones without their pods, claims,
// revisions and Events (their snapshots StatusOnly).
type Triaged struct {
	Clients Clients
	Scope   Scope
}

// Read reads the scope.
func (t Triaged) Read(ctx context.Context, fn func(*stuck.Objects) error) error {
	handed := false
	triaged, err := Triage(ctx, t.Clients, t.Scope, func(s *stuck.Objects, settled bool) error {
		handed = true
		s.StatusOnly = settled
		return fn(s)
	})
	if err != nil || handed {
		return err
	}
	return fn(triaged.empty())
}

// empty is the snapshot of a read that found no namespace to hand out: nothing but what it read
// besides.
func (s *Streamed) empty() *stuck.Objects {
	return &stuck.Objects{OpenShift: s.OpenShift, ServerVersion: s.ServerVersion, Warnings: s.Warnings}
}
