package stuck

import (
	"strings"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Objects is every object a diagnosis needs, read at one moment. Diagnosis never calls the API.
type Objects struct {
	Now time.Time
	// ServerVersion is the API server's gitVersion ("v1.35.3"); "" when unknown. The controller
	// rules of that release apply (RulesFor).
	ServerVersion string

	StatefulSets []appsv1.StatefulSet
	Pods         []corev1.Pod
	Revisions    []appsv1.ControllerRevision
	PVCs         []corev1.PersistentVolumeClaim
	// Events holds Warning events only.
	Events         []corev1.Event
	StorageClasses []storagev1.StorageClass
	// StorageClassesListed is false when StorageClasses could not be read (then a claim's class
	// is not judged).
	StorageClassesListed bool

	// Namespaces holds the namespaces in scope when they could be read (OpenShift run levels).
	Namespaces []corev1.Namespace

	// Nodes are the cluster's nodes (for pods stuck terminating on a lost node); NodesListed is
	// false when they could not be read.
	Nodes       []corev1.Node
	NodesListed bool

	// Services are the Services of the namespaces read (the governing Service of a StatefulSet,
	// spec.serviceName); ServicesListed is false when they could not be read (then the Service
	// is not judged).
	Services       []corev1.Service
	ServicesListed bool

	// Owners are the controller owners of terminating StatefulSets as the API knows them now,
	// looked up by kind and name (a LeaderWorkerSet deleted and recreated under the same name
	// has another UID). An owner that was not looked up is absent.
	Owners []Owner

	// OpenShift is true when the image.openshift.io API is served (or forced on).
	OpenShift    bool
	ImageStreams []imagev1.ImageStream

	// Selected names the StatefulSets in scope. Nil means all of them.
	Selected map[types.NamespacedName]bool

	// StatusOnly says the StatefulSets were read without their pods, claims, revisions and
	// Events, because each one's status says its rollout is over (controller.StatusSettled): each
	// is judged by its status and governing Service alone, and no image is checked.
	StatusOnly bool

	// Shared, when set, indexes Nodes, Namespaces and ImageStreams, shared with other snapshots
	// (see Shared; Indexed).
	Shared *Shared
	// Streams, when set, finds the ImageStreams of every namespace where ImageStreams holds
	// those of the snapshot's namespace only (a watch cache's: an image may name another
	// namespace's ImageStream).
	Streams StreamIndex

	// Warnings name optional data that could not be read, and what its absence costs the
	// diagnosis (a reader's; Diagnose does not read them).
	Warnings []string

	// ControllerManager is kube-controller-manager's leader Lease when it was read: Diagnose
	// reports ControllerManagerNotRunning when it has not been renewed (and nothing is
	// Selected: it is a finding of the cluster, not of one StatefulSet).
	ControllerManager *ControllerManagerLease

	// Admission holds what the API server's admission wrote for images when asked (a server-side
	// dry-run create of a probe pod, --confirm-with-admission); nil when it was not asked.
	Admission map[AdmissionQuestion]AdmissionAnswer
}

// AdmissionQuestion is one image to ask admission about: as a container image of a pod in
// Namespace, with the resolve-names annotation "*" when Forced.
type AdmissionQuestion struct {
	Namespace string
	Forced    bool
	Image     string
}

// AdmissionAnswer is admission's answer to a question: the image it wrote, or why it could not
// be asked.
type AdmissionAnswer struct {
	// Written is the image admission left in the probe's container ("" when Error is set).
	Written string
	// Error is the API server's refusal or the failure, first line (no permission to create pods,
	// a quota, a policy).
	Error string
}

// Owner is what the API said of an owner reference's kind and name.
type Owner struct {
	Namespace  string
	APIVersion string
	Kind       string
	Name       string
	// Exists is false when no object of that kind and name exists any more.
	Exists bool
	// UID of the object that exists now.
	UID types.UID
}

// ownerKey identifies an owner by namespace, API group, kind and name (not UID, not version).
func ownerKey(namespace, apiVersion, kind, name string) string {
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	return strings.Join([]string{namespace, group, kind, name}, "/")
}

// key is namespace/name.
func key(namespace, name string) string { return namespace + "/" + name }

// InScope reports whether the StatefulSet namespace/name was selected.
func (s *Objects) InScope(namespace, name string) bool {
	return s.Selected == nil || s.Selected[types.NamespacedName{Namespace: namespace, Name: name}]
}

// Shared indexes the kinds that many snapshots of one read share: a reader that hands out a
// snapshot per namespace gives each the same Nodes, Namespaces and ImageStreams, indexed once
// for all of them instead of once per namespace (at 3000 namespaces, 3000 ImageStreams
// and 3000 Namespaces, that was 18 million map entries).
type Shared struct {
	// Nodes by name, Namespaces by name.
	Nodes      map[string]*corev1.Node
	Namespaces map[string]*corev1.Namespace
	// Streams finds ImageStreams.
	Streams StreamIndex
}

// StreamIndex finds ImageStreams.
type StreamIndex interface {
	// Stream is the ImageStream namespace/name, nil when there is none.
	Stream(namespace, name string) *imagev1.ImageStream
	// HasStreams reports whether namespace holds an ImageStream.
	HasStreams(namespace string) bool
}

// NewShared indexes the shared kinds of s.
func NewShared(s *Objects) *Shared {
	nodes := make(map[string]*corev1.Node, len(s.Nodes))
	for i := range s.Nodes {
		nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	return (&Shared{Nodes: nodes}).For(s)
}

// For indexes s's Namespaces and ImageStreams (or takes s.Streams), with x's index of the Nodes
// (s holds the same Nodes): snapshots of one namespace each share the cluster's Nodes, not their
// namespace's.
func (x *Shared) For(s *Objects) *Shared {
	x = &Shared{Nodes: x.Nodes, Namespaces: make(map[string]*corev1.Namespace, len(s.Namespaces)), Streams: s.Streams}
	for i := range s.Namespaces {
		x.Namespaces[s.Namespaces[i].Name] = &s.Namespaces[i]
	}
	if x.Streams == nil {
		x.Streams = indexStreams(s.ImageStreams)
	}
	return x
}

// streamMap indexes a list of ImageStreams.
type streamMap struct {
	byKey      map[string]*imagev1.ImageStream
	namespaces map[string]bool
}

func indexStreams(streams []imagev1.ImageStream) streamMap {
	m := streamMap{byKey: make(map[string]*imagev1.ImageStream, len(streams)), namespaces: map[string]bool{}}
	for i := range streams {
		is := &streams[i]
		m.byKey[key(is.Namespace, is.Name)] = is
		m.namespaces[is.Namespace] = true
	}
	return m
}

func (m streamMap) Stream(namespace, name string) *imagev1.ImageStream {
	return m.byKey[key(namespace, name)]
}

func (m streamMap) HasStreams(namespace string) bool { return m.namespaces[namespace] }

// Indexed is s.Shared, or when it is not set an index of s built now.
func (s *Objects) Indexed() *Shared {
	if s.Shared != nil {
		return s.Shared
	}
	return NewShared(s)
}
