package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/migrate"
	"github.com/stsdiag/stsdiag/internal/render"
)

const twoSets = `apiVersion: v1
kind: Service
metadata: {name: web}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: shop}
spec: {podManagementPolicy: Parallel, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: other}
spec: {selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}}}
`

// TestMigrateBadInput: what migrate cannot run with is one line on stderr and exit 2, before any
// request.
func TestMigrateBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sets.yaml")
	if err := os.WriteFile(file, []byte(twoSets), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := kubeconfigFor(t, "http://127.0.0.1:1")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate"}, "name the StatefulSet"},
		{[]string{"migrate", "web", "--pod-management-policy", "Sometimes"}, `invalid --pod-management-policy "Sometimes"`},
		{[]string{"migrate", "web", "--claim-size", "data"}, `invalid --claim-size "data"`},
		{[]string{"migrate", "web", "--claim-size", "data=-1Gi"}, `invalid --claim-size "data=-1Gi"`},
		{[]string{"migrate", "web", "-f", file, "--pod-management-policy", "Parallel"}, "give the file, or the flags, not both"},
		{[]string{"migrate", "web", "--status", "--yes"}, "--status says where a migration stands"},
		{[]string{"migrate", "-f", file}, "holds 2 StatefulSets: name the one to migrate"},
		{[]string{"migrate", "cache", "-f", file}, "holds no StatefulSet cache"},
		{[]string{"migrate", "web", "-f", file, "-n", "prod"}, "the file's StatefulSet is in namespace shop, not prod (-n)"},
		{[]string{"migrate", "web", "-f", filepath.Join(dir, "missing.yaml")}, "reading"},
		{[]string{"migrate", "web", "--timeout", "0s", "--status"}, "invalid --timeout"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append(c.args, "--kubeconfig", kubeconfig), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			if code != ExitError || !strings.Contains(errOut.String(), c.want) || strings.Count(errOut.String(), "\n") != 1 || out.Len() != 0 {
				t.Errorf("exit %d\nstdout %q\nstderr %q\nwant one line with %q", code, out.String(), errOut.String(), c.want)
			}
		})
	}
}

// TestMigrateFileNamespace: the file's StatefulSet, its name and namespace when none is given.
func TestMigrateFileNamespace(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sets.yaml")
	if err := os.WriteFile(file, []byte(twoSets), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &migrateFlags{configFlags: configFlagsFor(kubeconfigFor(t, "http://127.0.0.1:1")), PrintFlags: render.NewPrintFlags(), Diagnosis: newDiagnosisFlags(),
		Filename: file, Timeout: 1}
	o, err := f.ToOptions([]string{"db"})
	if err != nil {
		t.Fatal(err)
	}
	if o.migrate.Name != "db" || o.migrate.Namespace != "other" || o.migrate.Desired == nil || o.migrate.Desired.Name != "db" {
		t.Errorf("options %+v", o.migrate)
	}
}

// TestMigrateExit: the exit code of each result.
func TestMigrateExit(t *testing.T) {
	for _, c := range []struct {
		result apiv1.MigrationOutcome
		err    error
		want   int
	}{
		{apiv1.Migrated, nil, ExitOK},
		{apiv1.NothingToMigrate, nil, ExitOK},
		{apiv1.MigrationPlanned, nil, ExitOK},
		{apiv1.MigrationNone, nil, ExitOK},
		{apiv1.MigrationRefused, nil, ExitFindings},
		{apiv1.MigrationIncomplete, nil, ExitFindings},
		{apiv1.MigrationInProgress, nil, ExitFindings},
		{apiv1.MigrationNotConfirmed, migrate.ErrNotConfirmed, ExitFindings},
		{apiv1.MigrationNotConfirmed, nil, ExitFindings},
		{apiv1.MigrationIncomplete, fmt.Errorf("deleting: %w", context.Canceled), ExitInterrupted},
		{apiv1.MigrationIncomplete, errors.New("forbidden"), ExitError},
	} {
		t.Run(fmt.Sprintf("%s/%v", c.result, c.err), func(t *testing.T) {
			if got, _ := exitCode(migrateExit(&apiv1.MigrationResult{Result: c.result}, c.err)); got != c.want {
				t.Errorf("exit %d, want %d", got, c.want)
			}
		})
	}
}
