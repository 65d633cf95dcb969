// Package release_test checks the release files offline: .goreleaser.yaml, the krew manifest
// template (deploy/krew/stsdiag.yaml) and that deploy/ names the documented image.
package release_test

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/stsdiag/stsdiag/release/internal/image"
)

type goreleaser struct {
	Version     int
	ProjectName string `json:"project_name"`
	Builds      []struct {
		ID, Main, Binary string
		Env, Flags       []string
		Ldflags          []string
		Goos, Goarch     []string
		ModTimestamp     string `json:"mod_timestamp"`
	}
	Archives []struct {
		ID              string
		IDs             []string `json:"ids"`
		NameTemplate    string   `json:"name_template"`
		Formats         []string
		FormatOverrides []struct {
			Goos    string
			Formats []string
		} `json:"format_overrides"`
		Files []string
	}
	Checksum struct {
		NameTemplate string `json:"name_template"`
		Algorithm    string
	}
	Changelog map[string]any
}

// TestGoreleaser: every OS × arch, static, the version variables `make build` stamps, archive
// names the krew manifest points to, checksums, and files that exist.
func TestGoreleaser(t *testing.T) {
	var g goreleaser
	readStrict(t, "../.goreleaser.yaml", &g)
	if g.Version != 2 || len(g.Builds) != 1 || len(g.Archives) != 1 || g.Checksum.NameTemplate != "checksums.txt" {
		t.Fatalf("%+v", g)
	}
	b := g.Builds[0]
	if b.Main != "./cmd/kubectl-stsdiag" || b.Binary != "kubectl-stsdiag" || strings.Join(b.Env, ",") != "CGO_ENABLED=0" {
		t.Errorf("build %+v", b)
	}
	if got := strings.Join(b.Goos, ",") + "/" + strings.Join(b.Goarch, ","); got != "linux,darwin,windows/amd64,arm64" {
		t.Errorf("platforms %s", got)
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"github.com/stsdiag/stsdiag/cmd.version=", "github.com/stsdiag/stsdiag/cmd.gitCommit="} {
		if !strings.Contains(b.Ldflags[0], "-X "+v) || !bytes.Contains(makefile, []byte("-X "+v)) {
			t.Errorf("ldflags %q: want -X %s… as the Makefile stamps it", b.Ldflags, v)
		}
	}
	a := g.Archives[0]
	if a.NameTemplate != "kubectl-stsdiag_{{ .Tag }}_{{ .Os }}_{{ .Arch }}" || strings.Join(a.Formats, ",") != "tar.gz" ||
		len(a.FormatOverrides) != 1 || a.FormatOverrides[0].Goos != "windows" || strings.Join(a.FormatOverrides[0].Formats, ",") != "zip" {
		t.Errorf("archives %+v", a)
	}
	for _, f := range a.Files {
		if _, err := os.Stat("../" + f); err != nil {
			t.Errorf("archive file %s: %v", f, err)
		}
	}
}

// plugin mirrors krew's index type (sigs.k8s.io/krew/pkg/index v1alpha2 Plugin; krew's module
// requires client-go v11, which cannot join this module's k8s.io v0.35, so its types are copied).
type plugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string
	Metadata   struct{ Name string }
	Spec       struct {
		Version          string
		Homepage         string
		ShortDescription string `json:"shortDescription"`
		Description      string
		Caveats          string
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			}
			URI    string `json:"uri"`
			Sha256 string
			Bin    string
			Files  []struct{ From, To string }
		}
	}
}

// TestKrewManifest renders the template as krew-release-bot does (TagName, addURIAndSha) and
// checks it with krew's rules: a valid name and semver, a short description, caveats naming the
// RBAC, one platform per goreleaser archive, a .exe on Windows, a sha256 each.
func TestKrewManifest(t *testing.T) {
	raw, err := os.ReadFile("../deploy/krew/stsdiag.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const tag = "v0.3.0"
	sha := strings.Repeat("ab", 32)
	funcs := template.FuncMap{"addURIAndSha": func(url, tag string) string {
		return fmt.Sprintf("uri: %s\n    sha256: %s", strings.ReplaceAll(url, "{{ .TagName }}", tag), sha)
	}}
	tpl, err := template.New("krew").Funcs(funcs).Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tpl.Execute(&out, map[string]string{"TagName": tag}); err != nil {
		t.Fatal(err)
	}
	var p plugin
	if err := yaml.UnmarshalStrict(out.Bytes(), &p); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "stsdiag" {
		t.Errorf("header %s %s %s", p.APIVersion, p.Kind, p.Metadata.Name)
	}
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(p.Spec.Version) || p.Spec.Version != tag {
		t.Errorf("version %q", p.Spec.Version)
	}
	if p.Spec.ShortDescription == "" || len(p.Spec.ShortDescription) > 50 || p.Spec.Homepage == "" || p.Spec.Description == "" {
		t.Errorf("descriptions %+v", p.Spec)
	}
	for _, role := range []string{"deploy/check-clusterrole.yaml", "deploy/fix-clusterrole.yaml", "deploy/confirm-clusterrole.yaml"} {
		if !strings.Contains(p.Spec.Caveats, role) {
			t.Errorf("caveats do not name %s", role)
		}
	}
	var got []string
	for _, pl := range p.Spec.Platforms {
		os, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		ext, bin := ".tar.gz", "kubectl-stsdiag"
		if os == "windows" {
			ext, bin = ".zip", "kubectl-stsdiag.exe"
		}
		// the goreleaser archive name_template, rendered
		want := "https://github.com/stsdiag/stsdiag/releases/download/" + tag + "/kubectl-stsdiag_" + tag + "_" + os + "_" + arch + ext
		if pl.URI != want || pl.Bin != bin || pl.Sha256 != sha {
			t.Errorf("%s/%s: uri %s bin %s sha %s, want %s %s", os, arch, pl.URI, pl.Bin, pl.Sha256, want, bin)
		}
		got = append(got, os+"/"+arch)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != "darwin/amd64 darwin/arm64 linux/amd64 linux/arm64 windows/amd64 windows/arm64" {
		t.Errorf("platforms %v", got)
	}
}

// TestDeployImage: deploy/watch runs the documented image, the one `make image` builds.
func TestDeployImage(t *testing.T) {
	deployment, err := os.ReadFile("../deploy/watch/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s+image: ` + regexp.QuoteMeta(image.DefaultRepository) + `\s`).Match(deployment) {
		t.Errorf("deploy/watch/deployment.yaml does not run %s", image.DefaultRepository)
	}
	var k struct {
		Images []struct{ Name, NewTag string } `json:"images"`
	}
	raw, err := os.ReadFile("../deploy/watch/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	if len(k.Images) != 1 || k.Images[0].Name != image.DefaultRepository || k.Images[0].NewTag == "" {
		t.Errorf("kustomization images %+v", k.Images)
	}
	makefile, _ := os.ReadFile("../Makefile")
	if !bytes.Contains(makefile, []byte("IMAGE ?= "+image.DefaultRepository+":")) {
		t.Errorf("make image does not build %s", image.DefaultRepository)
	}
}

func readStrict(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
