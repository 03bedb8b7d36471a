package admission

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/internal/webhookio"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/internal/webhooktesting"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// The attacks on the admission webhook's bounds (package webhookio), against a real http.Server. Waits
// are for a state to be reached (webhooktesting.Eventually), never for a time to pass.

func held(l *webhookio.Limits) int64 { h, _ := l.Held(); return h }

// machineV1beta2 is a private v1beta2 Machine.
const machineV1beta2 = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m1","namespace":"ns"},` +
	`"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},` +
	`"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"m"}}}`

// admissionManager is a manager's webhook server that allows every review, echoing its uid.
func admissionManager(t *testing.T) *url.URL {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		_ = json.NewDecoder(r.Body).Decode(&review)
		_, _ = fmt.Fprintf(w, `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":%q,"allowed":true}}`, review.Request.UID)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

const admissionReview = `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u1",` +
	`"kind":{"group":"cluster.hypershift.openshift.io","version":"v1beta2","kind":"Machine"},` +
	`"resource":{"group":"cluster.hypershift.openshift.io","version":"v1beta2","resource":"machines"},` +
	`"name":"m1","namespace":"ns","operation":"CREATE","userInfo":{"username":"alice"},"object":` + machineV1beta2 + `}}`

// TestBounds: the admission webhook has the conversion webhook's bounds (package webhookio). Slow bodies hold no
// turn (with one turn and four of them waiting, a real review is answered), hold their first buffer
// only, and time out with 408; a review over the whole budget is 413, one beside others holding it 429.
func TestBounds(t *testing.T) {
	a := New(translate.NewTable(routes.Routes), Options{
		Servers: map[string]*url.URL{"cluster-api": admissionManager(t)}, MaxConcurrentReviews: 1, MaxHeldBytes: 64 << 10})
	srv := httptest.NewServer(a)
	defer srv.Close()
	path := PathPrefix + "cluster-api/validate-cluster-x-k8s-io-v1beta2-machine"

	var conns []net.Conn
	for range 4 {
		conns = append(conns, webhooktesting.Slowloris(t, srv, path, 100000, "{"))
	}
	webhooktesting.Eventually(t, "the slow reviews are read", func() bool { return held(a.limits) == 4*webhookio.MinRead })
	code, _, data := webhooktesting.PostReview(t, srv, path, admissionReview)
	if code != http.StatusOK || !strings.Contains(string(data), `"allowed":true`) {
		t.Fatalf("a review beside slow ones: %d %s", code, data)
	}
	for _, c := range conns {
		c.Close()
	}
	webhooktesting.Eventually(t, "the slow reviews give their bytes back", func() bool { return held(a.limits) == 0 })

	large := admissionReview[:len(admissionReview)-2] + `,"padding":"` + strings.Repeat("x", 100<<10) + `"}}`
	code, _, data = webhooktesting.PostReview(t, srv, path, large)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(data), "whole budget") {
		t.Errorf("a review over the whole budget: %d %s", code, data)
	}
	// 20 KiB sent: its buffer has doubled to 32 KiB, and waits for the rest.
	conn := webhooktesting.Slowloris(t, srv, path, len(large), large[:20<<10])
	webhooktesting.Eventually(t, "the slow review is read", func() bool { return held(a.limits) == 32<<10 })
	padded := admissionReview[:len(admissionReview)-2] + `,"padding":"` + strings.Repeat("x", 30<<10) + `"}}`
	if code, header, data := webhooktesting.PostReview(t, srv, path, padded); code != http.StatusTooManyRequests || header.Get("Retry-After") != "1" {
		t.Errorf("a review beside a slow one holding the budget: %d %v %s", code, header, data)
	}
	conn.Close()
	webhooktesting.Eventually(t, "the slow review gives its bytes back", func() bool { return held(a.limits) == 0 })
	if code, _, data := webhooktesting.PostReview(t, srv, path, padded); code != http.StatusOK {
		t.Errorf("the review once the budget is free: %d %s", code, data)
	}

	a.limits.ReadTimeout = 100 * time.Millisecond
	conn = webhooktesting.Slowloris(t, srv, path, 100000, "{")
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("a body that does not arrive: %d", resp.StatusCode)
	}
}

// TestGauges: the handler's bounds are recorded in the capi_proxy_webhook_* gauges.
func TestGauges(t *testing.T) {
	a := New(translate.NewTable(routes.Routes), Options{Metrics: metrics.New()})
	if !a.limits.Recorded() {
		t.Error("the handler records no gauges")
	}
}
