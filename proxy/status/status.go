// Package status handles metav1.Status, the error body of every Kubernetes API response: it translates the
// Status bodies and Warning headers the backend sends, and writes the errors the proxy itself produces.
//
// A Status names its resource's group in details.group and, as free text, in message and in
// details.causes[].message (`machines.cluster.hypershift.openshift.io "m1" not found`); a Warning header
// (RFC 7234 `299 - "text"`) names it in its text (`cluster.hypershift.openshift.io/v1beta1 MachineDeployment
// is deprecated`). Group names in free text are replaced whole, see groupnames.Replace.
package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Translate translates a JSON metav1.Status in direction d: details.group is mapped, and group names in
// message and details.causes[].message are replaced. Every other member is kept as it is, in its order.
// It fails if data is not a JSON object; it does not check that data really is a Status.
func Translate(d translate.Direction, data []byte) ([]byte, error) {
	return TranslateQuoting(d, data, nil)
}

// Quote pairs a text of a request body as the proxy sent it to the backend (Sent) with the same text as
// the client sent it (Client).
type Quote struct {
	Sent, Client string
}

// TranslateQuoting is Translate for the Status answering a request whose body the proxy rewrote: where a
// message quotes the body as the backend got it (the Sent text of one of quotes, e.g. in kube-apiserver's
// "Object 'Kind' is missing in '<body>'"), the client's own text is put in its place as it is, and only the
// rest of the message is translated; a details.group that is the Sent text of a quote (the unserved group
// the proxy sent for a private one, which the apiserver names when a patch sets the apiVersion) becomes
// its Client text. Quotes are found leftmost, and longest first where several start at
// the same place.
func TranslateQuoting(d translate.Direction, data []byte, quotes []Quote) ([]byte, error) {
	if len(quotes) == 0 && !groupnames.Mentions(d, data) {
		return data, nil
	}
	// changed says whether any text changed: else the Status is returned as it came, its spacing too (a
	// Status the apiserver pretty-prints).
	changed := false
	tr := func(s string) string {
		t := replaceQuoting(d, s, quotes)
		changed = changed || t != s
		return t
	}
	group := func(s string) string {
		t := d.Group(s)
		for _, q := range quotes {
			// The whole group is one the proxy sent for the client's (translate.ToUnserved's).
			if q.Sent == s {
				t = q.Client
				break
			}
		}
		changed = changed || t != s
		return t
	}
	out, err := jsonx.Members(data, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		switch key {
		case "message":
			return mapString(raw, tr)
		case "details":
			return details(raw, group, tr)
		}
		return raw, nil
	})
	if err != nil {
		return nil, fmt.Errorf("decoding Status: %w", err)
	}
	if !changed {
		return data, nil
	}
	return out, nil
}

// replaceQuoting replaces the group names of direction d in s (groupnames.Replace), but for the quotes'
// Sent texts, each of which is replaced by its Client text.
func replaceQuoting(d translate.Direction, s string, quotes []Quote) string {
	var b strings.Builder
	for {
		at, q := -1, Quote{}
		for _, c := range quotes {
			if c.Sent == "" {
				continue
			}
			if i := strings.Index(s, c.Sent); i >= 0 && (at < 0 || i < at || i == at && len(c.Sent) > len(q.Sent)) {
				at, q = i, c
			}
		}
		if at < 0 {
			if b.Len() == 0 {
				return groupnames.Replace(d, s)
			}
			b.WriteString(groupnames.Replace(d, s))
			return b.String()
		}
		b.WriteString(groupnames.Replace(d, s[:at]))
		b.WriteString(q.Client)
		s = s[at+len(q.Sent):]
	}
}

func details(raw json.RawMessage, group, tr func(string) string) (json.RawMessage, error) {
	if !isObject(raw) {
		return raw, nil
	}
	return jsonx.Members(raw, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		switch key {
		case "group":
			return mapString(raw, group)
		case "causes":
			if !isArray(raw) {
				return raw, nil
			}
			return jsonx.Elements(raw, func(_ int, cause json.RawMessage) (json.RawMessage, error) {
				if !isObject(cause) {
					return cause, nil
				}
				return jsonx.Members(cause, func(key string, raw json.RawMessage) (json.RawMessage, error) {
					if key == "message" {
						return mapString(raw, tr)
					}
					return raw, nil
				})
			})
		}
		return raw, nil
	})
}

// mapString applies fn to a JSON string, returning raw itself where nothing changes or raw is no string.
func mapString(raw json.RawMessage, fn func(string) string) (json.RawMessage, error) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return raw, nil
	}
	t := fn(s)
	if t == s {
		return raw, nil
	}
	// Encoded as kube-apiserver encodes strings (encoding/json, which escapes '<', '>' and '&'), so that
	// a message reads byte for byte as the apiserver's ("Invalid value: \u003cnil\u003e").
	return json.Marshal(t)
}

func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }
func isArray(raw json.RawMessage) bool  { return len(raw) > 0 && raw[0] == '[' }

// Warnings translates Warning header values in place (header is http.Header["Warning"]).
func Warnings(d translate.Direction, header []string) {
	for i, w := range header {
		header[i] = groupnames.Replace(d, w)
	}
}

// Write writes err as a JSON metav1.Status with the status code and reason err carries (an
// apierrors.APIStatus, e.g. from apierrors.NewBadRequest); any other error becomes a 500 InternalError.
// Nothing may have been written to w yet.
func Write(w http.ResponseWriter, err error) {
	s := ToStatus(err)
	body, encErr := json.Marshal(s)
	if encErr != nil {
		// A metav1.Status always encodes; keep the client informed anyway.
		klog.ErrorS(encErr, "Encoding a Status")
		body = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"reason":"InternalError"}`)
		s.Code = http.StatusInternalServerError
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	h.Del("ETag")
	h.Set("Content-Type", "application/json")
	if s.Code == http.StatusForbidden {
		// kube-apiserver's Forbidden writer sets it (responsewriters.Forbidden); the Status of a refused
		// request body or of a handler's error goes without it.
		h.Set("X-Content-Type-Options", "nosniff")
	}
	setCacheControl(h)
	w.WriteHeader(int(s.Code))
	_, _ = w.Write(append(body, '\n'))
}

// NotFound answers a path that does not exist the way kube-apiserver's last handler does (net/http's
// NotFound: 404, text/plain "404 page not found"), as it answers a group, version or resource that no
// API serves: the proxy's answer for the private groups and for what no route serves in a mapped group.
func NotFound(w http.ResponseWriter, r *http.Request) {
	setCacheControl(w.Header())
	http.NotFound(w, r)
}

// setCacheControl sets the Cache-Control kube-apiserver sets on every answer that has none
// (k8s.io/apiserver's WithCacheControl filter).
func setCacheControl(h http.Header) {
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache, private")
	}
}

// ToStatus returns the metav1.Status for err, with its kind and apiVersion set and a code of at least 400.
func ToStatus(err error) metav1.Status {
	var s metav1.Status
	if api, ok := err.(apierrors.APIStatus); ok || errors.As(err, &api) {
		s = api.Status()
	} else {
		s = apierrors.NewInternalError(err).ErrStatus
	}
	s.Kind, s.APIVersion = "Status", "v1"
	if s.Status == "" {
		s.Status = metav1.StatusFailure
	}
	if s.Code < 400 {
		s.Code = http.StatusInternalServerError
	}
	return s
}
