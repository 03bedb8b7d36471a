package main

import "testing"

func TestValidateWebhook(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    options
		ok   bool
	}{
		{"none", options{}, true},
		{"sharing the API certificate", options{webhookListen: ":9444", tlsCertFile: "c", tlsKeyFile: "k"}, true},
		{"its own certificate", options{webhookListen: ":9444", webhookTLSCertFile: "c", webhookTLSKeyFile: "k", insecureServeHTTP: true}, true},
		{"no certificate", options{webhookListen: ":9444", insecureServeHTTP: true}, false},
		{"half a certificate", options{webhookListen: ":9444", webhookTLSCertFile: "c", tlsCertFile: "c", tlsKeyFile: "k"}, false},
		{"a certificate without a listener", options{webhookTLSCertFile: "c", webhookTLSKeyFile: "k"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.validateWebhook(); (err == nil) != tc.ok {
				t.Errorf("validateWebhook() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
