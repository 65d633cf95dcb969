// Package report holds the findings stsdiag produces and the public report document (stsdiag/v1).
package report

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Severity orders findings; --fail-on compares against it.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Rank is higher for more severe findings.
func (s Severity) Rank() int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// Finding codes. They are public API: scripts and CI match on them.
const (
	StaleRevisionStuck       = "StaleRevisionStuck"
	CurrentRevisionFailing   = "CurrentRevisionFailing"
	OnDeleteStale            = "OnDeleteStale"
	VolumeClaimPending       = "VolumeClaimPending"
	PodUnschedulable         = "PodUnschedulable"
	OrphanedRevision         = "OrphanedRevision"
	StatefulSetTerminating   = "StatefulSetTerminating"
	UnresolvedImageReference = "UnresolvedImageReference"
	ImageStreamTagNotFound   = "ImageStreamTagNotFound"
	ImageLookupDisabled      = "ImageLookupDisabled"
	ImageResolutionSkipped   = "ImageResolutionSkipped"
)

// Finding is one reason a StatefulSet rollout will not finish, or a risk to it.
type Finding struct {
	Code          string         `json:"code"`
	Severity      Severity       `json:"severity"`
	Reason        string         `json:"reason,omitempty"`
	Namespace     string         `json:"namespace"`
	StatefulSet   string         `json:"statefulSet"`
	Pod           string         `json:"pod,omitempty"`
	Container     string         `json:"container,omitempty"`
	Image         string         `json:"image,omitempty"`
	ResolvedImage string         `json:"resolvedImage,omitempty"`
	Message       string         `json:"message"`
	Remedy        string         `json:"remedy,omitempty"`
	Details       map[string]any `json:"details,omitempty"`
	// Short is the message as the table shows it.
	Short string `json:"-"`
}

// Rollout states of a StatefulSet in the report.
const (
	StatusComplete    = "Complete"
	StatusProgressing = "Progressing"
	StatusStuck       = "Stuck"
	StatusTerminating = "Terminating"
)

// StatefulSetSummary is one StatefulSet in scope.
type StatefulSetSummary struct {
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	Replicas        int32  `json:"replicas"`
	ReadyReplicas   int32  `json:"readyReplicas"`
	CurrentRevision string `json:"currentRevision,omitempty"`
	UpdateRevision  string `json:"updateRevision,omitempty"`
	Status          string `json:"status"`
}

// Report is the document printed by -o json|yaml.
type Report struct {
	metav1.TypeMeta `json:",inline"`
	OpenShift       bool                 `json:"openshift"`
	StatefulSets    []StatefulSetSummary `json:"statefulSets"`
	Findings        []Finding            `json:"findings"`
	// Warnings are problems gathering optional data (e.g. no permission to list ImageStreams).
	Warnings []string `json:"warnings,omitempty"`
}

// GroupVersion of the report document.
var GroupVersion = schema.GroupVersion{Group: "stsdiag", Version: "v1"}

// New returns a report with the findings sorted: most severe first, then by namespace, set, pod.
func New(openshift bool, sets []StatefulSetSummary, findings []Finding) *Report {
	if sets == nil {
		sets = []StatefulSetSummary{}
	}
	if findings == nil {
		findings = []Finding{}
	}
	sort.SliceStable(sets, func(i, j int) bool {
		if sets[i].Namespace != sets[j].Namespace {
			return sets[i].Namespace < sets[j].Namespace
		}
		return sets[i].Name < sets[j].Name
	})
	SortFindings(findings)
	r := &Report{OpenShift: openshift, StatefulSets: sets, Findings: findings}
	r.SetGroupVersionKind(GroupVersion.WithKind("Report"))
	return r
}

// SortFindings orders findings by severity, namespace, StatefulSet, pod, code.
func SortFindings(f []Finding) {
	sort.SliceStable(f, func(i, j int) bool {
		a, b := f[i], f[j]
		if a.Severity.Rank() != b.Severity.Rank() {
			return a.Severity.Rank() > b.Severity.Rank()
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.StatefulSet != b.StatefulSet {
			return a.StatefulSet < b.StatefulSet
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Container < b.Container
	})
}

// Count returns how many findings are at or above the severity.
func (r *Report) Count(min Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity.Rank() >= min.Rank() {
			n++
		}
	}
	return n
}

// DeepCopyObject lets cli-runtime printers print the report.
func (r *Report) DeepCopyObject() runtime.Object {
	c := *r
	c.StatefulSets = append([]StatefulSetSummary(nil), r.StatefulSets...)
	c.Findings = make([]Finding, len(r.Findings))
	for i, f := range r.Findings {
		c.Findings[i] = f
		if f.Details != nil {
			c.Findings[i].Details = make(map[string]any, len(f.Details))
			for k, v := range f.Details {
				c.Findings[i].Details[k] = v
			}
		}
	}
	c.Warnings = append([]string(nil), r.Warnings...)
	return &c
}
