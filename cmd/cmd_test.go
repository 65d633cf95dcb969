package cmd_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stsdiag/stsdiag/cmd"
)

// TestBadInputExitsTwo covers errors found before any API call.
func TestBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: shop}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"bad output":                             {"check", "-o", "nonsense"},
		"bad fail-on":                            {"check", "--fail-on", "maybe"},
		"bad openshift":                          {"check", "--openshift", "perhaps"},
		"bad selector":                           {"check", "-l", "a in (b"},
		"names with -A":                          {"check", "web", "-A"},
		"unknown flag":                           {"check", "--nope"},
		"unknown command":                        {"frobnicate"},
		"unknown context":                        {"check", "--context", "missing"},
		"unreachable":                            {"check", "--request-timeout", "2s"},
		"missing kubeconfig":                     {"check", "--kubeconfig", filepath.Join(dir, "absent")},
		"explain no name":                        {"explain"},
		"explain two names":                      {"explain", "web", "db"},
		"explain wide":                           {"explain", "web", "-o", "wide"},
		"explain unreachable":                    {"explain", "web", "--request-timeout", "2s"},
		"watch TLS metrics on the probe address": {"watch", "--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0"},
		"watch cert dir without TLS":             {"watch", "--metrics-insecure", "--metrics-cert-dir", dir},
		"canary bad dry-run":                     {"canary", "web", "--steps", "1", "--dry-run", "maybe"},
		"canary negative step-duration":          {"canary", "web", "--steps", "1", "--step-duration", "-1s"},
		"fix timeout without wait":               {"fix", "--timeout", "1m"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args = append(args, "--kubeconfig", kubeconfig)
			if name == "missing kubeconfig" {
				args = args[:len(args)-2]
			}
			code := cmd.Main(args, strings.NewReader(""), &out, &errOut)
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			if code != cmd.ExitError || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || out.Len() != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q: want exit 2 and one error line", code, out.String(), errOut.String())
			}
		})
	}
}

func TestHelpShowsExamples(t *testing.T) {
	var out bytes.Buffer
	if code := cmd.Main([]string{"check", "--help"}, nil, &out, &out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"kubectl stsdiag check -A -o json", "--fail-on", "--kubeconfig", "--openshift"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// -v 6 logs each request client-go sends, with its status, on stderr (as kubectl's -v); without
// it nothing but the error line.
func TestVerbosityLogsRequests(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden"}`))
	}))
	defer api.Close()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+api.URL+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: shop}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		request bool
	}{
		{[]string{"check", "web", "--openshift", "never", "-v", "6"}, true},
		{[]string{"check", "web", "--openshift", "never"}, false},
	} {
		var out, errOut bytes.Buffer
		code := cmd.Main(append(tc.args, "--kubeconfig", kubeconfig), strings.NewReader(""), &out, &errOut)
		logged := strings.Contains(errOut.String(), `verb="GET" url="`+api.URL+`/apis/apps/v1/namespaces/shop/statefulsets`) &&
			strings.Contains(errOut.String(), `status="403 Forbidden"`)
		if code != cmd.ExitError || logged != tc.request {
			t.Errorf("%v: exit %d, request logged %v, want exit 2 and %v; stderr:\n%s", tc.args, code, logged, tc.request, errOut.String())
		}
	}
}
