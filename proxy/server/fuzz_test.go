package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/server"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// FuzzRequest sends arbitrary requests (method, path, media type, body) through the whole proxy with
// the generated route table, to a backend that accepts anything. The proxy never panics, and every
// request it answers itself, without reaching the backend, is answered with a 4xx Status: malformed
// input is the client's fault, never the proxy's.
func FuzzRequest(f *testing.F) {
	const machines = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines"
	for _, seed := range []struct{ method, target, contentType, body string }{
		{"POST", machines, "application/json", `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m"},"spec":{"clusterName":"c","infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachine","name":"m"}}}`},
		{"PUT", machines + "/m/status", "application/yaml", "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata: {name: m}\n"},
		{"PATCH", machines + "/m", "application/merge-patch+json", `{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}}`},
		{"PATCH", machines + "/m", "application/json-patch+json", `[{"op":"add","path":"/metadata/ownerReferences/0","value":{"apiVersion":"cluster.x-k8s.io/v1beta2"}}]`},
		{"PATCH", machines + "/m?fieldManager=x&force=true", "application/apply-patch+yaml", "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\n"},
		{"PATCH", machines + "/m/scale", "application/merge-patch+json", `{"spec":{"replicas":1}}`},
		{"POST", "/api/v1/namespaces/ns/secrets", "application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]}}`},
		{"POST", "/api/v1/namespaces/ns/secrets", "application/vnd.kubernetes.protobuf", "k8s\x00\n\x0c\n\x02v1\x12\x06Secret\x12\x00cluster.x-k8s.io"},
		{"POST", machines, "application/vnd.kubernetes.protobuf", "k8s\x00"},
		{"POST", machines, "application/json", `{"apiVersion":"cluster.x-k8s.io/v1beta2",`},
		{"POST", machines + "?fieldValidation=Strict", "application/json", `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","spec":{"nope":1}}`},
		{"DELETE", machines + "/m", "application/json", `{"kind":"DeleteOptions"}`},
		{"GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/widgets", "", ""},
		{"GET", "/apis/cluster.x-k8s.io", "", ""},
		{"BREW", machines, "text/plain", "x"},
	} {
		f.Add(seed.method, seed.target, seed.contentType, []byte(seed.body))
	}

	var reached atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success","code":200}`)
	}))
	defer backend.Close()
	h, err := server.New(server.Options{Backend: &rest.Config{Host: backend.URL}, Routes: translate.NewTable(routes.Routes)})
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, method, target, contentType string, body []byte) {
		if strings.ContainsAny(contentType, "\r\n") {
			return
		}
		raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", method, target, contentType, len(body))
		r, err := http.ReadRequest(bufio.NewReader(io.MultiReader(strings.NewReader(raw), bytes.NewReader(body))))
		if err != nil {
			return // the HTTP server answers 400 itself
		}
		before := reached.Load()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if reached.Load() != before {
			return // the backend answered
		}
		if rec.Code == http.StatusNotFound && rec.Body.String() == "404 page not found\n" {
			return // a path no API serves, answered as kube-apiserver answers it
		}
		var s metav1.Status
		if rec.Code < 400 || rec.Code >= 500 || json.Unmarshal(rec.Body.Bytes(), &s) != nil || s.Kind != "Status" || int(s.Code) != rec.Code {
			t.Errorf("%s %s (%s, %q): the proxy answered %d %q, want a 4xx Status", method, target, contentType, body, rec.Code, rec.Body)
		}
	})
}
