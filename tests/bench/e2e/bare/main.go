// Command bare is the bare reverse proxy bench-e2e and bench-scale measure the capi-proxy against:
// httputil.ReverseProxy in front of kube-apiserver over HTTP/2 (trusting the backend's CA, with no
// credentials of its own: the client's Authorization header is forwarded), unbuffered, serving TLS.
// Standard library only, so that its memory is that of a minimal Go reverse proxy. It prints READY once
// it listens.
//
//	bare -backend https://127.0.0.1:6443 -backend-ca ca.crt -listen 127.0.0.1:8443 -cert tls.crt -key tls.key
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	backend := flag.String("backend", "", "URL of the backend.")
	backendCA := flag.String("backend-ca", "", "CA file of the backend.")
	listen := flag.String("listen", "127.0.0.1:0", "Address to serve on.")
	cert := flag.String("cert", "", "Serving certificate.")
	key := flag.String("key", "", "Serving key.")
	flag.Parse()
	if err := serve(*backend, *backendCA, *listen, *cert, *key); err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
}

func serve(backend, backendCA, listen, cert, key string) error {
	u, err := url.Parse(backend)
	if err != nil {
		return err
	}
	pem, err := os.ReadFile(backendCA)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.Transport = &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Println("READY")
	return (&http.Server{Handler: rp, ReadHeaderTimeout: 30 * time.Second}).ServeTLS(ln, cert, key)
}
