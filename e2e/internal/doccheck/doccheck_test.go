package doccheck_test

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stsdiag/stsdiag/e2e/internal/doccheck"
)

var update = flag.Bool("update", false, "rewrite docs/cli and the exit-code tables")

// repo is the repository's root, from e2e/internal/doccheck.
var repo = filepath.Join("..", "..", "..")

// TestCLIReferenceIsCurrent: docs/cli is what the commands generate, for every command there is,
// so a command or flag added later is documented by `make docs`, and this test fails until it is.
func TestCLIReferenceIsCurrent(t *testing.T) {
	want, err := doccheck.CLIReference()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repo, "docs", "cli")
	if *update {
		old, _ := filepath.Glob(filepath.Join(dir, "*.md"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	have, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("docs/cli/%s documents no command any more: run make docs", filepath.Base(f))
		}
	}
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("docs/cli/%s is not what the commands generate: run make docs", name)
		}
	}
}

// TestExitCodeTablesAreCurrent: README.md and docs/ci.md carry cmd.ExitCodes' table.
func TestExitCodeTablesAreCurrent(t *testing.T) {
	for _, name := range []string{"README.md", filepath.Join("docs", "ci.md")} {
		path := filepath.Join(repo, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		generated, ok := doccheck.WithExitCodes(string(b))
		if !ok {
			t.Errorf("%s has no generated exit-code table (%s … %s)", name, doccheck.BeginExitCodes, doccheck.EndExitCodes)
			continue
		}
		if *update {
			if err := os.WriteFile(path, []byte(generated), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if generated != string(b) {
			t.Errorf("%s: the exit-code table differs from cmd.ExitCodes: run make docs", name)
		}
	}
}

// documents are the files a user reads or copies from: the README, docs/ (less the generated
// reference, which lists the former flag names on purpose), and the shipped snippets.
func documents(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, path)
		out[rel] = string(b)
	}
	add(filepath.Join(repo, "README.md"))
	add(filepath.Join(repo, "action.yml"))
	for _, root := range []string{"docs", "deploy"} {
		err := filepath.WalkDir(filepath.Join(repo, root), func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && (d.Name() == "cli" || d.Name() == "testdata"):
				return filepath.SkipDir
			case d.IsDir():
				return nil
			}
			switch filepath.Ext(path) {
			case ".md", ".yaml", ".yml", ".lua", ".tpl", ".txt":
				add(path)
			default:
				if d.Name() == "Containerfile" {
					add(path)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// invocations are the stsdiag command lines of a document: from "kubectl stsdiag CMD", "oc
// stsdiag CMD" or "kubectl-stsdiag CMD" to the end of the code span, or of the shell line
// (continuations joined) up to a pipe, ;, && or a comment.
func invocations(text string) [][2]string {
	text = strings.ReplaceAll(text, "\\\n", " ")
	var out [][2]string
	start := regexp.MustCompile(`(?:kubectl|oc) stsdiag ([a-z]+)|kubectl-stsdiag ([a-z]+)`)
	for _, line := range strings.Split(text, "\n") {
		for _, m := range start.FindAllStringSubmatchIndex(line, -1) {
			var name string
			if m[2] >= 0 {
				name = line[m[2]:m[3]]
			} else {
				name = line[m[4]:m[5]]
			}
			rest := line[m[1]:]
			inSpan := strings.Count(line[:m[0]], "`")%2 == 1
			end := len(rest)
			for _, stop := range []string{"|", ";", "&&", " #", "`"} {
				if stop == "`" && !inSpan {
					continue
				}
				if i := strings.Index(rest, stop); i >= 0 && i < end {
					end = i
				}
			}
			out = append(out, [2]string{name, rest[:end]})
		}
	}
	return out
}

var (
	longFlag  = regexp.MustCompile(`(?:^|[\s\[(|"'])--([a-z][a-z0-9-]*)`)
	shortFlag = regexp.MustCompile(`(?:^|[\s\[(|"'])-([a-zA-Z])\b`)
)

// TestDocsNameRealFlags: every flag a document's stsdiag command line names is a flag of that
// command, and no document or snippet names a deprecated one (docs/cli/README.md lists them, once).
func TestDocsNameRealFlags(t *testing.T) {
	root := doccheck.Root()
	commands := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		commands[c.Name()] = c
	}
	deprecated := doccheck.Deprecated(root)
	docs := documents(t)
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		text := docs[name]
		seen := map[string]bool{}
		for _, d := range deprecated {
			former := d.Former
			if seen[former] {
				continue
			}
			seen[former] = true
			var pattern *regexp.Regexp
			switch {
			case strings.HasPrefix(former, "-o "):
				pattern = regexp.MustCompile(`(?:-o[ =]|--output[ =])` + regexp.QuoteMeta(strings.TrimPrefix(former, "-o ")) + `\b`)
				if d.Command != "wait" && d.Command != "canary" {
					continue
				}
			case former == "--wait=DURATION":
				pattern = regexp.MustCompile(`fix\b[^\n` + "`" + `]*--wait=\d`)
			default:
				pattern = regexp.MustCompile(regexp.QuoteMeta(former) + `\b`)
			}
			for _, loc := range pattern.FindAllStringIndex(text, -1) {
				t.Errorf("%s:%d names %s, deprecated (%s): %s", name, lineOf(text, loc[0]), former, d.Use, strings.TrimSpace(lineAt(text, loc[0])))
			}
		}
		for _, inv := range invocations(text) {
			c, ok := commands[inv[0]]
			if !ok {
				continue
			}
			for _, m := range longFlag.FindAllStringSubmatch(inv[1], -1) {
				if f := lookup(c, m[1]); f == nil && m[1] != "help" {
					t.Errorf("%s: `%s %s` names --%s, which %s does not have", name, inv[0], strings.TrimSpace(inv[1]), m[1], inv[0])
				}
			}
			for _, m := range shortFlag.FindAllStringSubmatch(inv[1], -1) {
				if c.Flags().ShorthandLookup(m[1]) == nil && c.InheritedFlags().ShorthandLookup(m[1]) == nil && m[1] != "h" {
					t.Errorf("%s: `%s %s` names -%s, which %s does not have", name, inv[0], strings.TrimSpace(inv[1]), m[1], inv[0])
				}
			}
		}
	}
}

func lookup(c *cobra.Command, name string) *pflag.Flag {
	if f := c.Flags().Lookup(name); f != nil {
		return f
	}
	return c.InheritedFlags().Lookup(name)
}

// TestDocsNamePathsThatExist: every file or directory of this repository a document links to or
// names in a code span exists (`internal/gather/triage.go:40` included, less the line).
func TestDocsNamePathsThatExist(t *testing.T) {
	entries, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	var top []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "bin" {
			top = append(top, e.Name())
		}
	}
	docs := documents(t)
	for name, text := range docs {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		for _, ref := range doccheck.PathRefs(text, top) {
			path := filepath.Join(repo, filepath.Dir(name), ref)
			if strings.HasPrefix(ref, "/") {
				path = filepath.Join(repo, ref)
			}
			if strings.Contains(ref, "_artifacts") {
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s names %s, which does not exist", name, ref)
			}
		}
	}
}

// TestDocsNameIdentifiersThatExist: a code span `pkg.Name` whose pkg is one of this repository's
// Go packages names an identifier that package declares (or mentions) in its sources.
func TestDocsNameIdentifiersThatExist(t *testing.T) {
	sources := map[string]string{} // package directory name → its non-test Go sources
	err := filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != repo || d.Name() == "testdata" || d.Name() == "openshift-src") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources[filepath.Base(filepath.Dir(path))] += string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ident := regexp.MustCompile("`[^`]*`")
	ref := regexp.MustCompile(`(?:^|[^A-Za-z0-9_./])([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)`)
	for name, text := range documents(t) {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		for _, span := range ident.FindAllString(text, -1) {
			for _, m := range ref.FindAllStringSubmatch(span, -1) {
				src, ours := sources[m[1]]
				if !ours {
					continue
				}
				if !regexp.MustCompile(`\b` + m[2] + `\b`).MatchString(src) {
					t.Errorf("%s names %s.%s: package %s has no %s", name, m[1], m[2], m[1], m[2])
				}
			}
		}
	}
}

func lineOf(text string, offset int) int { return strings.Count(text[:offset], "\n") + 1 }

func lineAt(text string, offset int) string {
	start := strings.LastIndex(text[:offset], "\n") + 1
	end := strings.Index(text[offset:], "\n")
	if end < 0 {
		return text[start:]
	}
	return text[start : offset+end]
}
