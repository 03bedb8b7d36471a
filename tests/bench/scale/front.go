package main

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// front is the Service in front of the proxy's replicas: a TCP forwarder on a loopback port of its own
// that sends each new connection to the current backend (switchTo), so that the fleet's clients keep one
// address while the proxy behind it is restarted, as a rolling update behind a Service does. A connection
// ends when either side closes it; the data is copied as is (TLS ends at the proxy).
type front struct {
	ln     net.Listener
	target atomic.Pointer[string]
	// open counts the connections open now.
	open atomic.Int64
	wg   sync.WaitGroup
}

func newFront() (*front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &front{ln: ln}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// url is the front's https URL.
func (f *front) url() string { return "https://" + f.ln.Addr().String() }

// switchTo sends the connections opened from now on to addr (host:port).
func (f *front) switchTo(addr string) { f.target.Store(&addr) }

func (f *front) close() {
	_ = f.ln.Close()
	f.wg.Wait()
}

func (f *front) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.pipe(c)
	}
}

func (f *front) pipe(c net.Conn) {
	defer c.Close()
	target := f.target.Load()
	if target == nil {
		return
	}
	b, err := net.Dial("tcp", *target)
	if err != nil {
		return
	}
	defer b.Close()
	f.open.Add(1)
	defer f.open.Add(-1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(b, c)
		_ = b.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(c, b)
	_ = c.Close() // ends the other copy if the client has not closed
	<-done
}
