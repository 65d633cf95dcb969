package cmd

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// kubeconfigFor writes a kubeconfig whose contexts east and west (east current, namespace shop)
// point at server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+server+`"}}]
users: [{name: u, user: {token: t}}]
contexts:
- {name: east, context: {cluster: c, user: u, namespace: shop}}
- {name: west, context: {cluster: c, user: u, namespace: shop}}
current-context: east
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// configFlagsFor are kubeconfig flags reading path, as --kubeconfig path would set them.
func configFlagsFor(path string) *genericclioptions.ConfigFlags {
	flags := genericclioptions.NewConfigFlags(false)
	*flags.KubeConfig = path
	return flags
}
