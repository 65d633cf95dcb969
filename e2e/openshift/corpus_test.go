package openshift

// The differential oracle: a generated corpus of image references run through stsdiag's resolver
// (resolver: Admission.Admit and NamespaceSkipped, over the ImageStreams as the API
// returns them) and through the real ImagePolicy plugin (a server-side dry-run create of a probe
// object, which runs mutating admission, webhooks included, without persisting). Every reference
// must be written the same, byte for byte.
//
// Dimensions: reference shapes × stream states (none, no tag, tag with image, tag event without
// image, referencePolicy Source and Local) × lookup policy × resolve-names (none, on the template, on
// the object) × namespace (plain, run level 0, run level 2, the run-level-one name "openshift") ×
// owner (none, controller, not controller) × kind (StatefulSet, Pod), and UPDATEs of StatefulSets
// (resolve-names added, kept or removed; stored images kept or the manifest re-applied, where the
// plugin runs). Each probe object carries every shape of one stream, one container each: the
// plugin resolves each reference on its own (accept.go, decisions per reference), so one request
// checks 11 cases.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
	"github.com/stsdiag/stsdiag/resolver"
)

// corpusNamespace is one namespace of the corpus: its name and labels.
type corpusNamespace struct {
	name   string
	labels map[string]string
}

var corpusNamespaces = []corpusNamespace{
	{"oracle-plain", nil},
	{"oracle-rl0", map[string]string{"openshift.io/run-level": "0"}},
	{"oracle-rl2", map[string]string{"openshift.io/run-level": "2"}},
	{"openshift", nil}, // skipped by name (namespaceconditions' run-level-one names)
}

// streamState is one ImageStream set-up, created in every corpus namespace (lookup on and off).
type streamState struct {
	name  string // "" for no stream at all
	setup func(t *testing.T, ns, name string, lookup bool)
}

var streamStates = []streamState{
	{"none", nil},
	{"empty", func(t *testing.T, ns, name string, lookup bool) { stream(t, ns, name, lookup) }},
	{"pushed", func(t *testing.T, ns, name string, lookup bool) {
		stream(t, ns, name, lookup)
		push(t, ns, name, "v1", d1, registry+"/"+ns+"/"+name+"@"+d1)
		push(t, ns, name, "latest", d2, registry+"/"+ns+"/"+name+"@"+d2)
	}},
	{"refonly", func(t *testing.T, ns, name string, lookup bool) {
		stream(t, ns, name, lookup, imagev1.TagReference{Name: "v1", Reference: true,
			From: &corev1.ObjectReference{Kind: "DockerImage", Name: "quay.io/team/" + name + ":v1"}})
	}},
	{"source", func(t *testing.T, ns, name string, lookup bool) {
		stream(t, ns, name, lookup, imagev1.TagReference{Name: "v1", ReferencePolicy: imagev1.TagReferencePolicy{Type: imagev1.SourceTagReferencePolicy}})
		push(t, ns, name, "v1", d2, "quay.io/team/"+name+"@"+d2)
	}},
	{"local", func(t *testing.T, ns, name string, lookup bool) {
		stream(t, ns, name, lookup, imagev1.TagReference{Name: "v1", ReferencePolicy: imagev1.TagReferencePolicy{Type: imagev1.LocalTagReferencePolicy}})
		push(t, ns, name, "v1", d2, "quay.io/team/"+name+"@"+d2)
	}},
}

// shapes are the reference shapes, for stream name n in namespace ns.
var shapes = []struct {
	name string
	ref  func(ns, n string) string
}{
	{"name:tag", func(_, n string) string { return n + ":v1" }},
	{"name", func(_, n string) string { return n }},
	{"name:missing", func(_, n string) string { return n + ":missing" }},
	{"name@digest", func(_, n string) string { return n + "@" + d1 }},
	{"ns/name:tag", func(_, n string) string { return "team/" + n + ":v1" }},
	{"registry/ns/name:tag", func(_, n string) string { return "quay.io/team/" + n + ":v1" }},
	{"internal/ns/name:tag", func(ns, n string) string { return registry + "/" + ns + "/" + n + ":v1" }},
	{"dotted:tag", func(_, n string) string { return n + ".x:v1" }},
	{"ns/a/name:tag", func(_, n string) string { return "team/sub/" + n + ":v1" }},
	{"Upper-case ns/name:tag", func(_, n string) string { return "Team/" + n + ":v1" }},
	{"unparsable", func(_, n string) string { return strings.ToUpper(n) + ":v1" }},
}

// probe is one dry-run object of the corpus.
type probe struct {
	ns         corpusNamespace
	kind       string // "StatefulSet" or "Pod"
	annotation string // "", "template" or "object"
	owner      string // "", "controller" or "other"
	// stream is the stream every container of the probe refers to, in each shape.
	stream string
	// update, if set, makes the probe a dry-run UPDATE of a StatefulSet created (for real) with
	// resolve-names oldAnnotation: "keep" sends the stored images back, "reapply" the original
	// references (as re-applying the manifest does when the stored image differs).
	update, oldAnnotation string
}

// corpusCase is one reference in one probe.
type corpusCase struct {
	probe
	shape, image string
	// old is the stored image an UPDATE replaces.
	old string
}

func (c corpusCase) String() string {
	s := fmt.Sprintf("namespace=%s labels=%v kind=%s resolve-names=%q owner=%q stream=%s shape=%s image=%q",
		c.ns.name, c.ns.labels, c.kind, c.annotation, c.owner, c.stream, c.shape, c.image)
	if c.update != "" {
		s += fmt.Sprintf(" UPDATE(%s) of stored image %q with resolve-names %q", c.update, c.old, c.oldAnnotation)
	}
	return s
}

// corpusProbes are the probes, one per stream.
func corpusProbes() []probe {
	var out []probe
	for _, p := range probeKinds() {
		for _, s := range streamNames() {
			p.stream = s
			out = append(out, p)
		}
	}
	return out
}

func probeKinds() []probe {
	var out []probe
	for _, ns := range corpusNamespaces {
		for _, ann := range []string{"", "template", "object"} {
			out = append(out, probe{ns: ns, kind: "StatefulSet", annotation: ann})
		}
		for _, ann := range []string{"", "object"} {
			out = append(out, probe{ns: ns, kind: "Pod", annotation: ann})
		}
		for _, owner := range []string{"controller", "other"} {
			out = append(out, probe{ns: ns, kind: "StatefulSet", owner: owner})
			out = append(out, probe{ns: ns, kind: "Pod", owner: owner})
		}
		if ns.name != "oracle-plain" && ns.name != "oracle-rl2" {
			continue // UPDATEs where the plugin runs
		}
		for _, tr := range [][2]string{{"", ""}, {"", "template"}, {"template", "template"}, {"template", ""}} {
			for _, update := range []string{"keep", "reapply"} {
				out = append(out, probe{ns: ns, kind: "StatefulSet", oldAnnotation: tr[0], annotation: tr[1], update: update})
			}
		}
	}
	return out
}

// streamNames are the streams of every state, lookup on and off ("none" names no stream).
func streamNames() []string {
	var out []string
	for _, s := range streamStates {
		if s.setup == nil {
			out = append(out, s.name)
			continue
		}
		out = append(out, s.name+"-on", s.name+"-off")
	}
	return out
}

func TestAdmissionOracle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	for _, ns := range corpusNamespaces {
		namespace(t, ns.name, ns.labels)
	}
	// The stream states, once per namespace, namespaces in parallel.
	t.Run("streams", func(t *testing.T) {
		for _, ns := range corpusNamespaces {
			t.Run(ns.name, func(t *testing.T) {
				t.Parallel()
				for _, s := range streamStates {
					if s.setup != nil {
						s.setup(t, ns.name, s.name+"-on", true)
						s.setup(t, ns.name, s.name+"-off", false)
					}
				}
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	// stsdiag's view: the streams as the API returns them, as gather reads them.
	streams := map[string]*imagev1.ImageStream{}
	for _, ns := range corpusNamespaces {
		list, err := images.ImageV1().ImageStreams(ns.name).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			streams[ns.name+"/"+list.Items[i].Name] = &list.Items[i]
		}
	}
	adm := &resolver.Admission{Stream: func(ns, name string) *imagev1.ImageStream { return streams[ns+"/"+name] }}
	setup := time.Since(start)

	probes := corpusProbes()
	type outcome struct {
		cases    []corpusCase
		written  []string
		err      error
		duration time.Duration
	}
	results := make([]outcome, len(probes))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, p := range probes {
		wg.Add(1)
		go func(i int, p probe) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t0 := time.Now()
			cases, written, err := dryRun(ctx, i, p)
			results[i] = outcome{cases: cases, written: written, err: err, duration: time.Since(t0)}
		}(i, p)
	}
	wg.Wait()

	classes := map[string]int{}
	total, disagree := 0, 0
	for _, r := range results {
		if r.err != nil {
			t.Errorf("probe: %v", r.err)
			continue
		}
		for j, c := range r.cases {
			total++
			predicted, class := predict(adm, c)
			classes[class]++
			if predicted != r.written[j] {
				disagree++
				t.Errorf("DISAGREE %s\n\treal admission wrote %q\n\tstsdiag predicts    %q (%s)", c, r.written[j], predicted, class)
			}
		}
	}
	var names []string
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, c := range names {
		fmt.Fprintf(&b, "\n\t%-44s %4d", c, classes[c])
	}
	t.Logf("differential corpus: %d cases in %d dry-run probes (%d shapes each, %d streams), %d disagreements; "+
		"stream set-up %s, total %s; outcome classes (%d):%s",
		total, len(probes), len(shapes), len(streamNames()), disagree, setup.Round(100*time.Millisecond),
		time.Since(start).Round(100*time.Millisecond), len(classes), b.String())
	if total < 500 {
		t.Errorf("corpus has %d cases, want hundreds", total)
	}
}

// dryRun creates probe p (every stream × shape as one container) with dryRun=All and returns
// the cases and the image admission wrote for each.
func dryRun(ctx context.Context, i int, p probe) ([]corpusCase, []string, error) {
	var cases []corpusCase
	var containers []corev1.Container
	for _, sh := range shapes {
		img := sh.ref(p.ns.name, p.stream)
		cases = append(cases, corpusCase{probe: p, shape: sh.name, image: img})
		containers = append(containers, corev1.Container{Name: fmt.Sprintf("c%d", len(containers)), Image: img})
	}
	meta := metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", i), Namespace: p.ns.name, Labels: map[string]string{"app": "probe"}}
	if p.annotation == "object" {
		meta.Annotations = map[string]string{resolver.ResolveNamesAnnotation: "*"}
	}
	if p.owner != "" {
		meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: "e2e.stsdiag.io/v1", Kind: "Owner", Name: "operator",
			UID: "0b7e5e4c-0000-4000-8000-000000000001", Controller: ptr.To(p.owner == "controller")}}
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var got []corev1.Container
	switch {
	case p.update != "":
		set := scenario.StatefulSet(p.ns.name, meta.Name, "unused", 0, false)
		set.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}}
		set.Spec.Template.Labels = map[string]string{"app": "probe"}
		set.Spec.Template.Spec.Containers = containers
		if p.oldAnnotation == "template" {
			set.Spec.Template.Annotations = map[string]string{resolver.ResolveNamesAnnotation: "*"}
		}
		stored, err := cs.AppsV1().StatefulSets(p.ns.name).Create(ctx, set, metav1.CreateOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("%+v: %w", p, err)
		}
		for j := range cases {
			cases[j].old = stored.Spec.Template.Spec.Containers[j].Image
			if p.update == "keep" {
				cases[j].image = cases[j].old
			}
		}
		// The controller writes the status meanwhile: on a conflict, again on the latest object.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			latest, err := cs.AppsV1().StatefulSets(p.ns.name).Get(ctx, meta.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			latest.Spec.Template.Annotations = nil
			if p.annotation == "template" {
				latest.Spec.Template.Annotations = map[string]string{resolver.ResolveNamesAnnotation: "*"}
			}
			for j := range cases {
				latest.Spec.Template.Spec.Containers[j].Image = cases[j].image
			}
			updated, err := cs.AppsV1().StatefulSets(p.ns.name).Update(ctx, latest, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				got = updated.Spec.Template.Spec.Containers
			}
			return err
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%+v: %w", p, err)
		}
	case p.kind == "StatefulSet":
		set := scenario.StatefulSet(p.ns.name, meta.Name, "unused", 1, false)
		set.ObjectMeta = meta
		set.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}}
		set.Spec.Template.Labels = map[string]string{"app": "probe"}
		set.Spec.Template.Spec.Containers = containers
		if p.annotation == "template" {
			set.Spec.Template.Annotations = map[string]string{resolver.ResolveNamesAnnotation: "*"}
		}
		created, err := cs.AppsV1().StatefulSets(p.ns.name).Create(ctx, set, dry)
		if err != nil {
			return nil, nil, fmt.Errorf("%+v: %w", p, err)
		}
		got = created.Spec.Template.Spec.Containers
	case p.kind == "Pod":
		pod := &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{Containers: containers}}
		created, err := cs.CoreV1().Pods(p.ns.name).Create(ctx, pod, dry)
		if err != nil {
			return nil, nil, fmt.Errorf("%+v: %w", p, err)
		}
		got = created.Spec.Containers
	}
	if len(got) != len(cases) {
		return nil, nil, fmt.Errorf("%+v: %d containers came back, sent %d", p, len(got), len(cases))
	}
	written := make([]string, len(got))
	for j := range got {
		written[j] = got[j].Image
	}
	return cases, written, nil
}

// predict is what stsdiag's resolver says admission writes for c, and the outcome class.
func predict(adm *resolver.Admission, c corpusCase) (string, string) {
	if skipped, level := resolver.NamespaceSkipped(c.ns.name, c.ns.labels); skipped {
		if level != "" {
			return c.image, "skipped: run level " + level
		}
		return c.image, "skipped: namespace name"
	}
	gr := schema.GroupResource{Resource: "pods"}
	if c.kind == "StatefulSet" {
		gr = schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	}
	forced := c.annotation != ""
	req := resolver.Request{Namespace: c.ns.name, Resource: gr, ControllerOwned: c.owner == "controller", Image: c.image, Forced: forced}
	if c.update != "" {
		req.Update, req.OldImage, req.HasOld, req.OldForced = true, c.old, true, c.oldAnnotation != ""
	}
	written := adm.Admit(req)
	if c.owner == "controller" {
		return written, "skipped: controller owner"
	}
	if c.update != "" && req.Forced == req.OldForced && req.OldImage == req.Image {
		return written, "UPDATE, same image: not re-resolved"
	}
	res := adm.Resolve(c.image, c.ns.name, forced)
	class := string(res.Outcome)
	if c.update != "" {
		class = "UPDATE " + class
	}
	switch {
	case written == c.image:
		class += " → unchanged"
	case strings.Contains(written, "@"):
		class += " → digest"
	default:
		class += " → tag"
	}
	return written, class
}
