package cmd

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/render"
)

// version and gitCommit are stamped at build time:
//
//	go build -ldflags "-X github.com/stsdiag/stsdiag/cmd.version=v0.3.0 -X github.com/stsdiag/stsdiag/cmd.gitCommit=$(git rev-parse HEAD)"
var (
	version   = "dev"
	gitCommit = ""
)

// VersionOptions are the flags of `stsdiag version`.
type VersionOptions struct {
	genericiooptions.IOStreams
	PrintFlags *render.PrintFlags
}

// NewVersionCommand builds `stsdiag version`.
func NewVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &VersionOptions{IOStreams: streams, PrintFlags: render.NewPrintFlags()}
	c := &cobra.Command{
		Use:     "version",
		Short:   "Print the version of stsdiag",
		Example: "  kubectl stsdiag version -o json",
		Args:    cobra.NoArgs,
		RunE:    runE(o),
	}
	o.PrintFlags.AddFlags(c)
	return c
}

// Complete does nothing: version takes no arguments.
func (o *VersionOptions) Complete([]string) error { return nil }

// Validate checks -o.
func (o *VersionOptions) Validate() error { return o.PrintFlags.Validate() }

// Run prints the version.
func (o *VersionOptions) Run(context.Context) error {
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

// Version describes this binary. Without a stamped commit it uses the VCS revision Go recorded.
func Version() *apiv1.Version {
	v := &apiv1.Version{Version: version, GitCommit: gitCommit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if v.GitCommit == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					v.GitCommit = s.Value
				}
			}
		}
	}
	v.SetGroupVersionKind(apiv1.GroupVersion.WithKind("Version"))
	return v
}
