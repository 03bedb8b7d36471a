package server

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// exchange is what the steps of one request share through its context: the classification, and the
// response step chosen for it (nil: the response is forwarded as it is).
type exchange struct {
	req     classify.Request
	respond func(*http.Response) error
	// gzip is set when the client accepts a gzip'ed answer (the proxy asks the backend for gzip itself and
	// decompresses it to translate).
	gzip bool
}

type exchangeKey struct{}

func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// withClass classifies every request and answers a request of a mapped group that no route serves with
// 404, as kube-apiserver answers an unknown resource.
func withClass(c *classify.Classifier, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := c.Classify(r)
		if req.Class == classify.Unrouted {
			gr := schema.GroupResource{Group: req.Group, Resource: req.Resource}
			status.Write(w, apierrors.NewGenericServerResponse(http.StatusNotFound, r.Method, gr, req.Name, "", 0, false))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, &exchange{req: req})))
	})
}

// withUpgrades sends connection upgrades (exec, attach, port-forward, outside the mapped groups) to
// upgrades untouched.
func withUpgrades(upgrades, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exchangeFrom(r.Context()).req.Class == classify.Upgrade {
			upgrades.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
