// Package webhook serves the proxy's webhooks, which the apiserver calls: the private CRDs' conversion
// webhook (package conversion, at conversion.Path) and the private groups' admission webhooks (package
// admission, below admission.PathPrefix), one package each; what they share, the bounds of a webhook
// request and the reader of its body, is package internal/webhookio. Mux puts them on one
// http.ServeMux, which the webhook listener (--webhook-listen) serves.
package webhook

import (
	"net/http"

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

// Mux returns the mux of the webhooks: conv at conversion.Path and, when not nil, adm below
// admission.PathPrefix; any other path is 404.
func Mux(conv, adm http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(conversion.Path, conv)
	if adm != nil {
		mux.Handle(admission.PathPrefix, adm)
	}
	return mux
}
