package gather

import (
	"context"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
)

// Floor runs only the LISTs Gather runs for all namespaces (the resource table, in parallel, the
// image API's kinds when openShift), decoded by c's clients and then dropped: no discovery, no
// slimming, no snapshot, no diagnosis. It returns the number of objects read. The benchmark's
// floor: what reading the same objects costs a client, against which check -A is measured.
func Floor(ctx context.Context, c Clients, openShift bool) (int, error) {
	e := env{allNamespaces: true, openShift: openShift, imageClient: c.Image != nil}
	g, gctx := errgroup.WithContext(ctx)
	counts := make([]int, len(resources))
	for i := range resources {
		r := &resources[i]
		if !r.wanted(e) {
			continue
		}
		g.Go(func() error {
			l, err := r.list(gctx, c, "", listOptions(r))
			if err != nil {
				return r.listError("", err)
			}
			counts[i] = meta.LenList(l)
			return nil
		})
	}
	err := g.Wait()
	n := 0
	for _, c := range counts {
		n += c
	}
	return n, err
}

// FloorResources names the kinds Floor lists (all of the table), for the raw-body floor, which
// must read the same.
func FloorResources() []string {
	var out []string
	for _, r := range resources {
		out = append(out, r.name)
	}
	return out
}
