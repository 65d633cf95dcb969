package fleet

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

func decodeReport(t *testing.T, stdout string) apiv1.Report {
	t.Helper()
	var rep apiv1.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("not a report: %v\n%s", err, stdout)
	}
	return rep
}

// memberErrors are the fleet's members that could not be checked, with their errors.
func memberErrors(rep apiv1.Report) map[string]string {
	out := map[string]string{}
	for _, m := range rep.Clusters {
		if m.Error != "" {
			out[m.Name] = m.Error
		}
	}
	return out
}

// TestCheckOverClusterProfiles: check -A over the hub's namespace fleet finds member a's stuck
// web and names its profile; member b's web (same namespace and name) is healthy; the profile
// whose server does not answer and the one whose credential the member refuses are each one
// error, named, that neither hides nor stops the others: exit 2, the report partial. The
// partitioned canary is not a finding, the OnDelete set only an info. Each member's exec plugin
// ran once, through client-go, with the profile's extensions.
func TestCheckOverClusterProfiles(t *testing.T) {
	t.Parallel()
	provePremise(context.Background(), t)
	r := stsdiagRun(t, "check", "-A", "--cluster-profiles", fleetNS, "--clusterprofile-provider-file", providerFile, "-o", "json", "--request-timeout", "10s")
	rep := decodeReport(t, r.Stdout)
	if r.Code != 2 || !strings.Contains(r.Stderr, "error: could not check clusterprofile(s) fleet/gone, fleet/unauthorized") {
		t.Errorf("exit %d, stderr %s: want 2 naming the two members that could not be checked", r.Code, r.Stderr)
	}
	var errs []string
	for _, f := range rep.Findings {
		if f.Severity == apiv1.SeverityError {
			errs = append(errs, f.Context+" "+f.Namespace+"/"+f.StatefulSet+" "+string(f.Code))
		}
	}
	if want := []string{"fleet/member-a shop/web StaleRevisionStuck"}; strings.Join(errs, ";") != strings.Join(want, ";") {
		t.Errorf("error findings %v, want %v", errs, want)
	}
	sets := map[string]apiv1.RolloutStatus{}
	for _, s := range rep.StatefulSets {
		sets[s.Context+" "+s.Namespace+"/"+s.Name] = s.Status
	}
	for set, want := range map[string]apiv1.RolloutStatus{"fleet/member-a shop/web": apiv1.StatusStuck, "fleet/member-b shop/web": apiv1.StatusComplete} {
		if sets[set] != want {
			t.Errorf("%s: %s, want %s (all: %v)", set, sets[set], want, sets)
		}
	}
	for _, f := range rep.Findings {
		if f.Context == "fleet/member-a" && (f.StatefulSet == "canary" || (f.StatefulSet == "cache" && f.Severity != apiv1.SeverityInfo)) {
			t.Errorf("a finding on the partitioned canary or above info on the OnDelete set: %+v", f)
		}
	}
	errors := memberErrors(rep)
	if !rep.Partial || len(rep.Clusters) != 4 || len(errors) != 2 ||
		!strings.Contains(errors["fleet/gone"], "127.0.0.1:1") || !strings.HasPrefix(errors["fleet/unauthorized"], "Unauthorized: "+memberB.APIServerURL()+" refused the credential of exec plugin ") {
		t.Errorf("partial %v, members %+v: want fleet/gone unreachable and fleet/unauthorized refused", rep.Partial, rep.Clusters)
	}
	if !strings.Contains(r.Stderr, "Warning: clusterprofile fleet/gone: ") || !strings.Contains(r.Stderr, "Warning: clusterprofile fleet/unauthorized: ") {
		t.Errorf("stderr does not warn about each member:\n%s", r.Stderr)
	}
	// One plugin run per member, through client-go's exec machinery (its credential then kept
	// for every request): for a twice (member-a, and gone, whose profile names a as well), for b
	// once; for nobody (unauthorized) once more, as client-go runs the plugin again after a 401
	// (plugin/pkg/client/auth/exec/exec.go:378-382@v0.35.4).
	if got := pluginCalls(t); len(got) != 3 || got["a"] != 2 || got["b"] != 1 || got["nobody"] != 2 {
		t.Errorf("plugin runs %v, want a:2 b:1 nobody:2", got)
	}

	table := stsdiagRun(t, "check", "-A", "--cluster-profiles", fleetNS, "--clusterprofile-provider-file", providerFile, "--request-timeout", "10s")
	if table.Code != 2 || !strings.Contains(table.Stdout, "fleet/member-a") || !strings.Contains(table.Stdout, "StaleRevisionStuck") {
		t.Errorf("table: exit %d\n%s", table.Code, table.Stdout)
	}
}

// TestClusterProfilesThatCannotWork: a plugin that fails, one that never answers, and a profile
// whose access provider the file does not know are one clear error each, the hanging one within
// the request timeout; over every namespace of the hub they sit beside the reachable members.
func TestClusterProfilesThatCannotWork(t *testing.T) {
	t.Parallel()
	start := time.Now()
	r := stsdiagRun(t, "check", "-A", "--cluster-profiles", brokenNS, "--clusterprofile-provider-file", providerFile, "-o", "json", "--request-timeout", "5s")
	took := time.Since(start)
	rep := decodeReport(t, r.Stdout)
	errors := memberErrors(rep)
	want := map[string][]string{
		"broken/plugin-fails": {"exec plugin ", "failing-plugin.sh", "failed with exit code 1"},
		"broken/plugin-hangs": {"no answer within 5s (exec plugin ", "hanging-plugin.sh"},
		"broken/no-provider":  {"no access provider of the profile is in the provider file (profile: e2e-unknown; file: e2e-token, e2e-failing, e2e-hanging)"},
	}
	if r.Code != 2 || !rep.Partial || len(errors) != 3 || len(rep.StatefulSets) != 0 {
		t.Errorf("exit %d partial %v members %+v sets %d: want exit 2 and three errors", r.Code, rep.Partial, rep.Clusters, len(rep.StatefulSets))
	}
	for name, parts := range want {
		for _, p := range parts {
			if !strings.Contains(errors[name], p) {
				t.Errorf("%s: error %q lacks %q", name, errors[name], p)
			}
		}
	}
	if !strings.Contains(r.Stderr, "failing-plugin: the identity provider refused the request") {
		t.Errorf("the failing plugin's own words are not on stderr:\n%s", r.Stderr)
	}
	if took > 25*time.Second {
		t.Errorf("took %s: the hanging plugin must cost the request timeout (5s), not hold the fleet", took)
	}

	all := stsdiagRun(t, "check", "-A", "--all-cluster-profiles", "--clusterprofile-provider-file", providerFile, "-o", "json", "--request-timeout", "5s")
	rep = decodeReport(t, all.Stdout)
	var names []string
	for _, m := range rep.Clusters {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	if all.Code != 2 || strings.Join(names, " ") != "broken/no-provider broken/plugin-fails broken/plugin-hangs fleet/gone fleet/member-a fleet/member-b fleet/unauthorized" ||
		len(memberErrors(rep)) != 5 || len(rep.Findings) == 0 {
		t.Errorf("--all-cluster-profiles: exit %d members %v errors %d findings %d", all.Code, names, len(memberErrors(rep)), len(rep.Findings))
	}
	if none := stsdiagRun(t, "check", "--cluster-profiles", "empty", "--clusterprofile-provider-file", providerFile); none.Code != 2 ||
		none.Stderr != "error: the hub holds no ClusterProfile in namespace empty\n" {
		t.Errorf("an empty namespace: exit %d %q", none.Code, none.Stderr)
	}
}

// TestWaitOverClusterProfiles: wait over the fleet's profiles stops as soon as member a's web is
// stuck, names the profile in its finding, and reports the unreachable and the unauthorized
// profiles as Unevaluable without either ending the others' waits: member b's web completes.
func TestWaitOverClusterProfiles(t *testing.T) {
	t.Parallel()
	provePremise(context.Background(), t)
	start := time.Now()
	r := stsdiagRun(t, "wait", "web", "-n", shop, "--cluster-profiles", fleetNS, "--clusterprofile-provider-file", providerFile,
		"--hold", "5s", "--timeout", "2m", "--request-timeout", "10s", "-o", "json")
	var res apiv1.WaitResult
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("not a wait result: %v\n%s", err, r.Stdout)
	}
	if r.Code != 2 || res.Result != apiv1.WaitUnevaluable {
		t.Errorf("exit %d result %s: want 2, Unevaluable (two members could not be evaluated)", r.Code, res.Result)
	}
	if len(res.Findings) != 1 || res.Findings[0].Context != "fleet/member-a" || res.Findings[0].Code != apiv1.StaleRevisionStuck || res.Findings[0].StatefulSet != "web" {
		t.Errorf("findings %+v: want member a's StaleRevisionStuck", res.Findings)
	}
	for _, part := range []string{"fleet/member-a: Stuck", "fleet/gone: Unevaluable", "fleet/unauthorized: Unevaluable"} {
		if !strings.Contains(res.Message, part) {
			t.Errorf("message %q lacks %q", res.Message, part)
		}
	}
	if strings.Contains(res.Message, "fleet/member-b") {
		t.Errorf("member b's web is complete; the message names it: %q", res.Message)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("took %s: stuck after --hold 5s should end it well before the 2m timeout", took)
	}
}
