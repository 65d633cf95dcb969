package cmd

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/render"
)

// version and gitCommit are stamped at build time (make build, the release):
//
//	go build -ldflags "-X github.com/stsdiag/stsdiag/cmd.version=v0.3.0 -X github.com/stsdiag/stsdiag/cmd.gitCommit=$(git rev-parse HEAD)"
//
// Without them (go install …@v0.3.0 or …@<commit>, go build) Version reads what Go recorded.
var (
	version   = "dev"
	gitCommit = ""
)

// versionOptions are the flags of `stsdiag version`.
type versionOptions struct {
	genericiooptions.IOStreams
	PrintFlags *render.PrintFlags
}

// newVersionCommand builds `stsdiag version`.
func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &versionOptions{IOStreams: streams, PrintFlags: render.NewPrintFlags()}
	c := &cobra.Command{
		Use:     "version",
		Short:   "Print the version of stsdiag",
		Example: "  kubectl stsdiag version -o json",
		Args:    cobra.NoArgs,
		RunE:    runE(o.ToOptions),
	}
	o.PrintFlags.AddFlags(c)
	c.Flags().Lookup("output").Usage = "Output format: " + strings.Join(versionFormats(o.PrintFlags), ", ")
	return c
}

// versionFormats are the -o values of version: every format but wide (a version has no
// columns to add).
func versionFormats(p *render.PrintFlags) []string {
	return slices.DeleteFunc(p.AllowedFormats(), func(f string) bool { return f == render.FormatWide })
}

// ToOptions checks -o (version takes no arguments: cobra.NoArgs).
func (o *versionOptions) ToOptions([]string) (*versionOptions, error) {
	if err := o.PrintFlags.Validate(); err != nil {
		return nil, err
	}
	if o.PrintFlags.OutputFormat == render.FormatWide {
		return nil, fmt.Errorf("unknown output format %q: want one of %s", render.FormatWide, strings.Join(versionFormats(o.PrintFlags), ", "))
	}
	return o, nil
}

// Run prints the version.
func (o *versionOptions) Run(context.Context) error {
	v := Version()
	if !o.PrintFlags.Human() {
		return o.PrintFlags.PrintDocument(v, o.Out)
	}
	commit := v.GitCommit
	if commit == "" {
		commit = "unknown"
	}
	_, err := fmt.Fprintf(o.Out, "stsdiag %s (commit %s, %s, %s)\n", v.Version, commit, v.GoVersion, v.Platform)
	return err
}

// Version describes this binary. What the build did not stamp comes from the build info Go
// recorded: the module's version (go install …@v0.3.0 records v0.3.0, …@<commit> its
// pseudo-version, a build in a git checkout the pseudo-version of its commit) and the VCS revision.
func Version() *apiv1.Version {
	info, _ := debug.ReadBuildInfo()
	return versionOf(version, gitCommit, info)
}

// pseudoRevision is the commit of a pseudo-version (v0.0.0-20261129022156-af8a5850c0cb: its
// last 12 hexadecimal digits, go help module-get "Pseudo-versions").
var pseudoRevision = regexp.MustCompile(`^v\d+\.\d+\.\d+-(?:[0-9A-Za-z.]+\.)?(?:0\.)?\d{14}-([0-9a-f]{12})(?:\+incompatible)?$`)

// versionOf is Version with the stamped values and the build info given.
func versionOf(stamped, commit string, info *debug.BuildInfo) *apiv1.Version {
	v := &apiv1.Version{Version: stamped, GitCommit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info != nil {
		// "(devel)": built in its own module with no version to go by (no VCS, -buildvcs=false).
		if v.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && v.GitCommit == "" {
				v.GitCommit = s.Value
			}
		}
		// go install …@<commit> records no VCS settings: its pseudo-version names the commit.
		if m := pseudoRevision.FindStringSubmatch(v.Version); m != nil && v.GitCommit == "" {
			v.GitCommit = m[1]
		}
	}
	v.SetGroupVersionKind(apiv1.GroupVersion.WithKind("Version"))
	return v
}
