package discovery

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ETag returns the ETag header kube-apiserver sends with an aggregated discovery document, for data, a
// JSON apidiscovery.k8s.io v2 or v2beta1 APIGroupDiscoveryList, and false for any other document (legacy
// discovery has no ETag) or malformed JSON. kube-apiserver computes it once per document, whichever
// version it serves (aggregated.resourceDiscoveryManager.fetchFromCache): the upper-case hex SHA-512 of
// the JSON encoding of the v2 APIGroupDiscoveryList with an empty TypeMeta (aggregated.calculateETag,
// unexported), quoted (aggregated.ServeHTTPWithETag).
func ETag(data []byte) (string, bool) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return "", false
	}
	l := &apidiscoveryv2.APIGroupDiscoveryList{}
	switch tm.GroupVersionKind() {
	case apidiscoveryv2.SchemeGroupVersion.WithKind("APIGroupDiscoveryList"):
		if err := json.Unmarshal(data, l); err != nil {
			return "", false
		}
	case apidiscoveryv2beta1.SchemeGroupVersion.WithKind("APIGroupDiscoveryList"):
		beta := &apidiscoveryv2beta1.APIGroupDiscoveryList{}
		if err := json.Unmarshal(data, beta); err != nil {
			return "", false
		}
		l = v2beta1ToV2(beta)
	default:
		return "", false
	}
	l.TypeMeta = metav1.TypeMeta{}
	serialized, err := json.Marshal(l)
	if err != nil {
		return "", false
	}
	return strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(serialized))), true
}

// NotModified reports whether a request's If-None-Match names etag, as kube-apiserver compares them
// (aggregated.ServeHTTPWithETag: the whole header value equals the quoted ETag; no lists, no weak
// validators). kube-apiserver then answers 304 Not Modified without a body, with the ETag, Vary: Accept
// and Cache-Control: public headers.
func NotModified(h http.Header, etag string) bool {
	return h.Get("If-None-Match") == etag
}
