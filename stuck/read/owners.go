package read

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/stsdiag/stsdiag/stuck"
)

// Owners looks owners up by kind and name, any kind (CRDs included), its kinds found through
// discovery once for its lifetime.
type Owners struct {
	clients Clients
	mapper  meta.RESTMapper
}

// NewOwners looks owners up with c.Dynamic (nil: it looks nothing up).
func NewOwners(c Clients) *Owners {
	o := &Owners{clients: c}
	if c.Dynamic != nil && c.Kube != nil {
		o.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Kube.Discovery()))
	}
	return o
}

// LookUp asks the API, with one GET per owner, whether each still exists and with which UID.
// An owner that cannot be looked up (no dynamic client, an unknown kind, forbidden) is left out,
// with a warning.
func (o *Owners) LookUp(ctx context.Context, wanted []stuck.Owner) ([]stuck.Owner, []string) {
	if len(wanted) == 0 || o.mapper == nil {
		return nil, nil
	}
	var out []stuck.Owner
	var warnings []string
	for _, w := range wanted {
		gv, err := schema.ParseGroupVersion(w.APIVersion)
		if err != nil {
			continue
		}
		mapping, err := o.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: w.Kind}, gv.Version)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("cannot tell whether %s %s/%s was recreated: %v", w.Kind, w.Namespace, w.Name, firstLine(err)))
			continue
		}
		obj, err := o.clients.Dynamic.Resource(mapping.Resource).Namespace(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			w.Exists, w.UID = true, obj.GetUID()
		case apierrors.IsNotFound(err):
			w.Exists = false
		default:
			warnings = append(warnings, fmt.Sprintf("cannot tell whether %s %s/%s was recreated: %v", w.Kind, w.Namespace, w.Name, firstLine(err)))
			continue
		}
		out = append(out, w)
	}
	return out, warnings
}
