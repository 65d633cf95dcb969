// Package fleet is the suite of fleets on three real control planes (make e2e-fleet): a hub with
// the ClusterProfile API (multicluster.x-k8s.io, testdata/clusterprofile-crd.yaml) whose profiles
// name two members and clusters that cannot be reached, and the members themselves, each
// scraped by a Prometheus of its own (Debian's package) with external_labels {cluster: …} and
// federated by a global one that evaluates the shipped multi-cluster alerts.
//
// The members hold, in namespace shop: on a, kubernetes#67250 (web: web-0 of the old revision
// in ImagePullBackOff, never replaced), a canary held at its partition (canary: 1 of 3 pods on
// the new revision, all Ready) and an OnDelete set whose pods nobody deleted yet (cache); on b,
// web healthy — the same namespace and name as a's stuck one.
package fleet

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

var (
	// hub holds the ClusterProfiles; a and b are the members.
	hub, memberA, memberB *cluster.Cluster
	// stsdiag is the binary under test, binDir its directory.
	stsdiag, binDir string
	// providerFile is the ClusterProfile provider file; pluginDir holds the exec plugins and the
	// members' tokens (and calls, one line per plugin run: the member it ran for).
	providerFile, pluginDir string
	logDir                  string
)

// Namespaces of the hub: fleet holds the reachable members and two that are not; broken holds
// profiles whose plugin fails, hangs, or whose provider the file does not know.
const (
	fleetNS  = "fleet"
	brokenNS = "broken"
	shop     = "shop"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	start := time.Now()
	var err error
	if binDir, err = os.MkdirTemp("", "stsdiag-e2e-fleet-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	if stsdiag, err = harness.Build(binDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logDir, _ = filepath.Abs(filepath.Join("..", "_artifacts", "fleet"))
	_ = os.RemoveAll(logDir)
	hub = cluster.New(filepath.Join(logDir, "hub"))
	hub.APIServerOnly = true
	memberA, memberB = cluster.New(filepath.Join(logDir, "a")), cluster.New(filepath.Join(logDir, "b"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The three control planes start together.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, c := range []*cluster.Cluster{hub, memberA, memberB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, errs[i] = c.Create(ctx); errs[i] == nil && c != hub {
				errs[i] = c.WaitForControlPlane(ctx, nil)
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range []*cluster.Cluster{hub, memberA, memberB} {
			_ = c.Destroy(context.Background())
		}
	}()
	for _, err := range errs {
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e-fleet: control planes: %v (logs: %s)\n", err, logDir)
			return 1
		}
	}
	fmt.Fprintf(os.Stderr, "e2e-fleet: three control planes ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	if err := setUp(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "e2e-fleet: setup: %v (logs: %s)\n", err, logDir)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e-fleet: members' StatefulSets and the hub's ClusterProfiles ready at %s\n", time.Since(start).Round(100*time.Millisecond))
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e-fleet: FAILED; control plane logs are in %s\n", logDir)
	}
	fmt.Fprintf(os.Stderr, "e2e-fleet: suite took %s\n", time.Since(start).Round(100*time.Millisecond))
	return code
}

// setUp creates the members' StatefulSets, a read-only identity on each member for the fleet
// (its token is what the exec plugin hands out), and on the hub the ClusterProfile API, the
// profiles and the provider file.
func setUp(ctx context.Context) error {
	var err error
	if pluginDir, err = os.MkdirTemp("", "stsdiag-e2e-fleet-plugins-"); err != nil {
		return err
	}
	errs := make(chan error, 2)
	go func() { errs <- memberAObjects(ctx) }()
	go func() { errs <- memberBObjects(ctx) }()
	for range 2 {
		if err := <-errs; err != nil {
			return err
		}
	}
	for name, c := range map[string]*cluster.Cluster{"a": memberA, "b": memberB} {
		token, err := fleetToken(ctx, c)
		if err != nil {
			return fmt.Errorf("member %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(pluginDir, name), []byte(token), 0o600); err != nil {
			return err
		}
	}
	if err := writePlugins(); err != nil {
		return err
	}
	return hubProfiles(ctx)
}

// memberAObjects: web stuck (kubernetes#67250), canary held at its partition, cache OnDelete
// with its pods not deleted.
func memberAObjects(ctx context.Context) error {
	cs, err := memberA.Clientset()
	if err != nil {
		return err
	}
	if err := scenario.Namespace(ctx, cs, shop); err != nil {
		return err
	}
	canary := scenario.StatefulSet(shop, "canary", scenario.GoodImage, 3, false)
	cache := scenario.StatefulSet(shop, "cache", scenario.GoodImage, 2, false)
	cache.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	for _, set := range []*appsv1.StatefulSet{canary, cache} {
		if _, err := cs.AppsV1().StatefulSets(shop).Create(ctx, set, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if err := scenario.StuckRollout(ctx, cs, shop, "web", 3); err != nil {
		return err
	}
	for _, name := range []string{"canary", "cache"} {
		if err := scenario.WaitRolloutComplete(ctx, cs, shop, name, 2*time.Minute); err != nil {
			return err
		}
	}
	// The canary: partition 2 of 3, a new (good) image: canary-2 alone moves to it.
	set, err := cs.AppsV1().StatefulSets(shop).Get(ctx, "canary", metav1.GetOptions{})
	if err != nil {
		return err
	}
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
	set.Spec.Template.Spec.Containers[0].Image = canaryImage
	if _, err := cs.AppsV1().StatefulSets(shop).Update(ctx, set, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if err := scenario.SetImage(ctx, cs, shop, "cache", canaryImage); err != nil {
		return err
	}
	for _, name := range []string{"canary", "cache"} {
		if err := scenario.WaitObserved(ctx, cs, shop, name); err != nil {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		set, err := cs.AppsV1().StatefulSets(shop).Get(ctx, "canary", metav1.GetOptions{})
		return err == nil && set.Status.UpdatedReplicas == 1 && set.Status.ReadyReplicas == 3, nil
	})
}

// canaryImage is the canary's and cache's new template: an image the simulated registry has.
const canaryImage = "registry.k8s.io/nginx-slim:0.28"

// memberBObjects: web healthy, as a's stuck web is named.
func memberBObjects(ctx context.Context) error {
	cs, err := memberB.Clientset()
	if err != nil {
		return err
	}
	if err := scenario.Namespace(ctx, cs, shop); err != nil {
		return err
	}
	if _, err := cs.AppsV1().StatefulSets(shop).Create(ctx, scenario.StatefulSet(shop, "web", scenario.GoodImage, 2, false), metav1.CreateOptions{}); err != nil {
		return err
	}
	return scenario.WaitRolloutComplete(ctx, cs, shop, "web", 2*time.Minute)
}

// fleetToken is the token of ServiceAccount stsdiag/fleet, bound to deploy/check-clusterrole.yaml
// (what check reads) and the built-in view role (the watches wait holds): the identity a fleet
// controller's exec plugin would obtain for this member.
func fleetToken(ctx context.Context, c *cluster.Cluster) (string, error) {
	cs, err := c.Clientset()
	if err != nil {
		return "", err
	}
	objs, err := harness.Decode("../../deploy/check-clusterrole.yaml")
	if err != nil {
		return "", err
	}
	if err := harness.Apply(ctx, c.KubernetesRestConfig(), objs); err != nil {
		return "", err
	}
	if err := scenario.Namespace(ctx, cs, "stsdiag"); err != nil {
		return "", err
	}
	if _, err := cs.CoreV1().ServiceAccounts("stsdiag").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	for _, role := range []string{"stsdiag-check", "view"} {
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "stsdiag", Name: "fleet"}}}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return "", err
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts("stsdiag").CreateToken(ctx, "fleet",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// writePlugins writes the exec credential plugins and the provider file. The token plugin hands
// out the token of the member that the profile's client.authentication.k8s.io/exec extension
// names (spec.cluster.config, provideClusterInfo), and checks that the profile's additional-envs
// extension gave it STSDIAG_E2E_MEMBER for the same member (policy AppendIfNotExists); a member
// it has no token for gets one the API server refuses.
func writePlugins() error {
	files := map[string]string{
		"token-plugin.sh": `#!/bin/sh
member=$(printf '%s' "$KUBERNETES_EXEC_INFO" | sed -n 's/.*"member":"\([a-z-]*\)".*/\1/p')
[ -n "$member" ] || { echo "token-plugin: no member in KUBERNETES_EXEC_INFO: $KUBERNETES_EXEC_INFO" >&2; exit 1; }
[ "$STSDIAG_E2E_MEMBER" = "$member" ] || { echo "token-plugin: STSDIAG_E2E_MEMBER=$STSDIAG_E2E_MEMBER, want $member" >&2; exit 1; }
echo "${STSDIAG_E2E_RUN:-none} $member" >> "$TOKENS_DIR/calls"
token=$(cat "$TOKENS_DIR/$member" 2>/dev/null || echo not-a-token)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "$token"
`,
		"failing-plugin.sh": "#!/bin/sh\necho 'failing-plugin: the identity provider refused the request' >&2\nexit 1\n",
		"hanging-plugin.sh": "#!/bin/sh\nexec sleep 20\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(pluginDir, name), []byte(content), 0o755); err != nil {
			return err
		}
	}
	providerFile = filepath.Join(pluginDir, "clusterprofile-provider-file.json")
	providers := fmt.Sprintf(`{
  "providers": [
    {"name": "e2e-token", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": %q,
      "env": [{"name": "TOKENS_DIR", "value": %q}], "provideClusterInfo": true},
     "profileSourcedEnvVarsPolicy": "AppendIfNotExists"},
    {"name": "e2e-failing", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": %q}},
    {"name": "e2e-hanging", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": %q}}
  ]
}
`, filepath.Join(pluginDir, "token-plugin.sh"), pluginDir, filepath.Join(pluginDir, "failing-plugin.sh"), filepath.Join(pluginDir, "hanging-plugin.sh"))
	return os.WriteFile(providerFile, []byte(providers), 0o644)
}

var profilesGVR = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "clusterprofiles"}

// profile is one ClusterProfile to create on the hub.
type profile struct {
	namespace, name, provider, server string
	ca                                []byte
	// member is what the exec extension and the additional-envs extension name.
	member string
}

// hubProfiles installs the ClusterProfile API on the hub and creates the profiles, their
// status (accessProviders) written through the status subresource as a cluster manager does.
func hubProfiles(ctx context.Context) error {
	objs, err := harness.Decode("testdata/clusterprofile-crd.yaml")
	if err != nil {
		return err
	}
	if err := harness.Apply(ctx, hub.KubernetesRestConfig(), objs); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(hub.KubernetesRestConfig())
	if err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(profilesGVR).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("the ClusterProfile API is not served: %w", err)
	}
	hubCS, err := hub.Clientset()
	if err != nil {
		return err
	}
	for _, ns := range []string{fleetNS, brokenNS} {
		if _, err := hubCS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	caA, err := memberA.ServingCA()
	if err != nil {
		return err
	}
	caB, err := memberB.ServingCA()
	if err != nil {
		return err
	}
	for _, p := range []profile{
		{fleetNS, "member-a", "e2e-token", memberA.APIServerURL(), caA, "a"},
		{fleetNS, "member-b", "e2e-token", memberB.APIServerURL(), caB, "b"},
		// Nothing listens there.
		{fleetNS, "gone", "e2e-token", "https://127.0.0.1:1", caA, "a"},
		// b's server, but a member the plugin has no token for: 401.
		{fleetNS, "unauthorized", "e2e-token", memberB.APIServerURL(), caB, "nobody"},
		{brokenNS, "plugin-fails", "e2e-failing", memberA.APIServerURL(), caA, "a"},
		{brokenNS, "plugin-hangs", "e2e-hanging", memberA.APIServerURL(), caA, "a"},
		{brokenNS, "no-provider", "e2e-unknown", memberA.APIServerURL(), caA, "a"},
	} {
		if err := createProfile(ctx, dyn, p); err != nil {
			return fmt.Errorf("ClusterProfile %s/%s: %w", p.namespace, p.name, err)
		}
	}
	return nil
}

func createProfile(ctx context.Context, dyn dynamic.Interface, p profile) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
		"metadata": map[string]any{"name": p.name, "namespace": p.namespace, "labels": map[string]any{"x-k8s.io/cluster-manager": "e2e"}},
		"spec":     map[string]any{"displayName": p.name, "clusterManager": map[string]any{"name": "e2e"}},
	}}
	created, err := dyn.Resource(profilesGVR).Namespace(p.namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Object["status"] = map[string]any{"accessProviders": []any{map[string]any{
		"name": p.provider,
		"cluster": map[string]any{
			"server": p.server, "certificate-authority-data": base64.StdEncoding.EncodeToString(p.ca),
			"extensions": []any{
				map[string]any{"name": "client.authentication.k8s.io/exec", "extension": map[string]any{"member": p.member}},
				map[string]any{"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs", "extension": map[string]any{"STSDIAG_E2E_MEMBER": p.member}},
			},
		},
	}}}
	_, err = dyn.Resource(profilesGVR).Namespace(p.namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// stsdiagRun runs the binary with the hub's kubeconfig; the test's name goes to the exec plugin
// (its environment is stsdiag's) so that pluginCalls counts this test's runs.
func stsdiagRun(t *testing.T, args ...string) harness.Result {
	t.Helper()
	return harness.Run(t, hubKubeconfig(t), binDir, []string{"STSDIAG_E2E_RUN=" + t.Name()}, stsdiag, args...)
}

// hubKubeconfig is the hub's admin kubeconfig: the current context is the hub.
func hubKubeconfig(t *testing.T) string {
	t.Helper()
	return hub.GetKubeconfig()
}

// memberClientset is an admin client of a member.
func memberClientset(t *testing.T, c *cluster.Cluster) kubernetes.Interface {
	t.Helper()
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// pluginCalls counts the token plugin's runs per member for the test's commands so far.
func pluginCalls(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pluginDir, "calls"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		if run, member, ok := strings.Cut(line, " "); ok && run == t.Name() {
			out[member]++
		}
	}
	return out
}

// provePremise proves once, on member a's real controller, what every test here relies on: web
// does not move for 30 s (kubernetes#67250), and all that time canary and cache keep the status
// the mixin's KubeStatefulSetUpdateNotRolledOut reads as not rolled out — a current revision
// other than the update revision, fewer updated replicas than replicas, no progress — with
// every pod Ready.
func provePremise(ctx context.Context, t *testing.T) {
	t.Helper()
	premiseOnce.Do(func() {
		premiseFailed = true
		cs := memberClientset(t, memberA)
		statuses := make(chan error, 1)
		go func() {
			// What kube-state-metrics exports of the status and the mixin's alert reads.
			type read struct {
				current, update          string
				replicas, updated, ready int32
			}
			var first map[string]read
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
				now := map[string]read{}
				for name, updated := range map[string]int32{"canary": 1, "cache": 0} {
					set, err := cs.AppsV1().StatefulSets(shop).Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						statuses <- err
						return
					}
					st := set.Status
					if st.CurrentRevision == st.UpdateRevision || st.UpdatedReplicas != updated || st.ReadyReplicas != *set.Spec.Replicas {
						statuses <- fmt.Errorf("%s: status %+v: not a rollout the mixin reads as not rolled out", name, st)
						return
					}
					now[name] = read{st.CurrentRevision, st.UpdateRevision, *set.Spec.Replicas, st.UpdatedReplicas, st.ReadyReplicas}
				}
				if first == nil {
					first = now
				} else if !maps.Equal(now, first) {
					statuses <- fmt.Errorf("the statuses moved: %+v → %+v", first, now)
					return
				}
			}
			statuses <- nil
		}()
		harness.ProvenStuck(ctx, t, cs, shop, "web", 30*time.Second)
		if err := <-statuses; err != nil {
			t.Fatalf("the premise does not hold on member a: %v", err)
		}
		premiseFailed = false
	})
	if premiseFailed {
		t.Fatal("the premise did not hold on member a (see the test that proved it)")
	}
}

var (
	premiseOnce   sync.Once
	premiseFailed bool
)
