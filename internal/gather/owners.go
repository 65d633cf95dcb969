package gather

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stsdiag/stsdiag/stuck"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// lookUpOwners asks the API, with one GET per distinct owner (any kind, CRDs included, found
// through discovery), whether the controller owners of terminating StatefulSets still exist and
// with which UID. Owners that cannot be looked up (no Dynamic client, unknown kind, forbidden)
// are left out, with a warning.
func lookUpOwners(ctx context.Context, c Clients, mapper meta.RESTMapper, wanted []stuck.Owner) ([]stuck.Owner, []string) {
	if len(wanted) == 0 || c.Dynamic == nil {
		return nil, nil
	}
	var out []stuck.Owner
	var warnings []string
	for _, o := range wanted {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			continue
		}
		mapping, err := mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind}, gv.Version)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("cannot tell whether %s %s/%s was recreated: %v", o.Kind, o.Namespace, o.Name, firstLine(err)))
			continue
		}
		obj, err := c.Dynamic.Resource(mapping.Resource).Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			o.Exists, o.UID = true, obj.GetUID()
		case apierrors.IsNotFound(err):
			o.Exists = false
		default:
			warnings = append(warnings, fmt.Sprintf("cannot tell whether %s %s/%s was recreated: %v", o.Kind, o.Namespace, o.Name, firstLine(err)))
			continue
		}
		out = append(out, o)
	}
	return out, warnings
}

// ownerCache remembers owner lookups for a while, so informer-driven diagnoses (wait, watch) do
// not GET the same owner on every change, and their snapshots read owners without API calls.
type ownerCache struct {
	mu sync.Mutex
	// mapper finds a kind's resource through discovery, cached for the Live's lifetime.
	mapper  meta.RESTMapper
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
	if oc.mapper == nil {
		oc.mapper = newMapper(c)
	}
	found, warnings := lookUpOwners(ctx, c, oc.mapper, stale)
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

// newMapper maps kinds to resources with cached discovery: the owners' kinds are discovered once.
func newMapper(c Clients) meta.RESTMapper {
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Kube.Discovery()))
}
