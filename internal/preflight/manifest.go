package preflight

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"
)

// Manifest is what the input holds: its StatefulSets, and the objects that count as existing
// for them once applied together (Namespaces, ServiceAccounts, ResourceQuotas, ImageStreams,
// Services). Every other kind is read, so that an unknown one is an error as it is to kubectl
// apply, and otherwise ignored.
type Manifest struct {
	StatefulSets []ManifestSet
	Namespaces   []string
	// ServiceAccounts, Services, ResourceQuotas and ImageStreams of the manifests, by namespace.
	ServiceAccounts map[string][]string
	Services        map[string][]corev1.Service
	Quotas          map[string][]corev1.ResourceQuota
	ImageStreams    map[string][]imagev1.ImageStream
}

// ManifestSet is one StatefulSet of the input: as written (what the dry-run apply sends) and
// typed.
type ManifestSet struct {
	Source  string
	Object  *unstructured.Unstructured
	Typed   *appsv1.StatefulSet
	Mapping schema.GroupVersionResource
}

// InputError is input that cannot be read: a file that does not exist, YAML or JSON that does
// not parse, a kind the API server does not serve, a namespace that contradicts -n.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ReadManifest reads the objects of files as kubectl apply -f does (cli-runtime's
// resource.Builder: files, directories with -R, URLs, "-" for in, multi-document YAML and JSON,
// List kinds flattened), against the API server's kinds. An object without a namespace takes
// namespace (the kubeconfig's, or -n); with enforce (-n given), an object of another namespace
// is an error, as it is to kubectl.
func ReadManifest(getter genericclioptions.RESTClientGetter, files resource.FilenameOptions, in io.Reader, namespace string, enforce bool) (*Manifest, error) {
	if len(files.Filenames) == 0 && files.Kustomize == "" {
		return nil, &InputError{errors.New("no input: give -f FILE, -f DIR (with -R for subdirectories), -f - for stdin, or -k DIR")}
	}
	b := resource.NewBuilder(getter).Unstructured().ContinueOnError().NamespaceParam(namespace).DefaultNamespace().Flatten()
	if i := slices.Index(files.Filenames, "-"); i >= 0 {
		files.Filenames = slices.Delete(slices.Clone(files.Filenames), i, i+1)
		b = b.Stream(in, "STDIN")
	}
	if len(files.Filenames) > 0 || files.Kustomize != "" {
		b = b.FilenameParam(enforce, &files)
	}
	infos, err := b.Do().Infos()
	if err != nil {
		return nil, &InputError{firstError(err)}
	}
	m := &Manifest{ServiceAccounts: map[string][]string{}, Services: map[string][]corev1.Service{},
		Quotas: map[string][]corev1.ResourceQuota{}, ImageStreams: map[string][]imagev1.ImageStream{}}
	for _, info := range infos {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if err := m.add(info, u); err != nil {
			return nil, &InputError{fmt.Errorf("%s: %s %s: %w", info.Source, u.GetKind(), u.GetName(), err)}
		}
	}
	if len(m.StatefulSets) == 0 {
		return nil, &InputError{errors.New("the input holds no StatefulSet")}
	}
	return m, nil
}

// add files one object of the input.
func (m *Manifest) add(info *resource.Info, u *unstructured.Unstructured) error {
	gk := u.GroupVersionKind().GroupKind()
	ns := u.GetNamespace()
	if u.GetName() == "" && u.GetGenerateName() == "" {
		return errors.New("resource name may not be empty")
	}
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		var set appsv1.StatefulSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &set); err != nil {
			return err
		}
		for _, other := range m.StatefulSets {
			if other.Typed.Namespace == set.Namespace && other.Typed.Name == set.Name {
				return fmt.Errorf("StatefulSet %s/%s appears twice in the input (also in %s)", set.Namespace, set.Name, other.Source)
			}
		}
		m.StatefulSets = append(m.StatefulSets, ManifestSet{Source: info.Source, Object: u, Typed: &set, Mapping: info.Mapping.Resource})
	case schema.GroupKind{Kind: "Namespace"}:
		m.Namespaces = append(m.Namespaces, u.GetName())
	case schema.GroupKind{Kind: "ServiceAccount"}:
		m.ServiceAccounts[ns] = append(m.ServiceAccounts[ns], u.GetName())
	case schema.GroupKind{Kind: "Service"}:
		var s corev1.Service
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			return err
		}
		m.Services[ns] = append(m.Services[ns], s)
	case schema.GroupKind{Kind: "ResourceQuota"}:
		var q corev1.ResourceQuota
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &q); err != nil {
			return err
		}
		m.Quotas[ns] = append(m.Quotas[ns], q)
	case schema.GroupKind{Group: "image.openshift.io", Kind: "ImageStream"}:
		var s imagev1.ImageStream
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			return err
		}
		m.ImageStreams[ns] = append(m.ImageStreams[ns], s)
	}
	return nil
}

// firstError is the first of the builder's errors (it aggregates one per object), on one line.
func firstError(err error) error {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) && len(agg.Errors()) > 0 {
		err = agg.Errors()[0]
	}
	return errors.New(strings.Join(strings.Fields(err.Error()), " "))
}
