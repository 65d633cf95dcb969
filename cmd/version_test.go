package cmd

import (
	"runtime/debug"
	"testing"
)

// A binary built without -ldflags (go install …@<commit>, go build) names the version Go recorded;
// a stamped one keeps its stamp.
func TestVersionFromBuildInfo(t *testing.T) {
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/stsdiag/stsdiag", Version: "v0.0.0-20261129014500-f4b695c0a1b2"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "f4b695c0a1b2c3d4"}}}
	devel := &debug.BuildInfo{Main: debug.Module{Path: "github.com/stsdiag/stsdiag", Version: "(devel)"}}
	for _, tc := range []struct {
		name, stamped, commit string
		info                  *debug.BuildInfo
		wantVersion, wantHash string
	}{
		{"go install at a commit", "dev", "", installed, "v0.0.0-20261129014500-f4b695c0a1b2", "f4b695c0a1b2c3d4"},
		{"go install at a tag", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, "v0.3.0", ""},
		{"go install at a commit, no VCS settings", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261129022156-af8a5850c0cb"}},
			"v0.0.0-20261129022156-af8a5850c0cb", "af8a5850c0cb"},
		{"go install at a commit after a tag", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1-0.20261129022156-af8a5850c0cb"}},
			"v0.3.1-0.20261129022156-af8a5850c0cb", "af8a5850c0cb"},
		{"stamped by make build", "v0.3.0-4-gabc", "abc123", installed, "v0.3.0-4-gabc", "abc123"},
		{"no version recorded", "dev", "", devel, "dev", ""},
		{"no build info", "dev", "", nil, "dev", ""},
	} {
		v := versionOf(tc.stamped, tc.commit, tc.info)
		if v.Version != tc.wantVersion || v.GitCommit != tc.wantHash {
			t.Errorf("%s: version %q commit %q, want %q %q", tc.name, v.Version, v.GitCommit, tc.wantVersion, tc.wantHash)
		}
	}
}
