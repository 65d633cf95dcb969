// Package predict is preflight's judgement, pure: from the manifests and what the cluster answered
// (its objects, the dry runs' answers, the registries'), the update revision the StatefulSet
// controller would name, the pods it would build, what the ResourceQuota, the scheduler's filters,
// the claims' StorageClasses and OpenShift's image lookup make of them, and check's rules over the
// namespace as the apply leaves it — each StatefulSet's findings and verdict, worded.
package predict
