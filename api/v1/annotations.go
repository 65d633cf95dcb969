package v1

// Annotations a user puts on a StatefulSet for stsdiag (docs/canary.md, docs/watch.md).
const (
	// AnnotationCanarySteps declares a canary that `stsdiag watch` drives ("1,50%").
	AnnotationCanarySteps = "stsdiag.io/canary-steps"
	// AnnotationCanaryHold is how long each step must stay healthy ("5m").
	AnnotationCanaryHold = "stsdiag.io/canary-hold"
	// AnnotationCanaryAnalysis names a ConfigMap in the StatefulSet's namespace holding the Argo
	// Rollouts AnalysisTemplate each step is measured by once its pods held healthy (key
	// template.yaml, or the ConfigMap's only key), as canary --analysis.
	AnnotationCanaryAnalysis = "stsdiag.io/canary-analysis"
	// AnnotationCanaryAnalysisTemplate is that AnalysisTemplate itself (YAML or JSON), in place
	// of a ConfigMap.
	AnnotationCanaryAnalysisTemplate = "stsdiag.io/canary-analysis-template"
	// AnnotationCanaryAnalysisArgs gives values to the template's arguments, as canary --arg:
	// "name=value,name=value".
	AnnotationCanaryAnalysisArgs = "stsdiag.io/canary-analysis-args"
)

// Conditions `stsdiag watch` writes on a StatefulSet's status (kstatus: docs/watch.md).
const (
	// ConditionReconciling is True while a canary watch steps runs.
	ConditionReconciling = "Reconciling"
	// ReasonCanaryPaused is the Reconciling reason of a canary watch paused because its step's
	// analysis could not tell (Inconclusive or Error): it goes on only once its analysis, its
	// template or its partition changes.
	ReasonCanaryPaused = "CanaryPaused"
)
