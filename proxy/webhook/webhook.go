// Package webhook serves the proxy's webhooks, which the apiserver calls: the private CRDs' conversion
// webhook (package conversion, at conversion.Path) and the private groups' admission webhooks (package
// admission, below admission.PathPrefix), one package each; what they share, the bounds of a webhook
// request and the reader of its body, is package internal/webhookio. Mux puts them on one
// http.ServeMux, which both listeners serve: the webhook listener (--webhook-listen) as it is, the API
// listener once its handler chain classified (classify.Webhook, classify.Admission) and counted a request
// (package server's Options.Webhooks).
package webhook

import (
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/admission"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/conversion"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/internal/webhookio"
)

const (
	// ReadTimeout bounds the arrival of a webhook request's body (webhookio.ReadTimeout): the webhook
	// listener's http.Server ReadTimeout.
	ReadTimeout = webhookio.ReadTimeout
	// WriteTimeout bounds the whole of a webhook request (webhookio.WriteTimeout): the webhook listener's
	// http.Server WriteTimeout.
	WriteTimeout = webhookio.WriteTimeout
)

// Mux returns the mux of the webhooks: conv at conversion.Path and adm below admission.PathPrefix, each
// when not nil; any other path is answered 404 as kube-apiserver answers a path it does not serve
// (status.NotFound). A proxy makes one, of its one conversion.Handler and one admission.Handler, so
// that both listeners share their turns and budgets.
func Mux(conv, adm http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/", status.NotFound)
	if conv != nil {
		mux.Handle(conversion.Path, conv)
	}
	if adm != nil {
		mux.Handle(admission.PathPrefix, adm)
	}
	return mux
}
