package slimpb

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	storagev1client "k8s.io/client-go/kubernetes/typed/storage/v1"
	"k8s.io/client-go/rest"
)

// NewClientset is base whose core/v1, apps/v1 and storage.k8s.io/v1 clients decode the kinds of
// this package slim (LISTs, GETs and WATCH events alike), from the same config (which should
// ask for protobuf: JSON responses are decoded whole, as usual). Only for reading what a
// diagnosis reads: an object it returns lacks fields and must never be written back.
func NewClientset(cfg *rest.Config, base kubernetes.Interface) (kubernetes.Interface, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	client := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion, c.APIPath = &gv, apiPath
		// As the generated clients' setConfigDefaults (client-go@v0.35.4 kubernetes/typed/*/v1),
		// with the protobuf decoder replaced.
		c.NegotiatedSerializer = negotiated{rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()}
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		return rest.RESTClientForConfigAndClient(c, httpClient)
	}
	core, err := client(schema.GroupVersion{Version: "v1"}, "/api")
	if err != nil {
		return nil, err
	}
	apps, err := client(schema.GroupVersion{Group: "apps", Version: "v1"}, "/apis")
	if err != nil {
		return nil, err
	}
	storage, err := client(schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}, "/apis")
	if err != nil {
		return nil, err
	}
	return clientset{Interface: base, core: corev1client.New(core), apps: appsv1client.New(apps), storage: storagev1client.New(storage)}, nil
}

type clientset struct {
	kubernetes.Interface
	core    corev1client.CoreV1Interface
	apps    appsv1client.AppsV1Interface
	storage storagev1client.StorageV1Interface
}

func (c clientset) CoreV1() corev1client.CoreV1Interface          { return c.core }
func (c clientset) AppsV1() appsv1client.AppsV1Interface          { return c.apps }
func (c clientset) StorageV1() storagev1client.StorageV1Interface { return c.storage }

// negotiated is a NegotiatedSerializer whose protobuf serializer decodes slim.
type negotiated struct{ runtime.NegotiatedSerializer }

func (n negotiated) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := append([]runtime.SerializerInfo(nil), n.NegotiatedSerializer.SupportedMediaTypes()...)
	for i := range infos {
		if infos[i].MediaType == runtime.ContentTypeProtobuf {
			infos[i].Serializer = Serializer{infos[i].Serializer}
		}
	}
	return infos
}

// Serializer decodes the kinds of this package slim (Decode) and everything else, and every
// encoding, as the serializer it wraps.
type Serializer struct{ runtime.Serializer }

func (s Serializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if obj, gvk, ok, err := Decode(data, into); ok {
		return obj, gvk, err
	}
	return s.Serializer.Decode(data, defaults, into)
}
