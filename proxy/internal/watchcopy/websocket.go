package watchcopy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/wsframe"
	"github.com/openshift/hypershift-capi-proxy/proxy/stream"
)

// A watch over a websocket (classify.Request.WebSocket) takes the way of every watch of its class: the
// request is translated (path, query, Accept narrowed to JSON) and forwarded with its upgrade headers, so
// that the backend's own websocket handshake (golang.org/x/net/websocket's, in
// k8s.io/apiserver/pkg/endpoints/handlers/watch.go) decides: it refuses a request without an Origin
// header with 403, several subprotocols with 400, authenticates a bearer token carried as a
// "base64url.bearer.authorization.k8s.io." subprotocol, and answers with the client's Sec-WebSocket-Key.
// A refusal is an ordinary response and is translated as one. Once the backend has switched protocols,
// httputil.ReverseProxy joins the two connections, and NewWebSocket (put in by package server's
// translateWebSocket) puts itself between them on the backend's side: each message the backend sends is one watch event (kube-apiserver writes every encoded
// event with one websocket.Message.Send, as a text frame for JSON), translated with stream.Event as the
// events of an HTTP watch are, and sent on to the client as one text frame. The client's frames (it sends
// none but control frames: the apiserver ignores anything else) pass to the backend as they are.
//
// Ending: the backend's close frame is passed on. A backend connection that breaks off ends the client's
// websocket with a normal close frame (status 1000, what x/net/websocket sends when kube-apiserver ends a
// watch), as a broken HTTP watch ends cleanly (package server's watchBody), so that the client watches again. An event that
// cannot be translated, or a frame the proxy cannot read, is answered with an ERROR event (stream.ErrorEvent)
// and a normal close; so is a binary (protobuf or CBOR) message, which cannot be translated: the proxy
// narrows Accept to JSON, so the backend sends none.

// maxWebSocketMessage bounds one message read from the backend: far above any watch event (etcd stores
// objects of up to 1.5 MiB by default), so that a broken backend cannot make the proxy hold unbounded
// memory.
const maxWebSocketMessage = 64 << 20

// NewWebSocket returns the backend's side of a watch over a websocket as the client gets it (see above):
// conn is the upgraded backend connection (the body of the backend's 101 Switching Protocols); Read
// returns its frames with each data message, one watch event, translated by event (nil without an error
// drops the event), Write and Close are conn's. failed is told of an event that cannot be translated or
// a frame that cannot be read, broken of a backend connection that ended without a close frame. Read is
// called by one goroutine, Write by another.
func NewWebSocket(conn io.ReadWriteCloser, event func([]byte) ([]byte, error), failed, broken func(error)) io.ReadWriteCloser {
	return &webSocketWatch{conn: conn, in: bufio.NewReader(conn), event: event, failed: failed, broken: broken}
}

// webSocketWatch is the backend's side of a websocket watch as the proxy hands it to the client: Read
// returns the backend's frames with every data message translated, Write and Close are the backend
// connection's. Read is called by one goroutine, Write by another.
type webSocketWatch struct {
	conn io.ReadWriteCloser
	in   *bufio.Reader
	// event translates one event; nil without an error drops it.
	event func([]byte) ([]byte, error)
	// failed is told of an event that cannot be translated or a frame that cannot be read; broken of a
	// backend connection that ended without a close frame.
	failed, broken func(error)

	// out holds frames for the client not read yet.
	out bytes.Buffer
	// message and messageOp are the data message being put together from its fragments.
	message   []byte
	messageOp byte
	// closed is set once the last frame for the client (a close frame) is in out.
	closed bool
}

func (w *webSocketWatch) Write(p []byte) (int, error) { return w.conn.Write(p) }
func (w *webSocketWatch) Close() error                { return w.conn.Close() }

func (w *webSocketWatch) Read(p []byte) (int, error) {
	for w.out.Len() == 0 && !w.closed {
		w.next()
	}
	if w.out.Len() == 0 {
		return 0, io.EOF
	}
	return w.out.Read(p)
}

// next reads one frame from the backend and puts what the client gets for it into out.
func (w *webSocketWatch) next() {
	fin, op, payload, err := wsframe.Read(w.in, maxWebSocketMessage)
	var protoErr *wsframe.Error
	switch {
	case errors.As(err, &protoErr):
		w.fail(err)
		return
	case err != nil:
		w.broken(err)
		w.end()
		return
	}
	switch op {
	case wsframe.OpClose:
		wsframe.Write(&w.out, wsframe.OpClose, payload)
		w.closed = true
		return
	case wsframe.OpPing, wsframe.OpPong:
		wsframe.Write(&w.out, op, payload)
		return
	case wsframe.OpText, wsframe.OpBinary:
		if w.messageOp != 0 {
			w.fail(errors.New("a new websocket message began before the last one ended"))
			return
		}
		w.messageOp, w.message = op, payload
	case wsframe.OpContinuation:
		if w.messageOp == 0 {
			w.fail(errors.New("a websocket continuation frame without a message"))
			return
		}
		if len(w.message)+len(payload) > maxWebSocketMessage {
			w.fail(fmt.Errorf("a websocket message of more than %d bytes", maxWebSocketMessage))
			return
		}
		w.message = append(w.message, payload...)
	default:
		w.fail(fmt.Errorf("websocket frame with the unknown opcode %#x", op))
		return
	}
	if !fin {
		return
	}
	op, message := w.messageOp, w.message
	w.messageOp, w.message = 0, nil
	if op == wsframe.OpBinary {
		w.fail(errors.New("a binary websocket message (protobuf or CBOR), which cannot be translated"))
		return
	}
	// kube-apiserver's JSON encoder ends each event with a newline: keep what follows the event.
	event := bytes.TrimRight(message, " \t\r\n")
	out, err := w.event(event)
	switch {
	case err != nil:
		w.fail(fmt.Errorf("watch event: %w", err))
	case out != nil:
		wsframe.Write(&w.out, wsframe.OpText, append(out, message[len(event):]...))
	}
}

// fail ends the watch with an ERROR event for err and a normal close.
func (w *webSocketWatch) fail(err error) {
	w.failed(err)
	wsframe.Write(&w.out, wsframe.OpText, append(stream.ErrorEvent(err), '\n'))
	w.end()
}

// end ends the watch with a normal close.
func (w *webSocketWatch) end() {
	wsframe.Write(&w.out, wsframe.OpClose, wsframe.CloseNormal)
	w.closed = true
}
