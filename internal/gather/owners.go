package gather

import (
	"context"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// ownerCache remembers owner lookups for a while, so informer-driven diagnoses (wait, watch) do
// not GET the same owner on every change, and their snapshots read owners without API calls.
type ownerCache struct {
	mu sync.Mutex
	// owners looks owners up, kinds discovered once for the Live's lifetime.
	owners  *read.Owners
	ttl     time.Duration
	entries map[string]ownerEntry
}

type ownerEntry struct {
	owner stuck.Owner
	at    time.Time
}

// refresh looks up the wanted owners not looked up in the last ttl, and forgets those it cannot
// look up now. The warnings name them.
func (oc *ownerCache) refresh(ctx context.Context, c Clients, wanted []stuck.Owner) []string {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if oc.entries == nil {
		oc.entries = map[string]ownerEntry{}
	}
	now := time.Now()
	var stale []stuck.Owner
	for _, o := range wanted {
		key := ownerKey(o)
		if e, ok := oc.entries[key]; !ok || now.Sub(e.at) >= oc.ttl {
			stale = append(stale, o)
			delete(oc.entries, key)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	if oc.owners == nil {
		oc.owners = read.NewOwners(c.Clients)
	}
	found, warnings := oc.owners.LookUp(ctx, stale)
	for _, o := range found {
		oc.entries[ownerKey(o)] = ownerEntry{owner: o, at: now}
	}
	return warnings
}

// known returns what the last lookups said of the wanted owners; an owner not looked up is absent.
func (oc *ownerCache) known(wanted []stuck.Owner) []stuck.Owner {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	var out []stuck.Owner
	for _, o := range wanted {
		if e, ok := oc.entries[ownerKey(o)]; ok {
			out = append(out, e.owner)
		}
	}
	return out
}

func ownerKey(o stuck.Owner) string {
	group := ""
	if gv, err := schema.ParseGroupVersion(o.APIVersion); err == nil {
		group = gv.Group
	}
	return strings.Join([]string{o.Namespace, group, o.Kind, o.Name}, "/")
}
