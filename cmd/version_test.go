package cmd

import (
	"runtime/debug"
	"slices"
	"strings"
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

// Every exit code constant is in ExitCodes, once, lowest first, and every --help ends with the
// codes its command exits with (the root's with all of them).
func TestExitCodesDocumentEveryCode(t *testing.T) {
	var codes []int
	for _, e := range ExitCodes() {
		codes = append(codes, e.Code)
	}
	if want := []int{ExitOK, ExitFindings, ExitError, ExitTimeout, ExitInconclusive, ExitInterrupted}; !slices.Equal(codes, want) {
		t.Errorf("ExitCodes lists %v, want %v", codes, want)
	}
	for command, want := range map[string][]string{
		"":        {"\n    0  success", "\n    4  a canary's analysis could not tell", "\n  130  interrupted by SIGINT or SIGTERM"},
		"check":   {"\n    1  a finding at or above --fail-on", "\n  130  a signal"},
		"canary":  {"\n    3  --timeout passed", "\n    4  --analysis could not tell"},
		"watch":   {"\n    0  stopped by SIGINT or SIGTERM, its normal stop", "\n    2  bad flags"},
		"version": {"\n    0  printed"},
	} {
		help := exitCodesHelp(command)
		for _, w := range want {
			if !strings.Contains(help, w) {
				t.Errorf("%q's exit codes lack %q:\n%s", command, w, help)
			}
		}
		if command == "watch" && strings.Contains(help, "130") {
			t.Errorf("watch stops with 0 on a signal, yet its help lists 130:\n%s", help)
		}
		if command == "check" && strings.Contains(help, "\n    4") {
			t.Errorf("check never exits 4, yet its help lists it:\n%s", help)
		}
	}
}
