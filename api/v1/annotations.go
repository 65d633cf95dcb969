package v1

// Annotations a user puts on a StatefulSet for stsdiag (docs/canary.md).
const (
	// AnnotationCanarySteps declares a canary that `stsdiag watch` drives ("1,50%").
	AnnotationCanarySteps = "stsdiag.io/canary-steps"
	// AnnotationCanaryHold is how long each step must stay healthy ("5m").
	AnnotationCanaryHold = "stsdiag.io/canary-hold"
)
