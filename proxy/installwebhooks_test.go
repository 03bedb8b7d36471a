package main

import (
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/openshift/hypershift-capi-proxy/install/crds"
	"github.com/openshift/hypershift-capi-proxy/proxy/options"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// TestPointWebhooks points the generated webhook configurations at the proxy: the host of the URL or the
// service, at each webhook's own path.
func TestPointWebhooks(t *testing.T) {
	configs, err := readWebhookConfigurations(filepath.Join("..", "apis", "private", "webhooks", "kubeadm-control-plane.yaml"))
	if err != nil || len(configs) != 2 {
		t.Fatalf("%d configurations, %v", len(configs), err)
	}
	if err := pointWebhooks(configs[0], crds.Webhook{URL: "https://10.0.0.5:8443/convert", CABundle: []byte("ca")}); err != nil {
		t.Fatal(err)
	}
	mutating := configs[0].(*admissionregistrationv1.MutatingWebhookConfiguration)
	cc := mutating.Webhooks[0].ClientConfig
	if cc.URL == nil || *cc.URL != "https://10.0.0.5:8443/admission/kubeadm-control-plane/mutate-controlplane-cluster-x-k8s-io-v1beta2-kubeadmcontrolplane" ||
		cc.Service != nil || string(cc.CABundle) != "ca" {
		t.Errorf("client config %+v", cc)
	}
	port := int32(9443)
	if err := pointWebhooks(configs[1], crds.Webhook{Service: &apiextensionsv1.ServiceReference{Namespace: "hcp", Name: "capi-proxy", Port: &port}}); err != nil {
		t.Fatal(err)
	}
	for _, w := range configs[1].(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks {
		svc := w.ClientConfig.Service
		if svc == nil || svc.Namespace != "hcp" || svc.Name != "capi-proxy" || *svc.Port != 9443 ||
			!strings.HasPrefix(*svc.Path, "/admission/kubeadm-control-plane/validate-") {
			t.Errorf("%s: %+v", w.Name, svc)
		}
	}
}

func TestAdmissionFlags(t *testing.T) {
	table := translate.NewTable(routes.Routes)
	for _, tc := range []struct {
		name  string
		flags []string
		ok    bool
	}{
		{"two managers", []string{"cluster-api=https://127.0.0.1:9443", "aws=https://127.0.0.1:9444"}, true},
		{"no URL", []string{"cluster-api"}, false},
		{"unknown manager", []string{"docker=https://127.0.0.1:9443"}, false},
		{"plain HTTP", []string{"cluster-api=http://127.0.0.1:9443"}, false},
		{"twice", []string{"cluster-api=https://a:1", "cluster-api=https://b:1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options.NewOptions()
			o.Kubeconfig, o.InsecureServeHTTP = "k", true
			o.AdmissionWebhooks = tc.flags
			if errs := o.Validate(); (len(errs) == 0) != tc.ok {
				t.Fatalf("Validate(%v) = %v, want ok=%v", tc.flags, errs, tc.ok)
			}
			if !tc.ok {
				return
			}
			h, err := admissionWebhooks(o, table, nil)
			if err != nil || h == nil {
				t.Errorf("admissionWebhooks(%v) = %v, %v", tc.flags, h, err)
			}
		})
	}
}
