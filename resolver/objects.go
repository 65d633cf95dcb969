package resolver

import (
	"strings"

	imagev1 "github.com/openshift/api/image/v1"
)

// RunLevelLabel marks OpenShift's run-level namespaces; levels 0 and 1 are skipped by admission.
const RunLevelLabel = "openshift.io/run-level"

// skippedNamespaces are never resolved by the ImagePolicy admission plugin (openshift/kubernetes
// openshift-kube-apiserver/admission/namespaceconditions/decorator.go:13-18@893309864a2588830895620a48258e62fafbae8d).
var skippedNamespaces = map[string]bool{
	"default": true, "kube-system": true, "kube-public": true,
	"openshift": true, "openshift-node": true, "openshift-infra": true,
}

// NamespaceSkipped reports whether the ImagePolicy plugin skips objects of namespace name with
// these labels, and the run level that makes it skip ("" when it is the name). OpenShift decorates
// the plugin (in SkipRunLevelOnePlugins, admissionenablement/admission_config.go) with
// namespaceconditions: the namespaces of decorator.go:13-18 by name, and those labelled
// openshift.io/run-level 0 or 1 (labelcondition.go:17-31@893309864a2588830895620a48258e62fafbae8d).
func NamespaceSkipped(name string, labels map[string]string) (bool, string) {
	if skippedNamespaces[name] {
		return true, ""
	}
	if level := labels[RunLevelLabel]; level == "0" || level == "1" {
		return true, level
	}
	return false, ""
}

// InternalTagStream returns the ImageStream whose own repository ref names by tag
// (<status.dockerImageRepository>:<tag>, no digest), nil when it names none: such a reference is
// one admission leaves alone (NotLocal) and that may still be reported (internalTag).
func InternalTagStream(adm *Admission, ref Ref) *imagev1.ImageStream {
	if ref.Registry == "" || ref.Namespace == "" || ref.ID != "" || strings.Contains(ref.Name, "/") {
		return nil
	}
	stream := adm.Stream(ref.Namespace, ref.Name)
	if stream == nil || stream.Status.DockerImageRepository != ref.Registry+"/"+ref.Namespace+"/"+ref.Name {
		return nil
	}
	return stream
}

// TriggerAnnotation asks openshift-controller-manager to keep container images on an
// ImageStreamTag's current image (LG pkg/image/trigger/types.go:6@LG).
const TriggerAnnotation = "image.openshift.io/triggers"
