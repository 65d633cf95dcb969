package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Human-readable formats every command prints; json and yaml (and kyaml) come from cli-runtime.
const (
	FormatTable = "table"
	FormatWide  = "wide"
	FormatJUnit = "junit"
)

// PrintFlags is the one -o vocabulary of stsdiag: table and wide for people, and cli-runtime's
// JSON/YAML printers for the stsdiag/v1 documents. A command may add formats of its own (junit).
type PrintFlags struct {
	JSONYaml     *genericclioptions.JSONYamlPrintFlags
	OutputFormat string
	extra        []string
	aliases      map[string]string
	// notices receives a line when a former format name is used (WithAlias).
	notices io.Writer
}

// NewPrintFlags returns -o flags with table as the default and the given extra formats.
func NewPrintFlags(extra ...string) *PrintFlags {
	return &PrintFlags{JSONYaml: genericclioptions.NewJSONYamlPrintFlags(), OutputFormat: FormatTable, extra: extra, aliases: map[string]string{}}
}

// WithAlias accepts an older name for a format (kept for scripts written against it); using it
// prints a notice on notices, as pflag does for a deprecated flag.
func (f *PrintFlags) WithAlias(alias, format string, notices io.Writer) *PrintFlags {
	f.aliases[alias] = format
	f.notices = notices
	return f
}

// AllowedFormats lists the values -o takes.
func (f *PrintFlags) AllowedFormats() []string {
	return append(append([]string{FormatTable, FormatWide}, f.JSONYaml.AllowedFormats()...), f.extra...)
}

// AddFlags registers -o.
func (f *PrintFlags) AddFlags(c *cobra.Command) {
	c.Flags().StringVarP(&f.OutputFormat, "output", "o", f.OutputFormat, "Output format: "+strings.Join(f.AllowedFormats(), ", "))
}

// Validate checks -o and resolves aliases.
func (f *PrintFlags) Validate() error {
	if to, ok := f.aliases[f.OutputFormat]; ok {
		if f.notices != nil {
			fmt.Fprintf(f.notices, "Flag --output value %q has been deprecated, use %q\n", f.OutputFormat, to)
		}
		f.OutputFormat = to
	}
	if f.OutputFormat == "" {
		f.OutputFormat = FormatTable
	}
	if !slices.Contains(f.AllowedFormats(), f.OutputFormat) {
		return fmt.Errorf("unknown output format %q: want one of %s", f.OutputFormat, strings.Join(f.AllowedFormats(), ", "))
	}
	return nil
}

// Human reports whether the format is for people (table or wide).
func (f *PrintFlags) Human() bool {
	return f.OutputFormat == FormatTable || f.OutputFormat == FormatWide
}

// PrintDocument prints a stsdiag/v1 document with cli-runtime's JSON or YAML printer. It fails
// for the human formats, which each command renders itself.
func (f *PrintFlags) PrintDocument(obj runtime.Object, w io.Writer) error {
	p, err := f.JSONYaml.ToPrinter(f.OutputFormat)
	if err != nil {
		return err
	}
	return p.PrintObj(obj, w)
}
