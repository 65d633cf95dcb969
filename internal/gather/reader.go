package gather

import (
	"context"
	"errors"

	"github.com/stsdiag/stsdiag/stuck"
)

// Reader reads a scope's objects for a diagnosis and hands them to fn: one snapshot of the whole
// scope, or one per namespace in turn, never concurrently. A reader that cannot finish the way it
// began calls fn(nil) and starts over: the caller drops what it was handed before.
//
// Lister reads with one LIST per kind, Paged all namespaces a page at a time, *Live its informer
// caches (Triage reads by status, with a settled flag of its own).
type Reader interface {
	Read(ctx context.Context, fn func(*stuck.Objects) error) (*Streamed, error)
}

var (
	_ Reader = Lister{}
	_ Reader = Paged{}
	_ Reader = (*Live)(nil)
)

// Read hands fn one snapshot of the scope (Gather).
func (l Lister) Read(ctx context.Context, fn func(*stuck.Objects) error) (*Streamed, error) {
	return readOne(ctx, l, fn)
}

// Read hands fn one snapshot of the caches.
func (l *Live) Read(ctx context.Context, fn func(*stuck.Objects) error) (*Streamed, error) {
	return readOne(ctx, l, fn)
}

func readOne(ctx context.Context, src Source, fn func(*stuck.Objects) error) (*Streamed, error) {
	snap, warnings, err := src.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if err := fn(snap); err != nil {
		return nil, err
	}
	return &Streamed{OpenShift: snap.OpenShift, ServerVersion: snap.ServerVersion, Warnings: warnings}, nil
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
func (p Paged) Read(ctx context.Context, fn func(*stuck.Objects) error) (*Streamed, error) {
	read, err := eachNamespace(ctx, p.Clients, p.Scope, p.PageSize, fn, nil)
	if !errors.Is(err, ErrRestart) {
		return read, err
	}
	if err := fn(nil); err != nil {
		return nil, err
	}
	return readOne(ctx, Lister{Clients: p.Clients, Scope: p.Scope}, fn)
}
