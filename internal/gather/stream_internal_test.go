package gather

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestNamespaceBefore: the API server's key order, <prefix>/<namespace>/<name>, is not the
// namespaces' own order when one name prefixes another.
func TestNamespaceBefore(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"a", "b", true},
		{"b", "a", false},
		{"a", "a", false},
		{"a-b", "a", true}, // "a-b/" < "a/": '-' < '/'
		{"a", "a-b", false},
		{"a", "a0", true}, // "a/" < "a0/": '/' < '0'
		{"a0", "a", false},
		{"a", "ab", true},
		{"kube-system", "kube", true},
		{"default", "kube-system", true},
	}
	for _, tc := range cases {
		if got := namespaceBefore(tc.a, tc.b); got != tc.want {
			t.Errorf("namespaceBefore(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	// The same order as sorting the keys themselves.
	names := []string{"a", "a-b", "a0", "ab", "b", "a-", "a--", "z9", "z-9", "z"}
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = n + "/"
	}
	sort.Strings(keys)
	sort.Slice(names, func(i, j int) bool { return namespaceBefore(names[i], names[j]) })
	for i := range names {
		if names[i]+"/" != keys[i] {
			t.Fatalf("namespaces in order %q, keys %q", names, keys)
		}
	}
}

// fakePager serves pods in pages of o.Limit, continue tokens being offsets; it tells the
// metadata before "decoding" (a delay), counts the pages in flight, and fails the page at
// failAt (an offset) when set.
type fakePager struct {
	pods     []corev1.Pod
	delay    time.Duration
	failAt   int
	mu       sync.Mutex
	inFlight int
	maxSeen  int
}

func (f *fakePager) ListPage(ctx context.Context, _ string, o metav1.ListOptions, into runtime.Object, listed func(metav1.ListMeta)) error {
	f.mu.Lock()
	f.inFlight++
	f.maxSeen = max(f.maxSeen, f.inFlight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	start, _ := strconv.Atoi(o.Continue)
	end := min(start+int(o.Limit), len(f.pods))
	l := into.(*corev1.PodList)
	if end < len(f.pods) {
		l.Continue = strconv.Itoa(end)
	}
	if listed != nil {
		listed(l.ListMeta)
	}
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	if f.failAt > 0 && start == f.failAt {
		return errors.New("connection reset")
	}
	l.Items = f.pods[start:end]
	return nil
}

// TestPipelinedPages: pages come in order and whole, the next asked for while one is read, never
// more than pagesAhead at once (plus the one the reader waits on); a failed page ends the pages
// with its error; a cancelled read returns.
func TestPipelinedPages(t *testing.T) {
	var pods []corev1.Pod
	for i := range 23 {
		pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i), Namespace: "ns"}})
	}
	r := &resource{newList: func() runtime.Object { return &corev1.PodList{} }}
	o := metav1.ListOptions{Limit: 5}

	f := &fakePager{pods: pods, delay: 20 * time.Millisecond}
	next := pipelinedPages(context.Background(), f, r, o, false)
	var names []string
	pages := 0
	for {
		l, err, more := next()
		if !more {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, p := range l.(*corev1.PodList).Items {
			names = append(names, p.Name)
		}
		time.Sleep(30 * time.Millisecond) // a slow reader: pages wait for it
	}
	if pages != 5 || len(names) != 23 || names[0] != "p00" || names[22] != "p22" || !sort.StringsAreSorted(names) {
		t.Errorf("%d pages: %v", pages, names)
	}
	if f.maxSeen < 2 || f.maxSeen > pagesAhead {
		t.Errorf("%d pages in flight at most, want 2..%d", f.maxSeen, pagesAhead)
	}

	f = &fakePager{pods: pods, delay: time.Millisecond, failAt: 10}
	next = pipelinedPages(context.Background(), f, r, o, false)
	var got []string
	for {
		_, err, more := next()
		if !more {
			t.Fatal("the pages ended without the error")
		}
		got = append(got, fmt.Sprint(err))
		if err != nil {
			break
		}
	}
	if fmt.Sprint(got) != "[<nil> <nil> connection reset]" {
		t.Errorf("pages: %v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	f = &fakePager{pods: pods, delay: time.Hour}
	next = pipelinedPages(ctx, f, r, o, false)
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err, _ := next(); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
