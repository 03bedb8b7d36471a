package main

import (
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/options"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"kubeconfig and TLS", []string{"--kubeconfig=k", "--tls-cert-file=c", "--tls-private-key-file=k"}, true},
		{"backend URL and plain HTTP", []string{"--backend-url=https://a:6443", "--backend-ca-file=ca", "--insecure-serve-http"}, true},
		{"no backend", []string{"--insecure-serve-http"}, false},
		{"two backends", []string{"--kubeconfig=k", "--backend-url=https://a", "--insecure-serve-http"}, false},
		{"CA file with a kubeconfig", []string{"--kubeconfig=k", "--backend-ca-file=ca", "--insecure-serve-http"}, false},
		{"no serving TLS", []string{"--kubeconfig=k"}, false},
		{"half the serving TLS", []string{"--kubeconfig=k", "--tls-cert-file=c"}, false},
		{"TLS and plain HTTP", []string{"--kubeconfig=k", "--tls-cert-file=c", "--tls-private-key-file=k", "--insecure-serve-http"}, false},
		{"unknown auth mode", []string{"--kubeconfig=k", "--insecure-serve-http", "--auth-mode=trust-me"}, false},
		{"sidecar on loopback", []string{"--auth-mode=sidecar", "--kubeconfig=k", "--listen=127.0.0.1:8443", "--insecure-serve-http"}, true},
		{"sidecar on localhost", []string{"--auth-mode=sidecar", "--kubeconfig=k", "--listen=localhost:8443", "--insecure-serve-http"}, true},
		{"sidecar on IPv6 loopback", []string{"--auth-mode=sidecar", "--kubeconfig=k", "--listen=[::1]:8443", "--insecure-serve-http"}, true},
		{"sidecar with the pod's service account", []string{"--auth-mode=sidecar", "--insecure-serve-http"}, true},
		{"sidecar on every interface", []string{"--auth-mode=sidecar", "--kubeconfig=k", "--listen=:8443", "--insecure-serve-http"}, false},
		{"sidecar on a pod IP", []string{"--auth-mode=sidecar", "--kubeconfig=k", "--listen=10.0.0.5:8443", "--insecure-serve-http"}, false},
		{"sidecar with a backend URL", []string{"--auth-mode=sidecar", "--backend-url=https://a", "--insecure-serve-http"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Parse into a fresh command's flags, which bind o.
			o := options.NewOptions()
			if err := newCommandFor(o).Flags().Parse(append(tc.args, "--follow-namespaces=false")); err != nil {
				t.Fatal(err)
			}
			if err := completeAndValidate(o); (err == nil) != tc.ok {
				t.Errorf("completeAndValidate(%v) = %v, want ok=%v", tc.args, err, tc.ok)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	fs := newCommand().Flags()
	if listen, _ := fs.GetString("listen"); listen != "127.0.0.1:8443" {
		t.Errorf("--listen defaults to %q", listen)
	}
	if mode, _ := fs.GetString("auth-mode"); mode != "pass-through" {
		t.Errorf("--auth-mode defaults to %q", mode)
	}
	if addr, _ := fs.GetString("metrics-listen"); addr != ":9446" {
		t.Errorf("--metrics-listen defaults to %q", addr)
	}
	if fs.Lookup("v") == nil {
		t.Error("klog's -v flag is not registered")
	}
}

func TestParseService(t *testing.T) {
	svc, err := parseService("hypershift/capi-proxy:8443")
	if err != nil || svc.Namespace != "hypershift" || svc.Name != "capi-proxy" || *svc.Port != 8443 || *svc.Path != "/convert" {
		t.Errorf("parseService = %+v, %v", svc, err)
	}
	if svc, err := parseService("ns/name"); err != nil || svc.Port != nil {
		t.Errorf("parseService without a port = %+v, %v", svc, err)
	}
	for _, bad := range []string{"name", "/name", "ns/", "ns/name:0", "ns/name:http", "ns/name:70000"} {
		if _, err := parseService(bad); err == nil {
			t.Errorf("parseService(%q) accepted it", bad)
		}
	}
}
