package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/watchcopy"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/stream"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// The server's side of a watch: a watch's answer is copied to the client by the handler itself, which
// holds no copy buffer while the watch waits (package internal/watchcopy); a watch over a websocket is
// translated frame by frame (translateWebSocket).

// watchCopyBuffer is the copy buffer of a watch, taken while an event is copied: an event of a few KB
// is copied in one read, a larger one in several (each flushed to the client).
const watchCopyBuffer = 8 << 10

// watchCopy is a watch's answer, taken from ReverseProxy (modifyWatchResponse), to be copied by the
// handler (serveWatch): body, which reads src, the backend's body, directly or through the translation.
type watchCopy struct {
	body io.ReadCloser
	src  *watchcopy.Source
}

// modifyWatchResponse is modifyResponse for a watch, whose body it takes to be copied by serveWatch: the
// backend's body is read through a watchcopy.Source, translated as any other answer (modifyResponse), and
// ReverseProxy, which then writes the response's headers, is left an empty body. A response ReverseProxy
// must handle itself (a watch over a websocket: 101 Switching Protocols) is left to it.
func modifyWatchResponse(resp *http.Response) error {
	ex := exchangeFrom(resp.Request.Context())
	if ex == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return modifyResponse(resp)
	}
	src := watchcopy.NewSource(resp.Body)
	resp.Body = src
	if err := modifyResponse(resp); err != nil {
		return err
	}
	ex.watch = &watchCopy{body: resp.Body, src: src}
	resp.Body = http.NoBody
	return nil
}

// serveWatch forwards a watch of a resource with the watches' ReverseProxy and copies its answer to the
// client (watchcopy.Copier.Copy).
func (s *server) serveWatch(w http.ResponseWriter, r *http.Request, ex *exchange) {
	defer func() {
		if ex.watch != nil { // ReverseProxy did not return
			_ = ex.watch.body.Close()
			ex.watch = nil
		}
	}()
	s.watches.ServeHTTP(w, r)
	if c := ex.watch; c != nil {
		ex.watch = nil
		s.watchCopier.Copy(w, r, c.body, c.src)
	}
}

// translateWebSocket translates the 101 Switching Protocols answer to a watch over a websocket, in place:
// its body, the upgraded backend connection, is replaced by one that translates every message the backend
// sends (watchcopy.NewWebSocket: each message one watch event, translated with stream.Event as the events
// of an HTTP watch are). upstream translates one whole object, as for an HTTP watch. A 101 to any other
// request is refused with a 500: the proxy forwards upgrade headers of no other request it translates.
func (s *server) translateWebSocket(ex *exchange, resp *http.Response, upstream func([]byte) ([]byte, error)) error {
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ex.req.WebSocket || !ok || !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		_ = resp.Body.Close()
		return apierrors.NewInternalError(fmt.Errorf("the backend switched to protocol %q for a request the proxy translates", resp.Header.Get("Upgrade")))
	}
	req := ex.req
	objects := stream.Objects{
		APIVersion: translate.ToUpstream.APIVersion,
		Object:     s.metrics.Timed(req, upstream),
		Status:     s.metrics.Timed(req, s.bodies.Upstream),
	}
	resp.Body = watchcopy.NewWebSocket(conn,
		func(event []byte) ([]byte, error) { return stream.Event(event, objects) },
		func(err error) {
			s.translationFailed(ex, metrics.Response, apierrors.NewInternalError(err))
		},
		func(err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
				klog.V(loglevel.Unusual).InfoS("The backend's websocket watch broke off; ending the client's watch", "resource", req.Resource, "err", err)
			}
		})
	return nil
}
