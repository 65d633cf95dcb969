// Package layering holds the test of the project's floor plan: read → diagnose (pure) → words →
// render | plan → apply, with the use cases side by side over that core.
package layering

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/stsdiag/stsdiag/"

// core packages are pure: they read objects and return facts, words or plans, and never reach
// the API themselves.
var core = []string{
	"internal/canary/engine", "internal/diagnose", "internal/explain", "internal/hold", "internal/model",
	"internal/plan", "internal/preflight/predict", "internal/rollout", "internal/snapshot", "internal/until", "internal/verdict", "internal/migration",
	"stuck", "stuck/facts", "stuck/controller", "resolver", // the public rule engine and image lookup model
}

// useCases are the commands' own packages (migrate's pure core is migration, preflight's
// predict): side by side, none imports another.
var useCases = []string{"internal/check", "internal/fix", "internal/wait", "internal/canary", "internal/watch", "internal/migrate", "internal/preflight"}

// clientMachinery are the client-go packages that talk to an API server: the clientsets, the
// dynamic client, informers and their caches (k8s.io/client-go/kubernetes/scheme, a type
// registry the YAML loader decodes with, is not one).
var clientMachinery = []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/kubernetes/typed", "k8s.io/client-go/dynamic",
	"k8s.io/client-go/tools/cache", "k8s.io/client-go/informers", "k8s.io/client-go/rest"}

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

func list(t *testing.T, patterns ...string) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-json=ImportPath,Dir,GoFiles,Imports,Deps"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	return pkgs
}

func TestCoreReachesNoAPI(t *testing.T) {
	pkgs := list(t, prefixed(core)...)
	for _, name := range core {
		for _, dep := range pkgs[name].Deps {
			for _, bad := range clientMachinery {
				if dep == bad || (strings.HasPrefix(dep, bad+"/") && bad != "k8s.io/client-go/kubernetes") {
					t.Errorf("%s depends on %s: the core reads objects, it does not reach the API", name, dep)
				}
			}
		}
	}
}

func TestUseCasesSideBySide(t *testing.T) {
	pkgs := list(t, prefixed(useCases)...)
	for _, name := range useCases {
		for _, dep := range pkgs[name].Deps {
			if other := strings.TrimPrefix(dep, module); other != name && slices.Contains(useCases, other) {
				t.Errorf("use case %s imports use case %s", name, other)
			}
		}
	}
}

// readers are the packages that read the cluster or diagnose what was read.
var readers = []string{"internal/gather", "internal/probe", "internal/slimpb", "stuck/read", "internal/diagnose",
	"internal/check", "internal/follow", "openshift"}

// TestExecutorReadsNothing: the executor (internal/repair) writes, guarded, and proves each
// write on what an injected Prover returns; it reaches no reader and no diagnosis, so every use
// case chooses how its proofs read (a fresh LIST, or informers' caches once they show the
// writes).
func TestExecutorReadsNothing(t *testing.T) {
	for _, dep := range list(t, module+"internal/repair")["internal/repair"].Deps {
		if own := strings.TrimPrefix(dep, module); own != dep && slices.Contains(readers, own) {
			t.Errorf("internal/repair depends on %s: the executor proves with its injected Prover, it reads nothing itself", own)
		}
	}
}

// plumbing are watch's HTTP server (TLS, TokenReview, SubjectAccessReview, probes) and its
// leader election: they serve and campaign for what they are given, and depend on no package of
// this module — no reader, no diagnosis, no repair.
var plumbing = []string{"internal/watch/serve", "internal/watch/leader"}

func TestPlumbingKnowsNoDiagnosis(t *testing.T) {
	pkgs := list(t, prefixed(plumbing)...)
	for _, name := range plumbing {
		if _, ok := pkgs[name]; !ok {
			t.Fatalf("package %s not listed", name)
		}
		for _, dep := range pkgs[name].Deps {
			if own := strings.TrimPrefix(dep, module); own != dep {
				t.Errorf("%s depends on %s: it serves or elects, it knows nothing of stsdiag's work", name, own)
			}
		}
	}
}

// TestRenderImportsItsInputsOnly: the printer depends on what it prints (model, the findings of
// stuck, api/v1), the words (explain) and text helpers — never on a reader, an applier or a workflow.
func TestRenderImportsItsInputsOnly(t *testing.T) {
	allowed := []string{"api/v1", "internal/model", "stuck", "internal/explain", "internal/text"}
	for _, imp := range list(t, module+"internal/render")["internal/render"].Imports {
		if own := strings.TrimPrefix(imp, module); own != imp && !slices.Contains(allowed, own) {
			t.Errorf("internal/render imports %s; it may import only %v", own, allowed)
		}
	}
}

// TestCommandsAreThin: cmd (flags → options → one call → render → exit code) imports the use
// cases, where a command's clients come from (connect), the printer, the model and the
// documents, and the public library — never a reader, a planner, an applier or the words
// directly (crane's rule: the CLI is a client of its library).
func TestCommandsAreThin(t *testing.T) {
	allowed := append([]string{"internal/connect", "internal/render", "internal/model", "api/v1", "stuck", "stuck/read", "openshift"}, useCases...)
	imports := list(t, module+"cmd")["cmd"].Imports
	if len(imports) == 0 {
		t.Fatal("cmd not listed")
	}
	for _, imp := range imports {
		if own := strings.TrimPrefix(imp, module); own != imp && !slices.Contains(allowed, own) {
			t.Errorf("cmd imports %s; it may import only %v", own, allowed)
		}
	}
}

// TestLongestChain: below cmd, no chain of the project's own imports is longer than 7 packages.
func TestLongestChain(t *testing.T) {
	pkgs := list(t, module+"...")
	memo := map[string][]string{}
	var longest func(string) []string
	longest = func(name string) []string {
		if c, ok := memo[name]; ok {
			return c
		}
		best := []string{name}
		for _, imp := range pkgs[name].Imports {
			if own := strings.TrimPrefix(imp, module); own != imp {
				if c := append([]string{name}, longest(own)...); len(c) > len(best) {
					best = c
				}
			}
		}
		memo[name] = best
		return best
	}
	for _, imp := range pkgs["cmd"].Imports {
		if own := strings.TrimPrefix(imp, module); own != imp {
			if c := longest(own); len(c) > 7 {
				t.Errorf("chain of %d below cmd: %s", len(c), strings.Join(c, " → "))
			}
		}
	}
}

func prefixed(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = module + n
	}
	return out
}

// public are the design card's packages others import: their exported API names no internal/
// type (an importer could not name it).
var public = []string{"stuck", "stuck/facts", "stuck/controller", "stuck/read", "resolver", "openshift", "api/v1"}

func TestPublicAPIExposesNoInternalType(t *testing.T) {
	pkgs := list(t, prefixed(public)...)
	for _, name := range public {
		p := pkgs[name]
		fset := token.NewFileSet()
		for _, path := range p.GoFiles {
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, path), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkFile(t, name, path, file)
		}
	}
}

// checkFile reports every exported declaration of a public package's file that names a type of
// an internal/ package.
func checkFile(t *testing.T, name, path string, file *ast.File) {
	t.Helper()
	internal := map[string]string{}
	for _, imp := range file.Imports {
		ip := strings.Trim(imp.Path.Value, `"`)
		if !strings.Contains(ip, "/internal/") {
			continue
		}
		local := ip[strings.LastIndex(ip, "/")+1:]
		if imp.Name != nil {
			local = imp.Name.Name
		}
		internal[local] = ip
	}
	check := func(where string, n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] != "" {
					t.Errorf("%s: %s exposes %s.%s (%s)", filepath.Base(path), where, x.Name, sel.Sel.Name, internal[x.Name])
				}
			}
			return true
		})
	}
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv)) {
				check(name+"."+d.Name.Name, d.Type)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						checkType(name+"."+s.Name.Name, s.Type, check)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							check(name+"."+n.Name, s.Type)
						}
					}
				}
			}
		}
	}
}

// checkType checks a type's exported surface: a struct's exported fields, an interface's
// methods, anything else whole.
func checkType(where string, typ ast.Expr, check func(string, ast.Node)) {
	st, ok := typ.(*ast.StructType)
	if !ok {
		check(where, typ)
		return
	}
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 { // embedded: its exported members are promoted
			check(where, f.Type)
		}
		for _, n := range f.Names {
			if n.IsExported() {
				check(where+"."+n.Name, f.Type)
			}
		}
	}
}

func exportedRecv(recv *ast.FieldList) bool {
	for _, f := range recv.List {
		typ := f.Type
		if star, ok := typ.(*ast.StarExpr); ok {
			typ = star.X
		}
		if id, ok := typ.(*ast.Ident); ok && !id.IsExported() {
			return false
		}
	}
	return true
}

// TestGodocNamesNoInternalPackage: the documentation of the public packages names nothing an
// importer cannot import: no package of internal/, no identifier of one (explain.Findings,
// model.Summaries, ...).
func TestGodocNamesNoInternalPackage(t *testing.T) {
	var names []string
	for name := range list(t, module+"internal/...") {
		names = append(names, regexp.QuoteMeta(filepath.Base(name)))
	}
	mention := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\.[A-Z]|` + regexp.QuoteMeta(module) + `internal/|\binternal/(` + strings.Join(names, "|") + `)\b`)
	for _, name := range public {
		out, err := exec.Command("go", "doc", "-all", module+name).Output()
		if err != nil {
			t.Fatalf("go doc %s: %v", name, err)
		}
		for i, line := range strings.Split(string(out), "\n") {
			if m := mention.FindString(line); m != "" {
				t.Errorf("go doc %s:%d names %q, which an importer cannot import: %s", name, i+1, m, strings.TrimSpace(line))
			}
		}
	}
}

// TestStuckFaceIsNarrow: package stuck, the library's front door, exports at most 50 top-level
// names (types, functions, constants and variables, each counted): the typed facts live in
// stuck/facts, the controller's model in stuck/controller, the reader in stuck/read.
func TestStuckFaceIsNarrow(t *testing.T) {
	dir := list(t, module+"stuck")["stuck"].Dir
	fset := token.NewFileSet()
	var names []string
	for _, file := range list(t, module+"stuck")["stuck"].GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, file), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	t.Logf("stuck exports %d names: %s", len(names), strings.Join(names, " "))
	if len(names) > 50 {
		t.Errorf("stuck exports %d top-level names, more than 50", len(names))
	}
}

// TestPublicStandsOnItsOwnFloor: no public package depends on a package of internal/, so that
// what an importer gets is what the public packages say.
func TestPublicStandsOnItsOwnFloor(t *testing.T) {
	pkgs := list(t, prefixed(public)...)
	for _, name := range public {
		for _, dep := range pkgs[name].Deps {
			if strings.HasPrefix(dep, module+"internal/") {
				t.Errorf("public package %s depends on %s", name, strings.TrimPrefix(dep, module))
			}
		}
	}
}

// TestEveryPackageSaysWhatItIsFor: every package of the module with code has a package comment,
// of the form "Package <name> ..." (revive's package-comments), on one file.
func TestEveryPackageSaysWhatItIsFor(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{len .GoFiles}}\t{{.Doc}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 4)
		if len(f) < 4 || f[2] == "0" || f[1] == "main" {
			continue
		}
		if !strings.HasPrefix(f[3], "Package "+f[1]+" ") {
			t.Errorf("%s: package comment %q, want \"Package %s ...\"", strings.TrimPrefix(f[0], module), f[3], f[1])
		}
	}
}
