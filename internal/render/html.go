package render

import (
	_ "embed"
	"html/template"
	"io"
	"strings"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/text"
)

// FormatHTML is one self-contained page (check -o html, explain -o html): no network, inline
// CSS and a few lines of inline JS that add the copy buttons.
const FormatHTML = "html"

//go:embed html.tmpl
var htmlSource string

// html/template escapes every value for its context: a message or image is text, never markup.
var htmlTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"lower": strings.ToLower}).Parse(htmlSource))

// htmlPage is what the template draws; every string in it is plain text.
type htmlPage struct {
	Title     string
	Generated string
	Summary   string
	Server    *apiv1.ServerInfo
	Warnings  []string
	Sets      []htmlSet
}

type htmlSet struct {
	Context, Namespace, Name string
	Status                   string
	Replicas, Ready          int32
	// Described is false when no explanation was computed for the set (several clusters):
	// the page then shows the report's counts, not ordinals.
	Described                       bool
	Policy, Strategy                string
	Partition, MinReadySeconds      int32
	CurrentRevision, UpdateRevision string
	TemplateChanges                 []string
	Ordinals                        []htmlOrdinal
	Verdict                         string
	Findings                        []htmlFinding
	ExplainCommand                  string
}

type htmlOrdinal struct {
	Ordinal                 int32
	Pod, Revision, RevShort string
	// RevClass is update (the revision the controller rolls to), current (the one it rolls
	// from), other (neither) or none (no pod).
	RevClass string
	// RevLabel says the class in words (colour is not the only cue).
	RevLabel   string
	State      string
	StateClass string
	Next       string
	Holds      bool
	Waiting    string
	Why        string
}

type htmlFinding struct {
	Severity, Code, Reason, Pod, Container, Image, Message, Remedy string
	// Logs are the previous run's last lines check --logs read.
	Logs []string
}

// ReportHTML writes check's report as a page. explanations (by "namespace/name", from the same
// diagnosis) give each set its ordinals; a set without one shows the report's counts only.
func ReportHTML(w io.Writer, r *model.Report, explanations map[string]*apiv1.Explanation, now time.Time) error {
	cli := "kubectl"
	if r.OpenShift {
		cli = "oc"
	}
	page := htmlPage{Title: "stsdiag check", Generated: now.UTC().Format(time.RFC3339), Summary: Summary(r), Server: r.Server, Warnings: r.Warnings}
	for _, s := range r.StatefulSets {
		set := htmlSet{Context: s.Context, Namespace: s.Namespace, Name: s.Name, Status: string(s.Status), Replicas: s.Replicas, Ready: s.ReadyReplicas,
			CurrentRevision: s.CurrentRevision, UpdateRevision: s.UpdateRevision, ExplainCommand: explainCommand(cli, s.Context, s.Namespace, s.Name)}
		if e := explanations[s.Namespace+"/"+s.Name]; e != nil && s.Context == "" {
			describe(&set, e, now)
		}
		for _, f := range r.Findings {
			if f.Context == s.Context && f.Namespace == s.Namespace && f.StatefulSet == s.Name {
				set.Findings = append(set.Findings, htmlFindingOf(f.Finding))
			}
		}
		page.Sets = append(page.Sets, set)
	}
	return htmlTemplate.Execute(w, page)
}

// ExplanationHTML writes explain's document as a page of one StatefulSet.
func ExplanationHTML(w io.Writer, e *apiv1.Explanation, now time.Time) error {
	set := htmlSet{Context: e.Context, Namespace: e.Namespace, Name: e.StatefulSet, Status: string(e.Status), Replicas: e.Replicas}
	describe(&set, e, now)
	for _, o := range e.Ordinals {
		if o.State == "Ready" || o.State == "Available" {
			set.Ready++
		}
	}
	for _, f := range e.Findings {
		set.Findings = append(set.Findings, htmlFindingOf(f))
	}
	page := htmlPage{Title: "stsdiag explain " + e.Namespace + "/" + e.StatefulSet, Generated: now.UTC().Format(time.RFC3339),
		Summary: set.Verdict, Server: e.Server, Sets: []htmlSet{set}}
	return htmlTemplate.Execute(w, page)
}

// describe fills a set's row of ordinals from its explanation.
func describe(set *htmlSet, e *apiv1.Explanation, now time.Time) {
	set.Described = true
	set.Policy, set.Strategy, set.Partition, set.MinReadySeconds = e.PodManagementPolicy, e.UpdateStrategy, e.Partition, e.MinReadySeconds
	set.CurrentRevision, set.UpdateRevision, set.TemplateChanges = e.CurrentRevision, e.UpdateRevision, e.TemplateChanges
	var holding []string
	for _, o := range e.Ordinals {
		h := htmlOrdinal{Ordinal: o.Ordinal, Pod: o.Pod, Revision: o.Revision, RevShort: revShort(o.Revision), State: o.State,
			StateClass: strings.ToLower(o.State), Holds: o.Holds, Why: text.OneLine(o.Why), Next: nextWords[o.Next]}
		if h.Next == "" {
			h.Next = o.Next
		}
		switch {
		case o.Revision == "":
			h.RevClass = "none"
		case o.Revision == e.UpdateRevision:
			h.RevClass, h.RevLabel = "update", "update"
		case o.Revision == e.CurrentRevision:
			h.RevClass, h.RevLabel = "current", "old"
		default:
			h.RevClass, h.RevLabel = "other", "other"
		}
		if o.Holds {
			holding = append(holding, o.Pod)
			if o.Since != nil {
				h.Waiting = now.Sub(o.Since.Time).Round(time.Second).String()
			}
		}
		set.Ordinals = append(set.Ordinals, h)
	}
	set.Verdict = verdict(e, holding)

}

func htmlFindingOf(f apiv1.Finding) htmlFinding {
	return htmlFinding{Severity: string(f.Severity), Code: string(f.Code), Reason: f.Reason, Pod: f.Pod, Container: f.Container,
		Image: f.Image, Message: text.OneLine(f.Message), Remedy: text.OneLine(f.Remedy), Logs: f.Details.Logs}
}

func explainCommand(cli, context, namespace, name string) string {
	cmd := cli + " stsdiag explain " + name + " -n " + namespace
	if context != "" {
		cmd += " --context " + context
	}
	return cmd
}

// revShort is the hash a ControllerRevision's name ends with (web-7d9f8c → 7d9f8c).
func revShort(rev string) string {
	if i := strings.LastIndex(rev, "-"); i >= 0 && i < len(rev)-1 {
		return rev[i+1:]
	}
	return rev
}
