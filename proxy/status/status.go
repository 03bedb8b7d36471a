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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Translate translates a JSON metav1.Status in direction d: details.group is mapped, and group names in
// message and details.causes[].message are replaced. Every other member is kept as it is. It fails if data
// is not a JSON object; it does not check that data really is a Status.
func Translate(d translate.Direction, data []byte) ([]byte, error) {
	if !groupnames.Mentions(d, data) {
		return data, nil
	}
	v, err := jsonx.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("decoding Status: %w", err)
	}
	s, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decoding Status: want a JSON object, got %T", v)
	}
	if msg, ok := s["message"].(string); ok {
		s["message"] = groupnames.Replace(d, msg)
	}
	if details, ok := s["details"].(map[string]any); ok {
		if g, ok := details["group"].(string); ok {
			details["group"] = d.Group(g)
		}
		if causes, ok := details["causes"].([]any); ok {
			for _, c := range causes {
				if cause, ok := c.(map[string]any); ok {
					if msg, ok := cause["message"].(string); ok {
						cause["message"] = groupnames.Replace(d, msg)
					}
				}
			}
		}
	}
	return jsonx.Encode(s)
}

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
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(s.Code))
	_, _ = w.Write(append(body, '\n'))
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
