package slimpb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Lister LISTs a kind into a list of the standard type, streaming: the response is decoded item
// by item as it arrives, so that neither the whole body nor the objects Slim drops are ever in
// memory (at 100k pods, the body alone is over 100 MB).
type Lister interface {
	ListInto(ctx context.Context, namespace string, opts metav1.ListOptions, into runtime.Object) error
}

// Pager is a Lister that tells a page's continue token as soon as it arrives: a list's metadata
// comes before its items on the wire, so the next page can be asked for while this one is still
// read and decoded.
type Pager interface {
	// ListPage is ListInto; listed, if set, is called with the list's metadata once it is read
	// (before the items of a protobuf answer, after them otherwise).
	ListPage(ctx context.Context, namespace string, opts metav1.ListOptions, into runtime.Object, listed func(metav1.ListMeta)) error
}

var (
	_ Lister = clientset{}
	_ Pager  = clientset{}
)

// resources are the REST resources of the list types ListInto knows, and their clients.
var resources = map[reflect.Type]struct {
	resource string
	client   func(clientset) rest.Interface
}{}

func init() {
	core := func(c clientset) rest.Interface { return c.core.RESTClient() }
	apps := func(c clientset) rest.Interface { return c.apps.RESTClient() }
	storage := func(c clientset) rest.Interface { return c.storage.RESTClient() }
	for kind, r := range map[string]struct {
		resource string
		client   func(clientset) rest.Interface
	}{
		"PodList": {"pods", core}, "NodeList": {"nodes", core}, "PersistentVolumeClaimList": {"persistentvolumeclaims", core},
		"EventList": {"events", core}, "ServiceList": {"services", core}, "NamespaceList": {"namespaces", core},
		"StatefulSetList": {"statefulsets", apps}, "ControllerRevisionList": {"controllerrevisions", apps},
		"StorageClassList": {"storageclasses", storage},
	} {
		found := false
		for gvk, k := range kinds {
			if gvk.Kind == kind {
				resources[k.typ] = r
				found = true
			}
		}
		if !found {
			panic("slimpb: no decoder for " + kind)
		}
	}
}

// Each is a LIST's answer decoded item by item, each item in an allocation of its own, as
// ListPage and DecodeStream decode it when given one. List is an empty list of the kind (e.g.
// &corev1.PodList{}): they set its metadata and leave its Items empty. An informer's cache may
// hold any of the items without the others, where an item of a list's Items keeps the whole
// array alive; so no copy of each item is needed (meta.ExtractListWithAlloc's) to cache them
// apart, and the items are never held twice.
type Each struct {
	List  runtime.Object
	Items []runtime.Object
}

var _ metav1.ListMetaAccessor = &Each{}

// GetObjectKind is List's.
func (e *Each) GetObjectKind() schema.ObjectKind { return e.List.GetObjectKind() }

// GetListMeta is List's.
func (e *Each) GetListMeta() metav1.ListInterface {
	if m, ok := e.List.(metav1.ListMetaAccessor); ok {
		return m.GetListMeta()
	}
	return nil
}

// DeepCopyObject copies the list and every item.
func (e *Each) DeepCopyObject() runtime.Object {
	out := &Each{List: e.List.DeepCopyObject(), Items: make([]runtime.Object, len(e.Items))}
	for i, item := range e.Items {
		out.Items[i] = item.DeepCopyObject()
	}
	return out
}

// listOf is the list whose kind into is (Each's List for an Each), and each, for an Each, the
// function that appends an item to it.
func listOf(into runtime.Object) (runtime.Object, func(runtime.Object)) {
	e, ok := into.(*Each)
	if !ok {
		return into, nil
	}
	e.Items = nil
	return e.List, func(item runtime.Object) { e.Items = append(e.Items, item) }
}

// ListInto LISTs the kind of into (a list type of this package's kinds) in namespace ("" for
// all or for a cluster-scoped kind), decoding the response as it streams in. A response that is
// not protobuf is decoded whole, as usual.
func (c clientset) ListInto(ctx context.Context, namespace string, opts metav1.ListOptions, into runtime.Object) error {
	return c.ListPage(ctx, namespace, opts, into, nil)
}

// ListPage is ListInto, telling listed the list's metadata as soon as it is read.
func (c clientset) ListPage(ctx context.Context, namespace string, opts metav1.ListOptions, into runtime.Object, listed func(metav1.ListMeta)) error {
	list, _ := listOf(into)
	r, ok := resources[reflect.TypeOf(list)]
	if !ok {
		return fmt.Errorf("slimpb: cannot list into %T", list)
	}
	body, err := r.client(c).Get().Namespace(namespace).Resource(r.resource).
		VersionedParams(&opts, scheme.ParameterCodec).Stream(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = body.Close() }() // a read: what was decoded is all there is to know
	return decodeStream(body, into, listed)
}

// DecodeStream decodes a LIST response from r into into, a list type of this package's kinds
// or an Each of one: protobuf item by item, anything else (JSON) whole with client-go's decoder.
func DecodeStream(r io.Reader, into runtime.Object) error {
	return decodeStream(r, into, nil)
}

// decodeStream is DecodeStream, telling listed (if set) the list's metadata once it is read.
func decodeStream(r io.Reader, into runtime.Object, listed func(metav1.ListMeta)) error {
	into, each := listOf(into)
	k, ok := kinds[kindOf[reflect.TypeOf(into)]]
	if !ok || k.stream == nil {
		return fmt.Errorf("slimpb: cannot decode a stream into %T", into)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(len(magic))
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if string(head) != string(magic) {
		data, err := io.ReadAll(br)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return errors.New("slimpb: an empty response")
		}
		if _, _, err = scheme.Codecs.UniversalDeserializer().Decode(data, nil, into); err != nil {
			return err
		}
		if each != nil {
			// Each item in an allocation of its own, and the list's Items emptied.
			items, err := meta.ExtractListWithAlloc(into)
			if err != nil {
				return err
			}
			for _, item := range items {
				each(item)
			}
			field := reflect.ValueOf(into).Elem().FieldByName("Items")
			field.Set(reflect.Zero(field.Type()))
		}
		if listed != nil {
			listed(listMeta(into))
		}
		return nil
	}
	if _, err := br.Discard(len(magic)); err != nil {
		return err
	}
	s := &stream{r: br}
	// The envelope (runtime.Unknown): typeMeta = 1 first, then raw = 2, whose length bounds the
	// list; contentEncoding = 3 and contentType = 4 after it.
	wantKind := kindOf[reflect.TypeOf(into)]
	sawKind, sawList := false, false
	for {
		num, typ, err := s.tag()
		if errors.Is(err, io.EOF) {
			if !sawList {
				return io.ErrUnexpectedEOF
			}
			return nil
		}
		if err != nil {
			return err
		}
		if typ != protowire.BytesType {
			return errWireType
		}
		n, err := s.length()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			b, err := s.next(n)
			if err != nil {
				return err
			}
			tm, _, _, err := envelope(append(append([]byte(nil), magic...), protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), b)...))
			if err != nil {
				return err
			}
			if apiVersion, kind := wantKind.ToAPIVersionAndKind(); tm.APIVersion != apiVersion || tm.Kind != kind {
				return fmt.Errorf("slimpb: a %s %s in a LIST of %s", tm.APIVersion, tm.Kind, kind)
			}
			sawKind = true
		case 2:
			if !sawKind {
				return errors.New("slimpb: an object before its kind")
			}
			if err := k.stream(&limited{s: s, left: n, listed: listed}, into, each); err != nil {
				return err
			}
			sawList = true
		default:
			b, err := s.next(n)
			if err != nil {
				return err
			}
			if len(b) > 0 && string(b) != runtime.ContentTypeProtobuf {
				return fmt.Errorf("slimpb: content %q not supported", b)
			}
		}
	}
}

// stream reads protobuf from a buffered reader; buf is reused for each value it returns; read
// counts the bytes read.
type stream struct {
	r    *bufio.Reader
	buf  []byte
	read int
}

func (s *stream) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b, err := s.r.ReadByte()
		if err != nil {
			if shift > 0 && errors.Is(err, io.EOF) {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		s.read++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("slimpb: varint overflow")
}

func (s *stream) tag() (protowire.Number, protowire.Type, error) {
	v, err := s.varint()
	if err != nil {
		return 0, 0, err
	}
	num, typ := protowire.DecodeTag(v)
	if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
		return 0, 0, errors.New("slimpb: invalid field number")
	}
	return num, typ, nil
}

// maxValue bounds one length-delimited value read whole (an object, the list's metadata): the
// API server limits a request body to 3 MiB and etcd a value to 1.5 MiB.
const maxValue = 64 << 20

func (s *stream) length() (int, error) {
	v, err := s.varint()
	if err != nil {
		return 0, err
	}
	if v > 1<<40 {
		return 0, errors.New("slimpb: length too large")
	}
	return int(v), nil
}

// next reads n bytes, valid until the next call.
func (s *stream) next(n int) ([]byte, error) {
	if n > maxValue {
		return nil, fmt.Errorf("slimpb: a value of %d bytes", n)
	}
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	b := s.buf[:n]
	if _, err := io.ReadFull(s.r, b); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	s.read += n
	return b, nil
}

// limited is a message of left bytes in s (the list within the envelope).
type limited struct {
	s    *stream
	left int
	// listed, if set, is told a list's metadata once it is decoded.
	listed func(metav1.ListMeta)
}

// listMeta is the ListMeta of a list of this package's kinds.
func listMeta(list runtime.Object) metav1.ListMeta {
	m, ok := reflect.ValueOf(list).Elem().FieldByName("ListMeta").Interface().(metav1.ListMeta)
	if !ok {
		return metav1.ListMeta{}
	}
	return m
}

// field reads the message's next field: its number and, when length-delimited, its value
// (valid until the next call); done at the end of the message.
func (l *limited) field() (num protowire.Number, v []byte, done bool, err error) {
	if l.left <= 0 {
		return 0, nil, true, nil
	}
	start := l.s.read
	num, typ, err := l.s.tag()
	if err == nil {
		switch typ {
		case protowire.BytesType:
			var n int
			if n, err = l.s.length(); err == nil {
				v, err = l.s.next(n)
			}
		case protowire.VarintType:
			_, err = l.s.varint()
		case protowire.Fixed32Type:
			_, err = l.s.next(4)
		case protowire.Fixed64Type:
			_, err = l.s.next(8)
		default:
			err = errWireType
		}
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	l.left -= l.s.read - start
	if err == nil && l.left < 0 {
		err = io.ErrUnexpectedEOF
	}
	if typ != protowire.BytesType {
		return 0, nil, false, err
	}
	return num, v, false, err
}
