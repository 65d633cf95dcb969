package cmd

import (
	"k8s.io/cli-runtime/pkg/genericclioptions"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/stsdiag/stsdiag/internal/connect"
)

// defaultRequestTimeout bounds each request of the one-shot commands; wait and watch hold
// watches open and use none.
const defaultRequestTimeout = connect.DefaultRequestTimeout

// Each command's request profile: each request's timeout and client-go's client-side rate limit.
var (
	// reads: check and explain, one-shot and read-only. A triaged check -A makes 9 requests plus
	// 4 per namespace it reads deep (250 at 150k pods of the bench's realistic mix): at 50/s after
	// a burst of 100 the limiter, not the server, set its time (docs/development.md). The burst
	// covers such a read; the server's API Priority and Fairness still bounds the load.
	reads = connect.Profile{Timeout: defaultRequestTimeout, QPS: 200, Burst: 400}
	// dryRuns: preflight, one-shot, reads and dry runs only: a bounded number of requests per
	// StatefulSet of the input (about 3, and a LIST per namespace and kind), sent at once.
	dryRuns = connect.Profile{Timeout: defaultRequestTimeout, QPS: 500, Burst: 1000}
	// writes: fix, one-shot, deletes and patches: kubectl's own pace.
	writes = connect.Profile{Timeout: defaultRequestTimeout, QPS: 50, Burst: 100}
	// following: wait, canary and watch run for long and hold watches open; watch writes Stalled
	// conditions and repairs through this client (its Events through eventsClient). At 50/s a
	// stream of changes faster than that queues behind the limiter.
	following = connect.Profile{QPS: 200, Burst: 400}
)

// userAgent is what every request says it comes from.
func userAgent() string { return "kubectl-stsdiag/" + version }

// withUserAgent is the profile p sending userAgent.
func withUserAgent(p connect.Profile) connect.Profile {
	p.UserAgent = userAgent()
	return p
}

// newClients builds the API clients of the kubeconfig flags' context with profile p.
func newClients(flags *genericclioptions.ConfigFlags, p connect.Profile) (connect.Clients, error) {
	return connect.New(flags, withUserAgent(p))
}

// eventsClient is the client watch posts its Events through (connect.Events: a rate limit of
// its own).
func eventsClient(flags *genericclioptions.ConfigFlags) (typedcorev1.EventsGetter, error) {
	return connect.Events(flags, userAgent())
}
