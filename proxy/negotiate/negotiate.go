// Package negotiate narrows content negotiation to JSON, the only encoding the proxy translates.
//
// A Kubernetes Accept header lists media ranges with parameters that select a shape of the answer:
//
//	application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,
//	application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json
//
// JSONAccept keeps the JSON ranges with their parameters (so the shape the client asked for is kept) and
// drops the rest (protobuf, CBOR, YAML).
package negotiate

import (
	"mime"
	"strings"
)

// JSONAccept returns the JSON media ranges of the Accept header values, in their order and with their
// parameters, joined with ","; "*/*" and "application/*" are kept too (kube-apiserver answers them in
// JSON). If none is left it returns "application/json".
func JSONAccept(accept []string) string {
	var kept []string
	for _, value := range accept {
		for _, r := range strings.Split(value, ",") {
			r = strings.TrimSpace(r)
			mediaType, _, _ := strings.Cut(r, ";")
			switch strings.ToLower(strings.TrimSpace(mediaType)) {
			case "application/json", "application/*", "*/*":
				kept = append(kept, r)
			}
		}
	}
	if len(kept) == 0 {
		return "application/json"
	}
	return strings.Join(kept, ",")
}

// MediaType returns the lower-case media type of a Content-Type value, without parameters, and its
// parameters (nil if there are none or the value does not parse).
func MediaType(contentType string) (string, map[string]string) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mediaType, _, _ = strings.Cut(contentType, ";")
		return strings.ToLower(strings.TrimSpace(mediaType)), nil
	}
	return mediaType, params
}

// IsJSON reports whether a Content-Type value is application/json, with any parameters.
func IsJSON(contentType string) bool {
	mediaType, _ := MediaType(contentType)
	return mediaType == "application/json"
}

// AsksBinary reports whether the Accept header values name protobuf or CBOR, which the proxy cannot
// translate.
func AsksBinary(accept []string) bool {
	for _, value := range accept {
		v := strings.ToLower(value)
		if strings.Contains(v, "protobuf") || strings.Contains(v, "cbor") {
			return true
		}
	}
	return false
}

// AsksTable reports whether an Accept header value asks for the meta.k8s.io Table shape (as=Table), as
// kubectl get does. kube-apiserver answers it with a plain application/json Content-Type, so the response
// alone does not say it holds a Table.
func AsksTable(accept string) bool {
	for _, r := range strings.Split(accept, ",") {
		_, params, _ := strings.Cut(r, ";")
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(p, "=")
			if strings.TrimSpace(k) == "as" && strings.TrimSpace(v) == "Table" {
				return true
			}
		}
	}
	return false
}
