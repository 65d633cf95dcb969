package analysis

import (
	"fmt"
	"maps"
	"sync"
)

// Dialer gives each metric its Querier: the metric's own connection (address, insecure,
// headers) with what the user said on top — another address (--prometheus: a URL, or a Service
// through the API server proxy, already made a Connection), a bearer token, a CA bundle.
// Queriers are made once per connection and reused.
type Dialer struct {
	// Override, when its Address is set, replaces every metric's address (and its Transport is
	// used, e.g. the API server proxy's).
	Override Connection
	// BearerToken, CAFile and InsecureSkipTLSVerify apply to every connection without a
	// Transport of its own.
	BearerToken           string
	CAFile                string
	InsecureSkipTLSVerify bool

	mu   sync.Mutex
	made map[string]Querier
}

// Connection is the connection a metric is measured over.
func (d *Dialer) Connection(m Metric) Connection {
	c := m.Prometheus.Connection()
	if d.Override.Address != "" {
		c.Address, c.Transport = d.Override.Address, d.Override.Transport
		c.BearerToken = d.Override.BearerToken
		c.Headers = mergeHeaders(d.Override.Headers, c.Headers)
	}
	if c.Transport == nil {
		c.CAFile = d.CAFile
		c.InsecureSkipTLSVerify = c.InsecureSkipTLSVerify || d.InsecureSkipTLSVerify
	}
	if d.BearerToken != "" {
		c.BearerToken = d.BearerToken
	}
	return c
}

// Querier is Run's q: the metric's Querier, made on first use.
func (d *Dialer) Querier(m Metric) (Querier, error) {
	c := d.Connection(m)
	if c.Address == "" {
		return nil, fmt.Errorf("metric %s has no Prometheus address: give one (--prometheus) or set provider.prometheus.address", m.Name)
	}
	key := fmt.Sprintf("%s|%t|%s|%v|%p", c.Address, c.InsecureSkipTLSVerify, c.CAFile, c.Headers, c.Transport)
	d.mu.Lock()
	defer d.mu.Unlock()
	if q, ok := d.made[key]; ok {
		return q, nil
	}
	q, err := NewQuerier(c)
	if err != nil {
		return nil, err
	}
	if d.made == nil {
		d.made = map[string]Querier{}
	}
	d.made[key] = q
	return q, nil
}

func mergeHeaders(a, b map[string]string) map[string]string {
	if len(a) == 0 {
		return b
	}
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
