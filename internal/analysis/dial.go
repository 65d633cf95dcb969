package analysis

import (
	"fmt"
	"maps"
	"os"
	"strings"
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
	CAData                []byte
	InsecureSkipTLSVerify bool
	// BearerTokenFile, when set, holds the bearer token in BearerToken's place: it is read again
	// at each Querier call, so a token rotated in the file (a projected ServiceAccount token) is
	// sent from the next measurement on.
	BearerTokenFile string

	mu    sync.Mutex
	made  map[string]Querier
	token string // the BearerTokenFile's token the Queriers in made send
}

// ReadToken reads a bearer token file: its content without surrounding white space.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Connection is the connection a metric is measured over (with BearerTokenFile, without the
// token: Querier adds it).
func (d *Dialer) Connection(m Metric) Connection {
	c := m.Prometheus.Connection()
	if d.Override.Address != "" {
		c.Address, c.Transport = d.Override.Address, d.Override.Transport
		c.BearerToken = d.Override.BearerToken
		c.Headers = mergeHeaders(d.Override.Headers, c.Headers)
	}
	if c.Transport == nil {
		c.CAFile, c.CAData = d.CAFile, d.CAData
		c.InsecureSkipTLSVerify = c.InsecureSkipTLSVerify || d.InsecureSkipTLSVerify
	}
	if d.BearerToken != "" {
		c.BearerToken = d.BearerToken
	}
	return c
}

// Querier is Run's q: the metric's Querier, made on first use (and again once BearerTokenFile's
// token changed).
func (d *Dialer) Querier(m Metric) (Querier, error) {
	c := d.Connection(m)
	if c.Address == "" {
		return nil, fmt.Errorf("metric %s has no Prometheus address: give one (--prometheus) or set provider.prometheus.address", m.Name)
	}
	var token string
	if d.BearerTokenFile != "" {
		var err error
		if token, err = ReadToken(d.BearerTokenFile); err != nil {
			return nil, fmt.Errorf("prometheus bearer token: %w", err)
		}
		c.BearerToken = token
	}
	key := fmt.Sprintf("%s|%t|%s|%x|%v|%p", c.Address, c.InsecureSkipTLSVerify, c.CAFile, c.CAData, c.Headers, c.Transport)
	d.mu.Lock()
	defer d.mu.Unlock()
	if token != d.token {
		d.made, d.token = nil, token // rotated: the Queriers made send the old one
	}
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
