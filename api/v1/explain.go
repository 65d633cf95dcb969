package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Explanation is the document `explain -o json|yaml` prints (kind Explanation): the StatefulSet
// controller's view of one StatefulSet — the rules applied, the revisions, and per ordinal what
// the controller does next and what keeps it from doing so. It comes from the same model as
// check's findings, which it carries.
type Explanation struct {
	metav1.TypeMeta `json:",inline"`
	// Context is the kubeconfig context, when one was named.
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace"`
	// StatefulSet is its name.
	StatefulSet string `json:"statefulSet"`
	// Server is the release whose controller rules the steps follow.
	Server *ServerInfo `json:"server,omitempty"`
	// PodManagementPolicy and UpdateStrategy as the controller reads them (defaults filled in).
	PodManagementPolicy string `json:"podManagementPolicy"`
	UpdateStrategy      string `json:"updateStrategy"`
	// Replicas is spec.replicas; Partition the rolling update's partition; MinReadySeconds
	// spec.minReadySeconds.
	Replicas        int32 `json:"replicas"`
	Partition       int32 `json:"partition,omitempty"`
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// CurrentRevision and UpdateRevision are the controller's revisions.
	CurrentRevision string `json:"currentRevision,omitempty"`
	UpdateRevision  string `json:"updateRevision,omitempty"`
	// TemplateChanges are the fields the update revision changes, "path: from → to".
	TemplateChanges []string `json:"templateChanges,omitempty"`
	// Status is the rollout's state, as check reports it.
	Status RolloutStatus `json:"status"`
	// Ordinals are spec.replicas ordinals, then the pods beyond them (scale down), lowest first.
	Ordinals []OrdinalStep `json:"ordinals"`
	// Findings are check's findings about this StatefulSet.
	Findings []Finding `json:"findings"`
}

// Next steps of the controller for one ordinal.
const (
	StepNothing           = "Nothing"
	StepCreate            = "Create"
	StepRecreateTerminal  = "RecreateTerminal"
	StepWaitRunning       = "WaitRunning"
	StepWaitReady         = "WaitReady"
	StepWaitAvailable     = "WaitAvailable"
	StepWaitTerminated    = "WaitTerminated"
	StepDeleteToUpdate    = "DeleteToUpdate"
	StepDeleteToScaleDown = "DeleteToScaleDown"
	StepWaitManualDelete  = "WaitManualDelete"
	StepNotReached        = "NotReached"
)

// OrdinalStep is one ordinal as the controller sees it.
type OrdinalStep struct {
	Ordinal int32 `json:"ordinal"`
	// Pod is the pod's name, whether or not it exists.
	Pod string `json:"pod"`
	// State is Missing, Pending, Running, Ready, Available, Terminating, Failed or Succeeded.
	State string `json:"state"`
	// Revision is the pod's revision; TargetRevision the one the controller creates it from.
	Revision       string `json:"revision,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
	// Next is what the controller does next here (one of the Step constants).
	Next string `json:"next"`
	// Holds marks the ordinal the controller stops at (OrderedReady), or whose own wait keeps
	// the rollout from finishing.
	Holds bool `json:"holds,omitempty"`
	// Since is when the wait (or the missing pod) began, as far as the objects tell.
	Since *metav1.Time `json:"since,omitempty"`
	// Why is the finding that explains a wait that will not end by itself (its code and short
	// message), empty when there is none.
	Why string `json:"why,omitempty"`
	// Expected is the change stsdiag expects the controller or the kubelet to make here by
	// itself (ReplacedWhenReady), and ExpectedBy its deadline: once that
	// passes without it, a finding names the failed prediction.
	Expected   string       `json:"expected,omitempty"`
	ExpectedBy *metav1.Time `json:"expectedBy,omitempty"`
}

// DeepCopyObject lets cli-runtime printers print the explanation.
func (e *Explanation) DeepCopyObject() runtime.Object {
	c := *e
	c.TemplateChanges = append([]string(nil), e.TemplateChanges...)
	c.Ordinals = append([]OrdinalStep(nil), e.Ordinals...)
	for i := range c.Ordinals {
		if o := &c.Ordinals[i]; o.Since != nil || o.ExpectedBy != nil {
			o.Since, o.ExpectedBy = o.Since.DeepCopy(), o.ExpectedBy.DeepCopy()
		}
	}
	c.Findings = copyFindings(e.Findings)
	c.Server = copyServer(e.Server)
	return &c
}
