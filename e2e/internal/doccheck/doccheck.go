package doccheck

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stsdiag/stsdiag/cmd"
)

// Root is the command tree as users get it.
func Root() *cobra.Command {
	root := cmd.NewRootCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: io.Discard, ErrOut: io.Discard})
	root.DisableAutoGenTag = true
	return root
}

// CLIReference is docs/cli/: one Markdown file per command (cobra/doc), and README.md, the
// index with the exit codes and the former flag names. File name → content.
func CLIReference() (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "clidocs")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	root := Root()
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		// cli-runtime's --cache-dir defaults to the home directory of whoever generates.
		if home != "" {
			b = bytes.ReplaceAll(b, []byte(home), []byte("$HOME"))
		}
		files[e.Name()] = b
	}
	files["README.md"] = []byte(index(root))
	return files, nil
}

// index is docs/cli/README.md.
func index(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("# Command-line reference\n\n")
	b.WriteString("Generated from the commands themselves (`make docs`; `e2e/internal/doccheck` fails when a file here is stale).\n\n")
	fmt.Fprintf(&b, "- [%s](%s.md): the flags every command takes\n", root.CommandPath(), strings.ReplaceAll(root.CommandPath(), " ", "_"))
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			fmt.Fprintf(&b, "- [%s](%s.md): %s\n", c.CommandPath(), strings.ReplaceAll(c.CommandPath(), " ", "_"), c.Short)
		}
	}
	b.WriteString("\n## Exit codes\n\n")
	b.WriteString(ExitCodeTable())
	b.WriteString("\n## Former flag names\n\n")
	b.WriteString("Still accepted, with a notice on stderr; this is the one place they are written down.\n\n")
	b.WriteString("| command | former | use |\n|---|---|---|\n")
	for _, d := range Deprecated(root) {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", d.Command, d.Former, d.Use)
	}
	return b.String()
}

// DeprecatedName is a flag name or -o value kept for scripts written against it.
type DeprecatedName struct {
	Command, Former, Use string
}

// Deprecated lists the deprecated flags of every command (pflag's MarkDeprecated), the -o aliases
// and fix's --wait=DURATION.
func Deprecated(root *cobra.Command) []DeprecatedName {
	var out []DeprecatedName
	for _, c := range root.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Deprecated != "" {
				out = append(out, DeprecatedName{c.Name(), "--" + f.Name, f.Deprecated})
			}
		})
		for former, format := range cmd.OutputAliases(c.Name()) {
			out = append(out, DeprecatedName{c.Name(), "-o " + former, "use -o " + format})
		}
	}
	out = append(out, DeprecatedName{"fix", "--wait=DURATION", "use --wait --timeout DURATION"})
	sort.Slice(out, func(i, j int) bool { return out[i].Command+out[i].Former < out[j].Command+out[j].Former })
	return out
}

// ExitCodeTable is the Markdown table of cmd.ExitCodes.
func ExitCodeTable() string {
	var b strings.Builder
	b.WriteString("| code | meaning | on each command |\n|---|---|---|\n")
	for _, e := range cmd.ExitCodes() {
		var on []string
		for _, m := range e.On {
			on = append(on, fmt.Sprintf("`%s`: %s", m.Command, m.Meaning))
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", e.Code, e.Meaning, strings.Join(on, "<br>"))
	}
	return b.String()
}

// Generated blocks in hand-written documents: between these markers, the text is ExitCodeTable.
const (
	BeginExitCodes = "<!-- exit codes: generated from cmd.ExitCodes (make docs) -->"
	EndExitCodes   = "<!-- end of exit codes -->"
)

// WithExitCodes returns doc with the block between the markers replaced by the table; ok is
// false when doc has no such block.
func WithExitCodes(doc string) (string, bool) {
	i := strings.Index(doc, BeginExitCodes)
	j := strings.Index(doc, EndExitCodes)
	if i < 0 || j < i {
		return doc, false
	}
	return doc[:i+len(BeginExitCodes)] + "\n" + ExitCodeTable() + doc[j:], true
}

var lineRef = regexp.MustCompile(`:\d+(-\d+)?$`)

// PathRefs are the repository paths a document names: relative links, and code spans that start
// with one of the repository's top-level directories.
func PathRefs(text string, topDirs []string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`).FindAllStringSubmatch(text, -1) {
		if !strings.Contains(m[1], "://") && !strings.HasPrefix(m[1], "mailto:") {
			out = append(out, m[1])
		}
	}
	for _, m := range regexp.MustCompile("`([^`\\s]+)`").FindAllStringSubmatch(text, -1) {
		p := strings.TrimSuffix(lineRef.ReplaceAllString(m[1], ""), "/")
		p = strings.TrimPrefix(p, "./")
		for _, d := range topDirs {
			if strings.HasPrefix(p, d+"/") && !strings.ContainsAny(p, "*<>{}$…|=") && !strings.Contains(p, "...") {
				out = append(out, "/"+p)
				break
			}
		}
	}
	return out
}
