package controller

import (
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// TestVocabularyIsTheContract: the model's steps and the canary annotation are the strings the
// stsdiag/v1 documents name (api/v1), which this package does not import.
func TestVocabularyIsTheContract(t *testing.T) {
	pairs := map[Step]string{
		Nothing: apiv1.StepNothing, Create: apiv1.StepCreate, RecreateTerminal: apiv1.StepRecreateTerminal,
		WaitRunning: apiv1.StepWaitRunning, WaitReady: apiv1.StepWaitReady, WaitAvailable: apiv1.StepWaitAvailable,
		WaitTerminated: apiv1.StepWaitTerminated, DeleteToUpdate: apiv1.StepDeleteToUpdate, DeleteToScaleDown: apiv1.StepDeleteToScaleDown,
		WaitManualDelete: apiv1.StepWaitManualDelete, NotReached: apiv1.StepNotReached,
	}
	for step, want := range pairs {
		if string(step) != want {
			t.Errorf("step %q, api/v1 says %q", step, want)
		}
	}
	if canaryStepsAnnotation != apiv1.AnnotationCanarySteps {
		t.Errorf("canary annotation %q, api/v1 says %q", canaryStepsAnnotation, apiv1.AnnotationCanarySteps)
	}
}
