package conversion

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/metricstesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/internal/webhookio"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/internal/webhooktesting"
)

// The attacks on the conversion webhook's bounds (package webhookio), against a real http.Server: slow bodies, large
// bodies, and what they hold of the budget. Waits are for a state to be reached (eventually), never for
// a time to pass.

// converted checks that an answer is a successful ConversionReview of n objects.
func converted(t *testing.T, code int, data []byte, n int) {
	t.Helper()
	var review apiextensionsv1.ConversionReview
	if code != http.StatusOK || json.Unmarshal(data, &review) != nil || review.Response == nil ||
		review.Response.Result.Status != metav1.StatusSuccess || len(review.Response.ConvertedObjects) != n {
		t.Fatalf("want %d objects converted, got %d %.300s", n, code, data)
	}
}

func held(l *webhookio.Limits) int64 { h, _ := l.Held(); return h }

// TestSlowBodiesHoldNoTurn: clients that send the headers of a review and one byte of its body, then
// nothing (a slowloris), hold none of the turns: with one turn and four of them waiting, a real review
// converts at once. Each holds its first buffer of the budget (webhookio.MinRead), not what its Content-Length
// declares; once gone, they hold nothing.
func TestSlowBodiesHoldNoTurn(t *testing.T) {
	h := newHandler(t, Options{MaxConcurrentReviews: 1})
	srv := httptest.NewServer(h)
	defer srv.Close()
	var conns []net.Conn
	for range 4 {
		conns = append(conns, webhooktesting.Slowloris(t, srv, Path, 100000, "{"))
	}
	webhooktesting.Eventually(t, "the slow reviews are read", func() bool { return held(h.limits) == 4*webhookio.MinRead })

	code, _, data := webhooktesting.PostReview(t, srv, Path, review(machineV1beta2))
	converted(t, code, data, 1)
	if got := held(h.limits); got != 4*webhookio.MinRead {
		t.Errorf("the slow reviews hold %d bytes, want %d", got, 4*webhookio.MinRead)
	}
	for _, c := range conns {
		c.Close()
	}
	webhooktesting.Eventually(t, "the slow reviews give their bytes back", func() bool { return held(h.limits) == 0 })
}

// TestSlowBodyTimesOut: a body that has not arrived within the read timeout is answered 408, and what
// its review held is given back.
func TestSlowBodyTimesOut(t *testing.T) {
	h := newHandler(t, Options{})
	h.limits.ReadTimeout = 100 * time.Millisecond
	srv := httptest.NewServer(h)
	defer srv.Close()
	conn := webhooktesting.Slowloris(t, srv, Path, 100000, `{"request":`)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(data), "did not arrive within") {
		t.Errorf("a body that does not arrive: %d %s", resp.StatusCode, data)
	}
	webhooktesting.Eventually(t, "the review gives its bytes back", func() bool { return held(h.limits) == 0 })
}

// objects returns n private v1beta2 Machines.
func objects(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strings.Replace(machineV1beta2, `"name":"m1"`, fmt.Sprintf(`"name":"m%d"`, i), 1)
	}
	return out
}

// TestBudget: a review larger than the whole budget is refused with 413; one that fits but finds the
// budget held by others with 429 and Retry-After, and converts once they are gone. A client that
// trickles a body holds at most twice what it sent (and the first buffer): the budget is charged as
// bytes arrive, not as Content-Length declares.
func TestBudget(t *testing.T) {
	h := newHandler(t, Options{MaxHeldBytes: 64 << 10})
	h.maxBody = 1 << 20
	srv := httptest.NewServer(h)
	defer srv.Close()

	large := review(objects(400)...) // about 100 KiB
	code, _, data := webhooktesting.PostReview(t, srv, Path, large)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(data), "whole budget") {
		t.Errorf("a review over the whole budget: %d %s", code, data)
	}

	sent := large[:40<<10]
	conn := webhooktesting.Slowloris(t, srv, Path, len(large), sent)
	// What it sent, but the envelope and the object it stops in, is read into objects of its own.
	webhooktesting.Eventually(t, "the slow review is read", func() bool { return held(h.limits) >= 36<<10 })
	if got := held(h.limits); got > 2*int64(len(sent))+webhookio.MinRead {
		t.Errorf("a client that sent %d bytes holds %d", len(sent), got)
	}
	small := review(objects(100)...) // about 25 KiB
	code, header, data := webhooktesting.PostReview(t, srv, Path, small)
	if code != http.StatusTooManyRequests || header.Get("Retry-After") != "1" || !strings.Contains(string(data), "budget") {
		t.Errorf("a review beside a slow one holding the budget: %d %v %s", code, header, data)
	}
	conn.Close()
	webhooktesting.Eventually(t, "the slow review gives its bytes back", func() bool { return held(h.limits) == 0 })
	code, _, data = webhooktesting.PostReview(t, srv, Path, small)
	converted(t, code, data, 100)
	if got := held(h.limits); got != 0 {
		t.Errorf("after the reviews, %d bytes held", got)
	}
	_, peak := h.limits.Held()
	if peak > h.limits.MaxHeld() {
		t.Errorf("the budget's peak %d is over its bound %d", peak, h.limits.MaxHeld())
	}
}

// TestLargeReviewHoldsItsSize: what a review holds once read, while it waits for its turn, is its
// objects (copied out of the body as read, the read buffer given back), and no more than its size
// while it is read (the buffer at most twice the largest object, 4 KiB at first); the answer is
// written object by object.
func TestLargeReviewHoldsItsSize(t *testing.T) {
	h := newHandler(t, Options{MaxConcurrentReviews: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	h.convertObject = func(ctx context.Context, obj []byte, apiVersion string) ([]byte, error) {
		if first.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
		return h.converter.Private(ctx, obj, apiVersion)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, _, data := webhooktesting.PostReview(t, srv, Path, review(machineV1beta2))
		converted(t, code, data, 1)
	}()
	<-entered
	before := held(h.limits)

	objs := objects(4000) // about 1 MiB
	body := review(objs...)
	var size int64
	for _, o := range objs {
		size += int64(len(o))
	}
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		code, _, data := webhooktesting.PostReview(t, srv, Path, body)
		converted(t, code, data, len(objs))
	}()
	webhooktesting.Eventually(t, "the large review waits for its turn", func() bool { return held(h.limits)-before == size })
	if _, peak := h.limits.Held(); peak-before > size+2*int64(len(objs[0]))+webhookio.MinRead {
		t.Errorf("reading a review of %d bytes of objects held %d at its peak", size, peak-before)
	}
	close(release)
	<-done
	<-answered
	if got := held(h.limits); got != 0 {
		t.Errorf("after the reviews, %d bytes held", got)
	}
}

// TestReviewMetricsAndGauges: the gauges of the limits return to zero once reviews are done, and a
// refused review is counted with its code.
func TestReviewMetricsAndGauges(t *testing.T) {
	m := metrics.New()
	h := newHandler(t, Options{Metrics: m, MaxHeldBytes: 16 << 10})
	srv := httptest.NewServer(h)
	defer srv.Close()
	code, _, data := webhooktesting.PostReview(t, srv, Path, review(machineV1beta2))
	converted(t, code, data, 1)
	if code, _, _ := webhooktesting.PostReview(t, srv, Path, review(objects(100)...)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a review over the budget: %d", code)
	}
	for name, want := range map[string]float64{"capi_proxy_webhook_held_bytes": 0, "capi_proxy_webhook_active_requests": 0} {
		if got := metricstesting.Value(t, m.Registry(), name, map[string]string{"webhook": "conversion"}); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := metricstesting.Value(t, m.Registry(), "capi_proxy_conversion_webhook_requests_total",
		map[string]string{"kind": "", "desired_api_version": "", "code": "413"}); got != 1 {
		t.Errorf("the 413 is counted %v times", got)
	}
	if !h.limits.Recorded() {
		t.Error("the handler records no gauges")
	}
}

// TestWriteReviewAsMarshal: the answer written object by object is the one json.Marshal makes of the
// ConversionReview, for a success and for a failure (no objects: null).
func TestWriteReviewAsMarshal(t *testing.T) {
	rv := &conversionReview{apiVersion: "apiextensions.k8s.io/v1", kind: "ConversionReview",
		request: &conversionRequest{uid: "u-<1>", desiredAPIVersion: "x/v1"}}
	for name, tc := range map[string]struct {
		objects [][]byte
		result  metav1.Status
	}{
		// Objects are written as converted; json.Marshal would escape HTML in them, as the converter's
		// json.Marshal already has.
		"success": {[][]byte{[]byte(`{"a":1}`), []byte(`{"b":"x"}`)}, metav1.Status{Status: metav1.StatusSuccess}},
		"empty":   {[][]byte{}, metav1.Status{Status: metav1.StatusSuccess}},
		"failure": {nil, metav1.Status{Status: metav1.StatusFailure, Message: `a "quoted" <message>`}},
	} {
		want := apiextensionsv1.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: rv.apiVersion, Kind: rv.kind},
			Response: &apiextensionsv1.ConversionResponse{UID: rv.request.uid, Result: tc.result}}
		if tc.objects != nil {
			want.Response.ConvertedObjects = []kruntime.RawExtension{}
			for _, o := range tc.objects {
				want.Response.ConvertedObjects = append(want.Response.ConvertedObjects, kruntime.RawExtension{Raw: o})
			}
		}
		wantJSON, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		writeReview(rec, rv, slices.Clone(tc.objects), tc.result)
		if got := rec.Body.String(); got != string(wantJSON) || rec.Header().Get("Content-Length") != fmt.Sprint(len(wantJSON)) {
			t.Errorf("%s: wrote (Content-Length %s)\n%s\nwant\n%s", name, rec.Header().Get("Content-Length"), got, wantJSON)
		}
	}
}

// TestConversionStopsWithItsCaller: a review whose caller goes away (the apiserver's timeout) stops
// converting, and gives its turn and bytes back, rather than converting for no one.
func TestConversionStopsWithItsCaller(t *testing.T) {
	h := newHandler(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	h.convertObject = func(ctx context.Context, obj []byte, apiVersion string) ([]byte, error) {
		if calls.Add(1) == 1 {
			cancel()
		}
		return obj, nil
	}
	objs := objects(10 * parallelAbove)
	rec := serve(h, ctx, review(objs...))
	if s := statusOf(t, rec); rec.Code != http.StatusGatewayTimeout || !strings.Contains(s.Message, "not converted in time") {
		t.Errorf("a review whose caller went away: %d %s", rec.Code, rec.Body)
	}
	if n := calls.Load(); n >= int64(len(objs)) {
		t.Errorf("%d of %d objects converted for a caller that went away", n, len(objs))
	}
	if got := held(h.limits); got != 0 {
		t.Errorf("%d bytes still held", got)
	}
}
