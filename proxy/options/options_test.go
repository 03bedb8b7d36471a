package options

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

// parse returns the options with args parsed into the flags AddFlags defines.
func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	var fss cliflag.NamedFlagSets
	o.AddFlags(&fss)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	for _, name := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[name])
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // the errors, in order
	}{
		{"kubeconfig and TLS", []string{"--kubeconfig=k", "--tls-cert-file=c", "--tls-private-key-file=k"}, nil},
		{"backend URL and plain HTTP", []string{"--backend-url=https://a:6443", "--backend-ca-file=ca", "--insecure-serve-http", "--follow-namespaces=false"}, nil},
		{"backend URL following namespaces", []string{"--backend-url=https://a:6443", "--insecure-serve-http"}, []string{
			"--follow-namespaces watches namespaces with the credentials of --kubeconfig (or the pod's service account), which --backend-url has none of: use --kubeconfig, or --follow-namespaces=false"}},
		{"no backend", []string{"--insecure-serve-http"}, []string{"one of --kubeconfig and --backend-url is required"}},
		{"CA file with a kubeconfig", []string{"--kubeconfig=k", "--backend-ca-file=ca", "--insecure-serve-http"}, []string{
			"--backend-ca-file goes with --backend-url; a kubeconfig carries its own certificate authority"}},
		{"half the serving TLS", []string{"--kubeconfig=k", "--tls-cert-file=c"}, []string{
			"--tls-cert-file and --tls-private-key-file are required (or --insecure-serve-http, for local debugging)"}},
		{"TLS and plain HTTP", []string{"--kubeconfig=k", "--tls-cert-file=c", "--tls-private-key-file=k", "--insecure-serve-http"}, []string{
			"--insecure-serve-http excludes --tls-cert-file and --tls-private-key-file"}},
		{"sidecar with the pod's service account", []string{"--auth-mode=sidecar", "--insecure-serve-http"}, nil},
		{"sidecar on a pod IP", []string{"--auth-mode=sidecar", "--kubeconfig=k", "--listen=10.0.0.5:8443", "--insecure-serve-http"}, []string{
			`--listen: listen address "10.0.0.5:8443" is not a loopback address: the sidecar mode serves the pod's own credentials and must only be reachable from inside the pod`}},
		// Every error at once, in the order of the checks.
		{"everything wrong", []string{"--auth-mode=sidecar", "--listen=:8443", "--backend-url=https://a", "--kubeconfig=k",
			"--webhook-tls-cert-file=c", "--conversion-webhook-max-held-bytes=-1", "--admission-webhook=docker=https://a", "--admission-webhook=cluster-api"}, []string{
			`--listen: listen address ":8443" is not a loopback address: the sidecar mode serves the pod's own credentials and must only be reachable from inside the pod`,
			"--backend-url carries no credentials, which the sidecar mode needs: use --kubeconfig, or neither for the pod's service account",
			"--follow-namespaces watches namespaces with the credentials of --kubeconfig (or the pod's service account), which --backend-url has none of: use --kubeconfig, or --follow-namespaces=false",
			"--kubeconfig and --backend-url are exclusive",
			"--conversion-webhook-max-held-bytes must not be negative",
			"--webhook-tls-cert-file and --webhook-tls-private-key-file go together",
			"--webhook-tls-cert-file needs --webhook-listen",
			"--tls-cert-file and --tls-private-key-file are required (or --insecure-serve-http, for local debugging)",
			`--admission-webhook "docker=https://a": no manager "docker" has webhooks (apis/private/webhooks)`,
			`--admission-webhook "cluster-api": want MANAGER=URL`,
		}},
		{"unknown auth mode and no backend", []string{"--auth-mode=trust-me", "--insecure-serve-http"}, []string{
			`--auth-mode: unknown authentication mode "trust-me", want one of [pass-through sidecar]`,
			"one of --kubeconfig and --backend-url is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range parse(t, tc.args...).Validate() {
				got = append(got, err.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Validate(%q):\n got %q\nwant %q", tc.args, got, tc.want)
			}
		})
	}
}

func TestValidateWebhook(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"none", Options{}, true},
		{"sharing the API certificate", Options{WebhookListen: ":9444", TLSCertFile: "c", TLSKeyFile: "k"}, true},
		{"its own certificate", Options{WebhookListen: ":9444", WebhookTLSCertFile: "c", WebhookTLSKeyFile: "k", InsecureServeHTTP: true}, true},
		{"no certificate", Options{WebhookListen: ":9444", InsecureServeHTTP: true}, false},
		{"half a certificate", Options{WebhookListen: ":9444", WebhookTLSCertFile: "c", TLSCertFile: "c", TLSKeyFile: "k"}, false},
		{"a certificate without a listener", Options{WebhookTLSCertFile: "c", WebhookTLSKeyFile: "k"}, false},
		{"a negative budget", Options{ConversionMaxHeldBytes: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if errs := tc.o.validateWebhook(); (len(errs) == 0) != tc.ok {
				t.Errorf("validateWebhook() = %v, want ok=%v", errs, tc.ok)
			}
		})
	}
}

func TestWebhookServingFiles(t *testing.T) {
	o := parse(t, "--tls-cert-file=api.crt", "--tls-private-key-file=api.key")
	if c, k := o.WebhookServingFiles(); c != "api.crt" || k != "api.key" {
		t.Errorf("without its own: %s, %s", c, k)
	}
	o = parse(t, "--tls-cert-file=api.crt", "--tls-private-key-file=api.key", "--webhook-tls-cert-file=w.crt", "--webhook-tls-private-key-file=w.key")
	if c, k := o.WebhookServingFiles(); c != "w.crt" || k != "w.key" {
		t.Errorf("with its own: %s, %s", c, k)
	}
}

func TestAdmissionServers(t *testing.T) {
	o := parse(t, "--admission-webhook=cluster-api=https://127.0.0.1:9443", "--admission-webhook=aws=https://127.0.0.1:9444")
	servers := o.AdmissionServers()
	if len(servers) != 2 || servers["cluster-api"].Host != "127.0.0.1:9443" || servers["aws"].Host != "127.0.0.1:9444" {
		t.Errorf("AdmissionServers() = %v", servers)
	}
	for _, bad := range [][]string{
		{"cluster-api"}, {"=https://a"}, {"docker=https://127.0.0.1:9443"}, {"cluster-api=http://127.0.0.1:9443"},
		{"cluster-api=https://"}, {"cluster-api=https://a:1", "cluster-api=https://b:1"},
	} {
		o := NewOptions()
		o.AdmissionWebhooks = bad
		if _, errs := o.admissionServers(); len(errs) != 1 {
			t.Errorf("--admission-webhook %q: errors %v, want one", bad, errs)
		}
	}
	if servers := parse(t).AdmissionServers(); servers != nil {
		t.Errorf("without the flag: %v", servers)
	}
}

// TestComplete: "0" disables the diagnostics listener, and a zero budget is the default.
func TestComplete(t *testing.T) {
	o := parse(t, "--metrics-listen=0", "--conversion-webhook-max-held-bytes=0")
	if o.MetricsListen != "" || o.ConversionMaxHeldBytes != NewOptions().ConversionMaxHeldBytes {
		t.Errorf("completed: metrics listen %q, held bytes %d", o.MetricsListen, o.ConversionMaxHeldBytes)
	}
}

// TestCompleteAcknowledgeLease: the acknowledging Lease's namespace and name come from the downward
// API's variables unless their flags say otherwise; its owner is the pod, whatever the Lease's name.
func TestCompleteAcknowledgeLease(t *testing.T) {
	t.Setenv("POD_NAME", "capi-proxy-7d9f-x2k")
	t.Setenv("POD_NAMESPACE", "hypershift")
	t.Setenv("POD_UID", "0f1e")
	o := parse(t)
	if o.AcknowledgeLeaseNamespace != "hypershift" || o.AcknowledgeLeaseName != "capi-proxy-7d9f-x2k" || o.PodName != "capi-proxy-7d9f-x2k" || o.PodUID != "0f1e" {
		t.Errorf("from the environment: lease %s/%s, pod %s (%s)", o.AcknowledgeLeaseNamespace, o.AcknowledgeLeaseName, o.PodName, o.PodUID)
	}
	o = parse(t, "--acknowledge-lease-namespace=proxies", "--acknowledge-lease-name=proxy-0")
	if o.AcknowledgeLeaseNamespace != "proxies" || o.AcknowledgeLeaseName != "proxy-0" || o.PodName != "capi-proxy-7d9f-x2k" {
		t.Errorf("flags: lease %s/%s, pod %s", o.AcknowledgeLeaseNamespace, o.AcknowledgeLeaseName, o.PodName)
	}
	t.Setenv("POD_NAME", "")
	t.Setenv("POD_NAMESPACE", "")
	if o = parse(t); o.AcknowledgeLeaseNamespace != "" || o.AcknowledgeLeaseName != "" {
		t.Errorf("neither: lease %s/%s, want none", o.AcknowledgeLeaseNamespace, o.AcknowledgeLeaseName)
	}
}

// TestFlags: the sections in --help's order, every flag with help text, and every flag a help text
// names (--name) is one of the proxy's, or one of kube-apiserver's the help says it is.
func TestFlags(t *testing.T) {
	var fss cliflag.NamedFlagSets
	NewOptions().AddFlags(&fss)
	if want := []string{"serving", "backend", "authentication", "migration", "admission", "diagnostics", "logging"}; !slices.Equal(fss.Order, want) {
		t.Errorf("sections %q, want %q", fss.Order, want)
	}
	names := map[string]bool{}
	for _, fs := range fss.FlagSets {
		fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	}
	mention := regexp.MustCompile(`--[a-z][a-z0-9-]*[a-z0-9]`)
	backends := map[string]bool{"requestheader-username-headers": true, "requestheader-group-headers": true,
		"requestheader-uid-headers": true, "requestheader-extra-headers-prefix": true}
	for _, fs := range fss.FlagSets {
		fs.VisitAll(func(f *pflag.Flag) {
			if strings.TrimSpace(f.Usage) == "" {
				t.Errorf("--%s has no help", f.Name)
			}
			for _, m := range mention.FindAllString(f.Usage, -1) {
				if n := strings.TrimPrefix(m, "--"); !names[n] && !backends[n] {
					t.Errorf("--%s's help names %s, which is no flag", f.Name, m)
				}
			}
		})
	}
}
