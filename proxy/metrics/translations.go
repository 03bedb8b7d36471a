package metrics

// The timing of translations, for the response and request stages of package server: each call of a
// translation observed in translation_duration_seconds, labelled by the request's route.

import (
	"time"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
)

// translationLabels are the group and kind labels of translation metrics: the route's for a mapped
// resource, empty otherwise.
func translationLabels(req *classify.Request) (group, kind string) {
	if req.Class == classify.Mapped {
		return req.Route.Upstream.Group, req.Route.Kind
	}
	return "", ""
}

// TimeTranslation starts timing one translation of req's in direction (Request or Response); call the
// returned func when it is done.
func (m *Metrics) TimeTranslation(req *classify.Request, direction string) (done func()) {
	if m == nil {
		return func() {}
	}
	start := time.Now()
	group, kind := translationLabels(req)
	return func() { m.ObserveTranslation(group, kind, direction, time.Since(start)) }
}

// Timed wraps a translation of response bodies (or stream items) of req's so that each call is timed; a
// nil m returns translate as it is.
func (m *Metrics) Timed(req *classify.Request, translate func([]byte) ([]byte, error)) func([]byte) ([]byte, error) {
	if m == nil {
		return translate
	}
	return func(data []byte) ([]byte, error) {
		defer m.TimeTranslation(req, Response)()
		return translate(data)
	}
}

// TimedAppend is Timed for a translation that appends to a buffer (stream.Objects.AppendObject).
func (m *Metrics) TimedAppend(req *classify.Request, translate func(dst, data []byte) ([]byte, error)) func(dst, data []byte) ([]byte, error) {
	if m == nil {
		return translate
	}
	return func(dst, data []byte) ([]byte, error) {
		defer m.TimeTranslation(req, Response)()
		return translate(dst, data)
	}
}

// TimedAppendItem is TimedAppend for a translation that also delimits what it translates
// (stream.Objects.AppendItem). Only a call that translated is observed: after any other the item is
// translated again, and observed then, or its translation is not complete yet.
func (m *Metrics) TimedAppendItem(req *classify.Request, translate func(dst, data []byte) ([]byte, int, error)) func(dst, data []byte) ([]byte, int, error) {
	if m == nil {
		return translate
	}
	group, kind := translationLabels(req)
	return func(dst, data []byte) ([]byte, int, error) {
		start := time.Now()
		out, n, err := translate(dst, data)
		if err == nil {
			m.ObserveTranslation(group, kind, Response, time.Since(start))
		}
		return out, n, err
	}
}

// TranslationFailed counts reason, the metav1.StatusReason of the error a translation of req's in
// direction failed with.
func (m *Metrics) TranslationFailed(req *classify.Request, direction, reason string) {
	group, kind := translationLabels(req)
	m.TranslationError(group, kind, direction, reason)
}
