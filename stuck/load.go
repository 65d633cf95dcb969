package stuck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = imagev1.Install(scheme)
	return serializer.NewCodecFactory(scheme).UniversalDeserializer()
}()

// LoadFile reads Objects from a multi-document YAML file of Kubernetes objects.
func LoadFile(path string, now time.Time) (*Objects, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	s, err := Load(f, now)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Load reads Objects from multi-document YAML (or List objects). The image.openshift.io API
// counts as present when an ImageStream appears, unless a document sets it otherwise.
func Load(r io.Reader, now time.Time) (*Objects, error) {
	s := &Objects{Now: now}
	var others []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if runtime.IsNotRegisteredError(err) {
			// Another kind (a CRD's object): a possible owner of a StatefulSet.
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				return nil, err
			}
			others = append(others, u)
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := s.add(obj); err != nil {
			return nil, err
		}
	}
	s.lookUpOwners(others)
	return s, nil
}

// lookUpOwners does what gathering does for terminating StatefulSets: it records whether an
// object of their controller owner's kind and name exists (among the file's objects) and its UID.
func (s *Objects) lookUpOwners(objects []*unstructured.Unstructured) {
	present := map[string]types.UID{}
	for _, u := range objects {
		present[ownerKey(u.GetNamespace(), u.GetAPIVersion(), u.GetKind(), u.GetName())] = u.GetUID()
	}
	for _, ref := range s.OwnersToLookUp() {
		uid, ok := present[ownerKey(ref.Namespace, ref.APIVersion, ref.Kind, ref.Name)]
		ref.Exists, ref.UID = ok, uid
		s.Owners = append(s.Owners, ref)
	}
}

// OwnersToLookUp lists, once each, the controller owners of the terminating StatefulSets: the
// owners a reader looks up (Owners), so that a diagnosis can tell an owner that is gone or was
// recreated from one still deleting its StatefulSet.
func (s *Objects) OwnersToLookUp() []Owner {
	seen := map[string]bool{}
	var out []Owner
	for i := range s.StatefulSets {
		set := &s.StatefulSets[i]
		ref := metav1.GetControllerOfNoCopy(set)
		if set.DeletionTimestamp == nil || ref == nil {
			continue
		}
		key := ownerKey(set.Namespace, ref.APIVersion, ref.Kind, ref.Name)
		if !seen[key] {
			seen[key] = true
			out = append(out, Owner{Namespace: set.Namespace, APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name})
		}
	}
	return out
}

// Owner returns what is known of an owner reference's kind and name in a namespace.
func (s *Objects) Owner(namespace string, ref *metav1.OwnerReference) (Owner, bool) {
	key := ownerKey(namespace, ref.APIVersion, ref.Kind, ref.Name)
	for _, o := range s.Owners {
		if ownerKey(o.Namespace, o.APIVersion, o.Kind, o.Name) == key {
			return o, true
		}
	}
	return Owner{}, false
}

func (s *Objects) add(obj runtime.Object) error {
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		s.StatefulSets = append(s.StatefulSets, *o)
	case *corev1.Pod:
		s.Pods = append(s.Pods, *o)
	case *appsv1.ControllerRevision:
		s.Revisions = append(s.Revisions, *o)
	case *corev1.PersistentVolumeClaim:
		s.PVCs = append(s.PVCs, *o)
	case *corev1.Event:
		s.Events = append(s.Events, *o)
	case *corev1.Namespace:
		s.Namespaces = append(s.Namespaces, *o)
	case *corev1.Node:
		s.Nodes = append(s.Nodes, *o)
		s.NodesListed = true
	case *corev1.Service:
		s.Services = append(s.Services, *o)
		s.ServicesListed = true
	case *storagev1.StorageClass:
		s.StorageClasses = append(s.StorageClasses, *o)
		s.StorageClassesListed = true
	case *imagev1.ImageStream:
		s.OpenShift = true
		s.ImageStreams = append(s.ImageStreams, *o)
	case *coordinationv1.Lease:
		if o.Namespace != ControllerManagerLeaseNamespace || o.Name != ControllerManagerLeaseName {
			return fmt.Errorf("unexpected Lease %s/%s in snapshot", o.Namespace, o.Name)
		}
		s.ControllerManager = &ControllerManagerLease{Lease: o}
	case *corev1.List:
		for _, item := range o.Items {
			inner, _, err := decoder.Decode(item.Raw, nil, nil)
			if err != nil {
				return err
			}
			if err := s.add(inner); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unexpected object %T in snapshot", obj)
	}
	return nil
}
