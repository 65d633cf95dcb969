// Package importer builds a module of its own, outside this repository, that imports stsdiag's
// public packages as another project would: stuck (and stuck/read) from the main module, and
// stuck/kstatus, a module of its own, with replace directives pointing at this checkout.
package importer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const program = `package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/kstatus"
	"github.com/stsdiag/stsdiag/stuck/read"
)

func main() {
	objs, err := read.List{Clients: read.Clients{Kube: fake.NewClientset()}, Scope: read.Scope{OpenShift: "never"}}.Objects(context.Background())
	if err != nil {
		panic(err)
	}
	res := stuck.Diagnose(objs, stuck.DefaultOptions())
	r := kstatus.NewStatusReader(meta.NewDefaultRESTMapper(nil))
	fmt.Println(len(res.StatefulSets), len(res.Findings), res.Rules.Version, r != nil)
}
`

// TestAnotherModuleBuilds: the module builds and runs, with no access to internal/.
func TestAnotherModuleBuilds(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/importer\n\ngo 1.26\n\n" +
		"replace github.com/stsdiag/stsdiag => " + repo + "\n\n" +
		"replace github.com/stsdiag/stsdiag/stuck/kstatus => " + filepath.Join(repo, "stuck", "kstatus") + "\n"
	for name, content := range map[string]string{"go.mod": gomod, "main.go": program} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("get", "github.com/stsdiag/stsdiag@v0.0.0", "github.com/stsdiag/stsdiag/stuck/kstatus@v0.0.0")
	run("mod", "tidy")
	if out := run("run", "."); strings.TrimSpace(out) != "0 0 v1.37.2 true" {
		t.Errorf("the importer printed %q", out)
	}
}
