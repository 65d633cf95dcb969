// Package slimpb decodes the API server's protobuf responses of the kinds a diagnosis reads
// straight into the objects snapshot.Slim leaves: the fields Slim drops (managedFields,
// kubectl's last-applied copy, a pod's env, probes, resources, non-claim volumes, most of its
// status, a node's images...) are skipped on the wire, never allocated. The objects are the
// standard Go types (k8s.io/api), so diagnosis does not change; the tests prove that for every
// testdata scenario slim-decoding the bytes gives Slim(the full decode).
//
// The wire format is protobuf, in the Kubernetes envelope: the magic "k8s\x00", then a
// runtime.Unknown (typeMeta = 1, raw = 2, contentEncoding = 3, contentType = 4;
// k8s.io/apimachinery/pkg/runtime/generated.proto@v0.35.4) whose raw is the object. Field
// numbers are those of k8s.io/api@v0.35.4's generated.proto files, cited where used; fields kept
// whole are decoded by the types' generated Unmarshal (which appends and merges, never resets,
// so it decodes any run of a message's fields), so only the walk over the dropped fields is
// written here. The API server's protobuf encoding is versioned with the API (fields are only
// added), so a field added later is skipped like any other unread one.
package slimpb

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"

	"google.golang.org/protobuf/encoding/protowire"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// magic starts every Kubernetes protobuf body (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var magic = []byte{0x6b, 0x38, 0x73, 0x00}

// lastApplied is kubectl's copy of the whole object; Slim drops it (snapshot.lastApplied).
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

type unmarshaler interface{ Unmarshal([]byte) error }

// kind decodes one kind, or its list, from the raw bytes of the envelope into an object of
// type typ (into, when it is one).
type kind struct {
	typ    reflect.Type
	decode func(raw []byte, into runtime.Object) (runtime.Object, error)
	// stream, for a list kind, decodes the list message from l into into (of type typ); with
	// each set, each item goes to each in an allocation of its own instead of into's Items.
	stream func(l *limited, into runtime.Object, each func(runtime.Object)) error
}

// kinds are those snapshot.Slim changes, all of them read by gathering: every kind loses its
// managedFields and last-applied annotation; pods and nodes lose more.
var kinds = map[schema.GroupVersionKind]kind{}

// kindOf is the kind of each type in kinds.
var kindOf = map[reflect.Type]schema.GroupVersionKind{}

func init() {
	core := corev1.SchemeGroupVersion
	register[corev1.Pod, corev1.PodList](core.WithKind("Pod"), decodePod)
	register[corev1.Node, corev1.NodeList](core.WithKind("Node"), decodeNode)
	register[corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList](core.WithKind("PersistentVolumeClaim"), decodeClaim)
	register[corev1.Event, corev1.EventList](core.WithKind("Event"), decodeObject)
	register[corev1.Service, corev1.ServiceList](core.WithKind("Service"), decodeService)
	register[corev1.Namespace, corev1.NamespaceList](core.WithKind("Namespace"), decodeObject)
	apps := appsv1.SchemeGroupVersion
	register[appsv1.StatefulSet, appsv1.StatefulSetList](apps.WithKind("StatefulSet"), decodeObject)
	register[appsv1.ControllerRevision, appsv1.ControllerRevisionList](apps.WithKind("ControllerRevision"), decodeObject)
	register[storagev1.StorageClass, storagev1.StorageClassList](storagev1.SchemeGroupVersion.WithKind("StorageClass"), decodeObject)
}

// object is a pointer to an API object type T with its generated Unmarshal.
type object[T any] interface {
	*T
	runtime.Object
	unmarshaler
}

// register adds the decoders of a kind and of its list (its kind + "List"). Every list type has metadata = 1
// (ListMeta) and items = 2 (e.g. PodList in core/v1/generated.proto@v0.35.4).
func register[T any, L any, PT object[T], PL object[L]](item schema.GroupVersionKind, decodeItem func([]byte, PT) error) {
	list := item.GroupVersion().WithKind(item.Kind + "List")
	kindOf[reflect.TypeFor[PT]()], kindOf[reflect.TypeFor[PL]()] = item, list
	kinds[item] = kind{typ: reflect.TypeFor[PT](), decode: func(raw []byte, into runtime.Object) (runtime.Object, error) {
		obj, ok := into.(PT)
		if ok {
			*obj = *new(T)
		} else {
			obj = PT(new(T))
		}
		return obj, decodeItem(raw, obj)
	}}
	kinds[list] = kind{typ: reflect.TypeFor[PL](), decode: func(raw []byte, into runtime.Object) (runtime.Object, error) {
		l, ok := into.(PL)
		if ok {
			*l = *new(L)
		} else {
			l = PL(new(L))
		}
		n := 0
		if err := fields(raw, func(num protowire.Number, _ protowire.Type, _ []byte) error {
			if num == 2 {
				n++
			}
			return nil
		}); err != nil {
			return nil, err
		}
		var items []T
		if n > 0 {
			items = make([]T, 0, n)
		}
		err := walk(raw, l, func(num protowire.Number) action {
			if num == 2 {
				return custom
			}
			return keep
		}, func(_ protowire.Number, v []byte) error {
			items = append(items, *new(T))
			return decodeItem(v, PT(&items[len(items)-1]))
		})
		if err != nil {
			return nil, err
		}
		// Items is the only slice of items in every list type: set it as apimachinery's
		// meta.SetList would, without its per-item interface conversions.
		reflect.ValueOf(l).Elem().FieldByName("Items").Set(reflect.ValueOf(items))
		return l, nil
	}, stream: func(ls *limited, into runtime.Object, each func(runtime.Object)) error {
		l := into.(PL)
		*l = *new(L)
		// The number of items is not known before the end; the size of the list is. The
		// items' slice is sized from the bytes per item so far, with a tenth more: one
		// allocation for a list of similar objects, where append would copy them again and
		// again (it grows a large slice by 1.25×; a pod is over 1 KiB: at 100k pods that was a
		// fifth of check's CPU).
		total := ls.left
		var items []T
		// Items each in an allocation of its own are held apart (an informer's cache): their
		// equal strings share one copy.
		var interned *interner
		for {
			num, v, done, err := ls.field()
			if err != nil {
				return err
			}
			if done {
				break
			}
			switch num {
			case 1: // metadata (ListMeta)
				if err := l.Unmarshal(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), v)); err != nil {
					return err
				}
				if ls.listed != nil {
					ls.listed(listMeta(l))
				}
			case 2:
				if each != nil {
					item := PT(new(T))
					if err := decodeItem(v, item); err != nil {
						return err
					}
					if interned == nil {
						interned = newInterner()
					}
					interned.item(item)
					each(item)
					continue
				}
				if len(items) == cap(items) {
					items = grow(items, total-ls.left-len(v), ls.left+len(v))
				}
				items = append(items, *new(T))
				if err := decodeItem(v, PT(&items[len(items)-1])); err != nil {
					return err
				}
			}
		}
		reflect.ValueOf(l).Elem().FieldByName("Items").Set(reflect.ValueOf(items))
		return nil
	}}
}

// grow returns items with room for the rest of a list: read bytes hold the items so far, left
// bytes the rest.
func grow[T any](items []T, read, left int) []T {
	n := 64
	if len(items) > 0 && read > 0 {
		perItem := max(1, read/len(items))
		n = left/perItem + left/perItem/10 + 64
	}
	grown := make([]T, len(items), len(items)+n)
	copy(grown, items)
	return grown
}

// Decode decodes a protobuf body in the Kubernetes envelope into the slim object of its kind
// (into, when it is of that type), or reports ok false when the kind is not one this package
// decodes or the body is not a plain protobuf envelope (then decode it as usual).
func Decode(data []byte, into runtime.Object) (obj runtime.Object, gvk *schema.GroupVersionKind, ok bool, err error) {
	typeMeta, raw, plain, err := envelope(data)
	if err != nil || !plain {
		return nil, nil, false, err
	}
	gv, err := schema.ParseGroupVersion(typeMeta.APIVersion)
	if err != nil {
		return nil, nil, false, nil
	}
	g := gv.WithKind(typeMeta.Kind)
	k, found := kinds[g]
	if !found {
		return nil, nil, false, nil
	}
	if into != nil && reflect.TypeOf(into) != k.typ {
		return nil, nil, false, nil
	}
	obj, err = k.decode(raw, into)
	if err != nil {
		return nil, nil, true, fmt.Errorf("decoding %s: %w", typeMeta.Kind, err)
	}
	return obj, &g, true, nil
}

// Encode wraps an object's generated protobuf in the Kubernetes envelope, as the API server
// writes it (for tests and the bench).
func Encode(obj interface {
	runtime.Object
	Marshal() ([]byte, error)
}, gvk schema.GroupVersionKind) ([]byte, error) {
	raw, err := obj.Marshal()
	if err != nil {
		return nil, err
	}
	apiVersion, k := gvk.ToAPIVersionAndKind()
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: k}, Raw: raw}
	body, err := u.Marshal()
	if err != nil {
		return nil, err
	}
	return append(append([]byte(nil), magic...), body...), nil
}

// RoundTrip encodes obj as the API server does (its generated Marshal, in the envelope) and
// decodes it back slim, in place. It reports false, leaving obj alone, for a kind this package
// does not decode. For tests: the objects of a scenario as gathering reads them.
func RoundTrip(obj runtime.Object) (bool, error) {
	gvk, found := kindOf[reflect.TypeOf(obj)]
	m, marshals := obj.(interface{ Marshal() ([]byte, error) })
	if !found || !marshals {
		return false, nil
	}
	raw, err := m.Marshal()
	if err != nil {
		return true, err
	}
	_, err = kinds[gvk].decode(raw, obj)
	return true, err
}

// envelope reads the runtime.Unknown after the magic: its typeMeta and raw, and whether it is a
// plain body (no content encoding or type this package does not know).
func envelope(data []byte) (runtime.TypeMeta, []byte, bool, error) {
	var tm runtime.TypeMeta
	if !bytes.HasPrefix(data, magic) {
		return tm, nil, false, nil
	}
	var raw []byte
	plain := true
	err := fields(data[len(magic):], func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1: // typeMeta: apiVersion = 1, kind = 2
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
				switch {
				case typ != protowire.BytesType:
				case num == 1:
					tm.APIVersion = string(v)
				case num == 2:
					tm.Kind = string(v)
				}
				return nil
			})
		case 2:
			raw = v
		case 3, 4: // contentEncoding, contentType
			if len(v) > 0 && string(v) != runtime.ContentTypeProtobuf {
				plain = false
			}
		}
		return nil
	})
	return tm, raw, plain, err
}

// fields calls fn with each field of message b; v is the value of a length-delimited field.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		var v []byte
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(b[n:])
		}
		if err := fn(num, typ, v); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

// action is what walk does with a field.
type action int

const (
	keep   action = iota // decoded by the message's generated Unmarshal
	drop                 // skipped
	custom               // a length-delimited field given to the caller's function
)

var errWireType = errors.New("slimpb: wrong wire type")

// walk decodes message b into m: the fields plan keeps by m's generated Unmarshal, in runs of
// adjacent fields; custom ones (length-delimited) by fn; dropped ones not at all.
func walk(b []byte, m unmarshaler, plan func(protowire.Number) action, fn func(num protowire.Number, v []byte) error) error {
	start := -1 // of the current run of kept fields
	flush := func(end int) error {
		if start < 0 {
			return nil
		}
		err := m.Unmarshal(b[start:end])
		start = -1
		return err
	}
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return protowire.ParseError(n)
		}
		size := protowire.ConsumeFieldValue(num, typ, b[i+n:])
		if size < 0 {
			return protowire.ParseError(size)
		}
		switch plan(num) {
		case keep:
			if start < 0 {
				start = i
			}
		case drop:
			if err := flush(i); err != nil {
				return err
			}
		case custom:
			if err := flush(i); err != nil {
				return err
			}
			if typ != protowire.BytesType {
				return errWireType
			}
			v, _ := protowire.ConsumeBytes(b[i+n:])
			if err := fn(num, v); err != nil {
				return err
			}
		}
		i += n + size
	}
	return flush(len(b))
}

// keepOnly is a plan keeping the given fields and dropping the others.
func keepOnly(nums ...protowire.Number) func(protowire.Number) action {
	return func(num protowire.Number) action {
		for _, k := range nums {
			if k == num {
				return keep
			}
		}
		return drop
	}
}

// decodeMeta decodes an ObjectMeta without managedFields (17) and without kubectl's last-applied
// annotation (annotations = 12, a map entry: key = 1, value = 2), as Slim leaves it: an
// annotation map that held only that copy stays, empty.
// (k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto@v0.35.4, message ObjectMeta)
func decodeMeta(b []byte, m *metav1.ObjectMeta) error {
	return walk(b, m, func(num protowire.Number) action {
		switch num {
		case 17:
			return drop
		case 12:
			return custom
		}
		return keep
	}, func(_ protowire.Number, entry []byte) error {
		var key, value []byte
		if err := fields(entry, func(num protowire.Number, typ protowire.Type, v []byte) error {
			switch {
			case typ != protowire.BytesType:
			case num == 1:
				key = v
			case num == 2:
				value = v
			}
			return nil
		}); err != nil {
			return err
		}
		// As the generated Unmarshal does, but for kubectl's copy (Slim deletes it when set).
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		if string(key) == lastApplied && len(value) > 0 {
			delete(m.Annotations, lastApplied)
			return nil
		}
		m.Annotations[string(key)] = string(value)
		return nil
	})
}

// decodeObject decodes a kind Slim only strips of its metadata: metadata = 1 (ObjectMeta) in
// every kind registered with it; the rest whole.
func decodeObject[T any, PT object[T]](b []byte, obj PT) error {
	meta := any(obj).(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
	return walk(b, obj, func(num protowire.Number) action {
		if num == 1 {
			return custom
		}
		return keep
	}, func(_ protowire.Number, v []byte) error { return decodeMeta(v, meta) })
}

// decodePod keeps what snapshot.Slim keeps of a pod (core/v1/generated.proto@v0.35.4):
// Pod: metadata = 1, spec = 2, status = 3.
// PodSpec: volumes = 1 (claims only), containers = 2, initContainers = 20,
// terminationGracePeriodSeconds = 4, nodeName = 10.
// PodStatus: phase = 1, conditions = 2, containerStatuses = 8, initContainerStatuses = 10.
// ContainerStatus: name = 1, state = 2, lastState = 3, ready = 4, restartCount = 5, image = 6,
// imageID = 7 (not containerID = 8, started = 9, the resources, volume mounts, user and stop
// signal after them).
func decodePod(b []byte, pod *corev1.Pod) error {
	return walk(b, pod, func(num protowire.Number) action {
		if num >= 1 && num <= 3 {
			return custom
		}
		return drop
	}, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return decodeMeta(v, &pod.ObjectMeta)
		case 2:
			return decodePodSpec(v, &pod.Spec)
		case 3:
			return decodePodStatus(v, &pod.Status)
		}
		return nil
	})
}

func decodePodStatus(b []byte, status *corev1.PodStatus) error {
	return walk(b, status, func(num protowire.Number) action {
		switch num {
		case 1, 2:
			return keep
		case 8, 10:
			return custom
		}
		return drop
	}, func(num protowire.Number, v []byte) error {
		var c corev1.ContainerStatus
		if err := walk(v, &c, keepOnly(1, 2, 3, 4, 5, 6, 7), nil); err != nil {
			return err
		}
		if num == 8 {
			status.ContainerStatuses = append(status.ContainerStatuses, c)
		} else {
			status.InitContainerStatuses = append(status.InitContainerStatuses, c)
		}
		return nil
	})
}

func decodePodSpec(b []byte, spec *corev1.PodSpec) error {
	return walk(b, spec, func(num protowire.Number) action {
		switch num {
		case 4, 10:
			return keep
		case 1, 2, 20:
			return custom
		}
		return drop
	}, func(num protowire.Number, v []byte) error {
		if num == 1 {
			return decodeVolume(v, spec)
		}
		c, err := decodeContainer(v)
		if num == 2 {
			spec.Containers = append(spec.Containers, c)
		} else {
			spec.InitContainers = append(spec.InitContainers, c)
		}
		return err
	})
}

// decodeContainer keeps a container's name = 1, image = 2 and restartPolicy = 24 (sidecars).
func decodeContainer(b []byte) (corev1.Container, error) {
	var c corev1.Container
	return c, walk(b, &c, keepOnly(1, 2, 24), nil)
}

// decodeVolume appends a claim volume: Volume: name = 1, volumeSource = 2; VolumeSource:
// persistentVolumeClaim = 10. Other volumes are dropped.
func decodeVolume(b []byte, spec *corev1.PodSpec) error {
	var v corev1.Volume
	err := walk(b, &v, func(num protowire.Number) action {
		switch num {
		case 1:
			return keep
		case 2:
			return custom
		}
		return drop
	}, func(_ protowire.Number, src []byte) error {
		return walk(src, &v.VolumeSource, keepOnly(10), nil)
	})
	if err == nil && v.PersistentVolumeClaim != nil {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: v.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
	}
	return err
}

// decodeClaim keeps what snapshot.Slim keeps of a PVC (core/v1/generated.proto@v0.35.4):
// PersistentVolumeClaim: metadata = 1, spec = 2, status = 3; PersistentVolumeClaimSpec:
// storageClassName = 5; PersistentVolumeClaimStatus: phase = 1.
func decodeClaim(b []byte, pvc *corev1.PersistentVolumeClaim) error {
	return walk(b, pvc, func(num protowire.Number) action {
		if num >= 1 && num <= 3 {
			return custom
		}
		return drop
	}, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return decodeMeta(v, &pvc.ObjectMeta)
		case 2:
			return walk(v, &pvc.Spec, keepOnly(5), nil)
		}
		return walk(v, &pvc.Status, keepOnly(1), nil)
	})
}

// decodeService keeps a Service's metadata and, of its spec, its selector, cluster IP and type
// (Service: metadata = 1, spec = 2, status = 3; ServiceSpec: selector = 2, clusterIP = 3,
// type = 4).
func decodeService(b []byte, svc *corev1.Service) error {
	return walk(b, svc, func(num protowire.Number) action {
		switch num {
		case 1, 2:
			return custom
		}
		return drop
	}, func(num protowire.Number, v []byte) error {
		if num == 1 {
			return decodeMeta(v, &svc.ObjectMeta)
		}
		return walk(v, &svc.Spec, keepOnly(2, 3, 4), nil)
	})
}

// decodeNode keeps a node's metadata and spec and, of its status, its conditions
// (Node: metadata = 1, spec = 2, status = 3; NodeStatus: conditions = 4).
func decodeNode(b []byte, node *corev1.Node) error {
	return walk(b, node, func(num protowire.Number) action {
		if num == 1 || num == 3 {
			return custom
		}
		return keep
	}, func(num protowire.Number, v []byte) error {
		if num == 1 {
			return decodeMeta(v, &node.ObjectMeta)
		}
		return walk(v, &node.Status, keepOnly(4), nil)
	})
}
