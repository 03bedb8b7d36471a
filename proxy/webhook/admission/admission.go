// Package admission serves the admission webhooks of the private groups (Handler, at PathPrefix): it
// forwards the apiserver's AdmissionReviews of private objects, in upstream terms, to the webhook server
// of the CAPI manager or provider that owns the kind, and translates the answers back. It has the
// conversion webhook's bounds (package webhookio: read and write timeouts, a budget of bytes, turns).
// Its reviews are recorded in the capi_proxy_admission_webhook_* metrics and the capi_proxy_webhook_*
// gauges (webhook "admission"), defined in package metrics; the proxy's handler chain (server.New) also
// counts a review on the API listener in requests_total like every request, with class Admission and
// verb post.
package admission

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/internal/webhookio"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// PathPrefix starts the paths of the admission webhooks the proxy serves:
// /admission/<manager>/<upstream path>, as the generated webhook configurations
// (apis/private/webhooks) name them.
const PathPrefix = upstream.AdmissionPathPrefix

// MaxReviewBytes bounds an AdmissionReview, request or response: an object and its old version
// of up to etcd's default request limit (1.5 MiB) each, with room for the envelope.
const MaxReviewBytes = 8 << 20

// DefaultMaxConcurrentReviews is Options.MaxConcurrentReviews's default. A review
// mostly waits for the manager's webhook server; the apiserver calls admission webhooks for every
// write of a private object, and a write waits for its turn.
const DefaultMaxConcurrentReviews = 32

// DefaultMaxHeldBytes is Options.MaxHeldBytes's default: eight reviews of
// MaxReviewBytes (an AdmissionReview is a few KiB, an object and its old version).
const DefaultMaxHeldBytes = 8 * MaxReviewBytes

// Options configures a Handler.
type Options struct {
	// Servers maps a manager's name (apis/upstream.WebhookSource.Name: "cluster-api", "aws", ...) to the
	// base URL of its webhook server (https://127.0.0.1:9443); the upstream path is appended to it.
	Servers map[string]*url.URL
	// Transport carries the reviews to the webhook servers (their TLS trust); nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Metrics records every review; nil records nothing.
	Metrics *metrics.Metrics
	// MaxConcurrentReviews bounds the reviews served at once (the handler's turns, taken once a review is
	// read, held while the manager's server answers); zero means DefaultMaxConcurrentReviews.
	MaxConcurrentReviews int
	// MaxHeldBytes bounds the bytes of the reviews the handler holds at once, as read, while they wait
	// for their turn and are served; zero means DefaultMaxHeldBytes.
	MaxHeldBytes int64
}

// Handler serves the admission webhooks of the private groups: the apiserver calls it with an
// AdmissionReview (admission.k8s.io/v1) of a private object, and it answers with the answer of the
// webhook server of the CAPI manager or provider that owns the kind, in the private groups' terms. It is
// safe for concurrent use.
//
// The request's kind, resource, requestKind and requestResource are mapped to the upstream groups, and
// its object and oldObject translated at their group-carrying paths (package body, as a response of the
// backend), every other byte of the review kept (subResource, options, userInfo, dryRun, ...: they name
// no group). The review goes to the manager's server at the upstream path, with the apiserver's query
// (its timeout) and within the apiserver's deadline. Of the answer, the JSONPatch (its values and its
// pointers, along the paths of the reviewed kind), the status (details.group, message and causes'
// messages) and the warnings are translated to the private groups; the rest is kept. The apiserver's own
// errors around a denial ("admission webhook \"...\" denied the request: ...") name the private groups
// and the webhook's private name, which the proxy's response translation turns back into upstream's
// words for its clients.
//
// A webhook server that cannot be reached, does not answer in time, or answers with something that is not
// a JSON AdmissionReview makes the call fail for the apiserver too: it is answered with a metav1.Status
// (502 BadGateway, 504 GatewayTimeout, or the server's own non-200 answer passed through), and the
// apiserver applies the webhook's failurePolicy to it (Fail rejects the request, Ignore admits it), as it
// would for the webhook server itself. An unknown manager is answered 404, a method other than POST 405,
// another media type 415, a body over MaxReviewBytes 413.
//
// It has the conversion webhook's bounds (package webhookio): its body must arrive within
// webhookio.ReadTimeout and its answer be written within webhookio.WriteTimeout, what it holds of the reviews it reads is charged to
// Options.MaxHeldBytes (429 when others hold it, 413 when the review alone would), and a review
// takes one of Options.MaxConcurrentReviews turns only once read (429 when the apiserver gives
// up waiting). What a review holds while it is served is about four times its size: the review, its
// translation to the upstream groups, the server's answer (up to MaxReviewBytes) and its
// translation back.
type Handler struct {
	table   *translate.Table
	bodies  *body.Translator
	servers map[string]*url.URL
	client  *http.Client
	metrics *admissionMetrics
	limits  *webhookio.Limits
}

// New returns the admission handler for the routes of table. A proxy serves all its listeners
// with one, so that its bounds are the proxy's.
func New(table *translate.Table, o Options) *Handler {
	t := o.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	if o.MaxConcurrentReviews <= 0 {
		o.MaxConcurrentReviews = DefaultMaxConcurrentReviews
	}
	if o.MaxHeldBytes <= 0 {
		o.MaxHeldBytes = DefaultMaxHeldBytes
	}
	return &Handler{table: table, bodies: body.New(table), servers: o.Servers,
		client:  &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		metrics: newAdmissionMetrics(o.Metrics),
		limits:  webhookio.NewLimits("admission", o.MaxHeldBytes, o.MaxConcurrentReviews, o.Metrics)}
}

// reviewHead is what the handler reads of a review for routing and metrics; the review itself is never
// re-encoded from it.
type reviewHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID       string                  `json:"uid"`
		Kind      schema.GroupVersionKind `json:"kind"`
		Operation string                  `json:"operation"`
	} `json:"request"`
}

// ServeHTTP answers one AdmissionReview.
func (a *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	deadlines := a.limits.SetDeadlines(w, start)
	defer deadlines.Done()
	rest := strings.TrimPrefix(r.URL.Path, PathPrefix)
	manager, path, _ := strings.Cut(rest, "/")
	server, ok := a.servers[manager]
	if !ok || rest == r.URL.Path {
		status.NotFound(w, r)
		return
	}
	held := a.limits.NewHold()
	defer held.Release()
	l := admissionLabels{manager: manager}
	code := http.StatusOK
	defer func() { a.metrics.observe(l, code, time.Since(start)) }()
	fail := func(err error, reason string) {
		code = int(status.ToStatus(err).Code)
		if reason != "" {
			a.metrics.error(l, reason)
			klog.V(loglevel.Unusual).InfoS("Admission webhook call failed", "manager", manager, "path", path, "reason", reason, "err", err)
		}
		webhookio.WriteStatus(w, err)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "admissionreviews"}, r.Method), "")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		fail(apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
			fmt.Sprintf("the admission webhook takes an AdmissionReview as application/json, not %q", r.Header.Get("Content-Type")), 0, false), "")
		return
	}
	if r.ContentLength > MaxReviewBytes {
		fail(a.limits.BodyError(&http.MaxBytesError{Limit: MaxReviewBytes}, "AdmissionReview", MaxReviewBytes), "")
		return
	}
	reader := webhookio.NewReader(r.Body, r.ContentLength, MaxReviewBytes, held)
	in, err := reader.All()
	if err != nil {
		fail(a.limits.BodyError(err, "AdmissionReview", MaxReviewBytes), "")
		return
	}
	deadlines.BodyRead()
	var head reviewHead
	if err := json.Unmarshal(in, &head); err != nil || head.Request == nil {
		fail(apierrors.NewBadRequest(fmt.Sprintf("want an AdmissionReview with a request: %v", err)), "")
		return
	}
	route, _ := a.table.ByPrivateKind(head.Request.Kind)
	if route != nil {
		l.kind = route.Kind
	}
	l.operation = operationLabel(head.Request.Operation)

	// Past the write deadline no answer reaches the apiserver: the manager's server is not waited for.
	ctx, cancel := context.WithDeadline(r.Context(), start.Add(a.limits.WriteTimeout))
	defer cancel()
	done, ok := a.limits.Wait(ctx)
	if !ok {
		// The apiserver gave up (its webhook timeout) while the review waited for its turn.
		fail(apierrors.NewTooManyRequests("the admission webhook is busy serving other reviews", 1), "")
		return
	}
	defer done()
	out, err := a.toUpstream(in)
	if err != nil {
		fail(apierrors.NewBadRequest(fmt.Sprintf("translating the AdmissionReview to the upstream groups: %v", err)), "translation")
		return
	}
	target := server.JoinPath(path)
	target.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(out))
	if err != nil {
		fail(apierrors.NewInternalError(err), "translation")
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			fail(apierrors.NewTimeoutError(fmt.Sprintf("the %s webhook server did not answer in time: %v", manager, err), 0), "timeout")
			return
		}
		fail(apierrors.NewGenericServerResponse(http.StatusBadGateway, "post", schema.GroupResource{}, "",
			fmt.Sprintf("calling the %s webhook server: %v", manager, err), 0, false), "unreachable")
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxReviewBytes+1))
	if err != nil || len(answer) > MaxReviewBytes {
		fail(apierrors.NewGenericServerResponse(http.StatusBadGateway, "post", schema.GroupResource{}, "",
			fmt.Sprintf("reading the answer of the %s webhook server: %v", manager, err), 0, false), "bad_response")
		return
	}
	if resp.StatusCode != http.StatusOK {
		// The apiserver fails the call on any other code: let it see the server's own.
		code = resp.StatusCode
		a.metrics.error(l, "bad_response")
		if ct := resp.Header.Get("Content-Type"); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
		return
	}
	translated, err := a.toPrivate(answer, route)
	if err != nil {
		fail(apierrors.NewGenericServerResponse(http.StatusBadGateway, "post", schema.GroupResource{}, "",
			fmt.Sprintf("the %s webhook server's answer is no AdmissionReview the proxy can translate: %v", manager, err), 0, false), "bad_response")
		return
	}
	code = answerCode(translated)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(translated)
}

// toUpstream translates an AdmissionReview the apiserver sent to the upstream groups.
func (a *Handler) toUpstream(review []byte) ([]byte, error) {
	d := translate.ToUpstream
	if !groupnames.Mentions(d, review) {
		return review, nil
	}
	return jsonx.Members(review, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		if key != "request" {
			return raw, nil
		}
		return jsonx.Members(raw, func(key string, raw json.RawMessage) (json.RawMessage, error) {
			switch key {
			case "kind", "requestKind", "resource", "requestResource":
				return groupMember(d, raw)
			case "object", "oldObject":
				if isNull(raw) {
					return raw, nil
				}
				return a.bodies.Upstream(raw)
			}
			return raw, nil
		})
	})
}

// groupMember maps the "group" member of a GroupVersionKind or GroupVersionResource object.
func groupMember(d translate.Direction, raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return raw, nil
	}
	return jsonx.Members(raw, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		if key != "group" {
			return raw, nil
		}
		var g string
		if err := json.Unmarshal(raw, &g); err != nil || !d.Maps(g) {
			return raw, nil
		}
		return json.Marshal(d.Group(g))
	})
}

// toPrivate translates a webhook server's AdmissionReview answer to the private groups: the JSONPatch
// along route's paths (nil: the reviewed object is no mapped kind, only its metadata carries groups),
// the status and the warnings.
func (a *Handler) toPrivate(review []byte, route *translate.Route) ([]byte, error) {
	d := translate.ToPrivate
	var head struct {
		Response *json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(review, &head); err != nil {
		return nil, err
	}
	if head.Response == nil {
		return nil, errors.New("no response")
	}
	if !groupnames.Mentions(d, review) && !bytes.Contains(review, []byte(`"patch"`)) {
		return review, nil
	}
	paths := metadataPaths
	if route != nil {
		paths = route.Paths
	}
	return jsonx.Members(review, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		if key != "response" {
			return raw, nil
		}
		return jsonx.Members(raw, func(key string, raw json.RawMessage) (json.RawMessage, error) {
			switch key {
			case "patch":
				return patchToPrivate(d, paths, raw)
			case "status":
				if isNull(raw) {
					return raw, nil
				}
				return status.Translate(d, raw)
			case "warnings":
				if isNull(raw) {
					return raw, nil
				}
				return jsonx.Elements(raw, func(_ int, w json.RawMessage) (json.RawMessage, error) {
					var s string
					if err := json.Unmarshal(w, &s); err != nil {
						return w, nil
					}
					if t := groupnames.Replace(d, s); t != s {
						return json.Marshal(t)
					}
					return w, nil
				})
			}
			return raw, nil
		})
	})
}

// patchToPrivate translates the base64 JSONPatch of an AdmissionResponse (RFC 6902 operations on the
// upstream object) to one on the private object: the values along paths, and the pointers that address
// keys naming a group (package body's JSON patch translation).
func patchToPrivate(d translate.Direction, paths *translate.Node, raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return raw, nil
	}
	var encoded []byte // encoding/json decodes a []byte from base64
	if err := json.Unmarshal(raw, &encoded); err != nil {
		return nil, fmt.Errorf("decoding the patch: %w", err)
	}
	patch, err := body.Patch(d, paths, body.JSONPatch, encoded)
	if err != nil {
		return nil, fmt.Errorf("translating the patch: %w", err)
	}
	if bytes.Equal(patch, encoded) {
		return raw, nil
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(patch))
}

// answerCode is the metrics code of a translated answer: 200 when allowed, the status code of a denial
// (403 without one, as the apiserver reports a denial without a code).
func answerCode(review []byte) int {
	var head struct {
		Response struct {
			Allowed bool `json:"allowed"`
			Status  *struct {
				Code int `json:"code"`
			} `json:"status"`
		} `json:"response"`
	}
	if json.Unmarshal(review, &head) != nil {
		return http.StatusOK
	}
	if head.Response.Allowed {
		return http.StatusOK
	}
	if head.Response.Status != nil && head.Response.Status.Code != 0 {
		return head.Response.Status.Code
	}
	return http.StatusForbidden
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// operationLabel bounds the operation label to the admission operations.
func operationLabel(op string) string {
	switch op {
	case "CREATE", "UPDATE", "DELETE", "CONNECT":
		return op
	}
	return ""
}

// metadataPaths is the tree of an object that is not a mapped kind (a Secret owned by a Cluster): only its
// metadata can carry a mapped group.
var metadataPaths = &translate.Node{Fields: map[string]*translate.Node{"metadata": translate.ObjectMetaPaths}}
