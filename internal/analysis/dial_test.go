package analysis

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestDialerTokenFileRotates: with BearerTokenFile the token is read at each Querier call, and
// once the file holds another token the next Querier sends it (a projected ServiceAccount
// token rotated by the kubelet); an unreadable file is the measurement's error.
func TestDialerTokenFileRotates(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("1")))
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &Dialer{Override: Connection{Address: srv.URL}, BearerTokenFile: file}
	m := Metric{Name: "errors"}
	query := func() {
		t.Helper()
		q, err := d.Querier(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Query(context.Background(), "up", t0); err != nil {
			t.Fatal(err)
		}
	}
	query()
	query()
	if err := os.WriteFile(file, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	query()
	var got []string
	for _, s := range srv.seen() {
		got = append(got, s.authorization)
	}
	if want := []string{"Bearer first", "Bearer first", "Bearer second"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("authorizations %q, want %q", got, want)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Querier(m); err == nil {
		t.Error("a missing token file: no error")
	}
}
