package slimpb_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/stsdiag/stsdiag/internal/slimpb"
)

// TestClientsetDecodesSlim: the clientset's LIST and an informer's LIST and WATCH decode pods
// slim from a server speaking protobuf; other kinds are decoded as usual.
func TestClientsetDecodesSlim(t *testing.T) {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	pod := func(name string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1", ReadinessProbe: probe}}}}
	}
	list, err := slimpb.Encode(&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.Pod{pod("db-0")}}, corev1.SchemeGroupVersion.WithKind("PodList"))
	if err != nil {
		t.Fatal(err)
	}
	// A watch frame is a bare WatchEvent (protobuf.NewRawSerializer), its object in the envelope.
	frame := func(typ string, p corev1.Pod) []byte {
		object, err := slimpb.Encode(&p, corev1.SchemeGroupVersion.WithKind("Pod"))
		if err != nil {
			t.Fatal(err)
		}
		event, err := (&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: object}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		// Length-delimited (k8s.io/apimachinery/pkg/runtime/serializer/protobuf.LengthDelimitedFramer).
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(event))), event...)
	}
	// The informer lists by a watch (WatchListClient): the initial pods, a bookmark ending them,
	// then an addition.
	bookmark := corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	stream := slices.Concat(frame("ADDED", pod("db-0")), frame("BOOKMARK", bookmark), frame("ADDED", pod("db-1")))
	cm, err := slimpb.Encode(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v1/namespaces/shop/configmaps/c":
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			_, _ = w.Write(cm)
		case r.URL.Path == "/api/v1/pods" && r.URL.Query().Get("watch") == "true":
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
			_, _ = w.Write(stream)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.URL.Path == "/api/v1/pods":
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			_, _ = w.Write(list)
		default:
			http.NotFound(w, r)
		}
	}))
	defer server.Close()
	c := protobufClientset(t, server.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || !slimmed(&pods.Items[0]) {
		t.Errorf("LIST: %+v", pods.Items)
	}
	got, err := c.CoreV1().ConfigMaps("shop").Get(ctx, "c", metav1.GetOptions{})
	if err != nil || got.Name != "c" || len(got.ManagedFields) != 1 {
		t.Errorf("a ConfigMap is decoded as usual: %+v, %v", got, err)
	}

	factory := informers.NewSharedInformerFactory(c, 0)
	informer := factory.Core().V1().Pods().Informer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	for ctx.Err() == nil && len(informer.GetStore().List()) < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	for _, obj := range informer.GetStore().List() {
		if p := obj.(*corev1.Pod); !slimmed(p) {
			t.Errorf("informer: %s not slim: %+v", p.Name, p)
		}
	}
	if n := len(informer.GetStore().List()); n != 2 {
		t.Errorf("informer holds %d pods, want the listed and the watched one", n)
	}
}

// slimmed: the pod lost its managedFields and probe, and kept its image.
func slimmed(p *corev1.Pod) bool {
	return p.ManagedFields == nil && len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Image == "app:1" &&
		p.Spec.Containers[0].ReadinessProbe == nil && p.ResourceVersion == "7"
}

// TestListPageTellsTheContinueTokenFirst: ListPage tells a page's metadata as soon as it is read,
// before the rest of the body has even been sent (the next page can be asked for meanwhile);
// the page is then decoded whole.
func TestListPageTellsTheContinueTokenFirst(t *testing.T) {
	pods := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next-page"}}
	for i := range 200 {
		pods.Items = append(pods.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%d", i), Namespace: "shop"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}})
	}
	body, err := slimpb.Encode(pods, corev1.SchemeGroupVersion.WithKind("PodList"))
	if err != nil {
		t.Fatal(err)
	}
	told := make(chan struct{})
	var restSent atomic.Bool
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		half := len(body) / 2
		_, _ = w.Write(body[:half])
		w.(http.Flusher).Flush()
		select {
		case <-told:
		case <-time.After(5 * time.Second):
		}
		restSent.Store(true)
		_, _ = w.Write(body[half:])
	}))
	defer server.Close()
	c := protobufClientset(t, server.URL)
	var got corev1.PodList
	var token string
	var early bool
	err = c.(slimpb.Pager).ListPage(context.Background(), "", metav1.ListOptions{Limit: 200}, &got, func(m metav1.ListMeta) {
		token, early = m.Continue, !restSent.Load()
		close(told)
	})
	if err != nil {
		t.Fatal(err)
	}
	if token != "next-page" || !early {
		t.Errorf("told %q, before the rest of the body: %v", token, early)
	}
	if len(got.Items) != 200 || got.Items[199].Name != "db-199" || got.Continue != "next-page" {
		t.Errorf("decoded %d pods, continue %q", len(got.Items), got.Continue)
	}
}

// protobufClientset is slimpb's clientset for a server at url, asking for protobuf.
func protobufClientset(t *testing.T, url string) kubernetes.Interface {
	t.Helper()
	cfg := &rest.Config{Host: url, ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf",
		AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json"}}
	base, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := slimpb.NewClientset(cfg, base)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
