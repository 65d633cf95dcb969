package report

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Verdicts of `wait`.
const (
	WaitComplete = "Complete"
	WaitStuck    = "Stuck"
	WaitTimedOut = "TimedOut"
	WaitNotFound = "NotFound"
)

// WaitResult is the document printed by `wait -o json`. Actions holds repairs made with --fix
// (any JSON-encodable action type).
type WaitResult struct {
	metav1.TypeMeta `json:",inline"`
	Result          string               `json:"result"`
	Elapsed         string               `json:"elapsed"`
	Message         string               `json:"message,omitempty"`
	StatefulSets    []StatefulSetSummary `json:"statefulSets"`
	Findings        []Finding            `json:"findings"`
	Actions         any                  `json:"actions,omitempty"`
}

// DeepCopyObject lets cli-runtime printers print the result.
func (r *WaitResult) DeepCopyObject() runtime.Object {
	c := *r
	c.StatefulSets = append([]StatefulSetSummary(nil), r.StatefulSets...)
	c.Findings = append([]Finding(nil), r.Findings...)
	return &c
}

// Blocking reports whether a finding keeps a rollout from completing: every error, a tag not
// imported yet, and an orphan pod holding an ordinal's name.
func Blocking(f Finding) bool {
	return f.Severity == SeverityError || f.Code == ImageStreamTagNotFound ||
		(f.Code == OrphanedRevision && f.Pod != "")
}

// FindingKey identifies a finding across diagnoses.
func FindingKey(f Finding) string {
	return strings.Join([]string{f.Code, f.Namespace, f.StatefulSet, f.Pod, f.Container, f.Image}, "/")
}

func key(namespace, name string) string { return namespace + "/" + name }
