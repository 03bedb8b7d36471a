// Package negotiate narrows content negotiation to the encodings the proxy translates: JSON, and protobuf
// where the proxy decodes the answer (AcceptProtobuf).
//
// A Kubernetes Accept header lists media ranges with parameters that select a shape of the answer:
//
//	application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,
//	application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json
//
// Accept turns each range that kube-apiserver would answer in protobuf, CBOR or YAML into the same range
// in JSON (same parameters, so the shape asked for is kept), so that kube-apiserver picks the range it
// would pick for the client, in JSON, and answers its own 406 Not Acceptable when it can serve no range
// (Accept: text/plain). It negotiates with kube-apiserver's own function, range by range, against a model
// of the endpoint's restrictions (Endpoint). AcceptProtobuf keeps the protobuf ranges whose answers the
// proxy translates in protobuf (built-in kinds, and PartialObjectMetadata of any resource), so that
// protobuf clients (client-go for built-in kinds, controller-runtime's metadata-only watches) are
// answered as the apiserver answers them. AsksTable tells whether the answer will be a Table, which
// kube-apiserver says in the body only.
package negotiate

import (
	"mime"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
)

// Endpoint is the kind of kube-apiserver endpoint a request goes to; it decides which media ranges
// kube-apiserver can serve (its negotiation.EndpointRestrictions).
type Endpoint int

const (
	// CustomResource is a resource of a CRD (the private groups'): protobuf only for the meta.k8s.io
	// PartialObjectMetadata shapes (the CRD handler's StandardSerializers leave protobuf out), Table only
	// in JSON or YAML.
	CustomResource Endpoint = iota
	// Resource is any other resource: built-in ones serve protobuf too. Other CRDs are served as if they
	// were built-in, which accepts more, never less, than kube-apiserver does.
	Resource
	// Discovery is /api, /apis and below: legacy documents, or aggregated discovery (as=
	// APIGroupDiscoveryList in apidiscovery.k8s.io v2 or v2beta1), in any encoding.
	Discovery
)

// serializers are kube-apiserver's media types, in its order of preference (the one "*/*" gets first),
// with its default feature gates (CBORServingAndStorage, alpha, is off through v1.36: it serves no CBOR,
// and answers a client that accepts only CBOR with 406).
var serializers = []runtime.SerializerInfo{
	{MediaType: "application/json", MediaTypeType: "application", MediaTypeSubType: "json", StreamSerializer: &runtime.StreamSerializerInfo{}},
	{MediaType: "application/yaml", MediaTypeType: "application", MediaTypeSubType: "yaml"},
	{MediaType: "application/vnd.kubernetes.protobuf", MediaTypeType: "application", MediaTypeSubType: "vnd.kubernetes.protobuf", StreamSerializer: &runtime.StreamSerializerInfo{}},
}

// restrictions are kube-apiserver's negotiation.EndpointRestrictions of an Endpoint, or a superset of
// them: a range they refuse, kube-apiserver refuses too, so that dropping it changes nothing it would
// pick.
type restrictions Endpoint

// AllowsMediaTypeTransform follows handlers.RequestScope's (resources) and the union of
// negotiation.DefaultEndpointRestrictions and aggregated.DiscoveryEndpointRestrictions (discovery).
func (e restrictions) AllowsMediaTypeTransform(mimeType, mimeSubType string, target *schema.GroupVersionKind) bool {
	if Endpoint(e) == Discovery {
		return target == nil || target.Group == "apidiscovery.k8s.io" && target.Kind == "APIGroupDiscoveryList" &&
			(target.Version == "v2" || target.Version == "v2beta1")
	}
	if target == nil {
		return Endpoint(e) != CustomResource || mimeSubType != "vnd.kubernetes.protobuf"
	}
	if target.GroupVersion() != metav1.SchemeGroupVersion && target.GroupVersion() != metav1beta1.SchemeGroupVersion {
		return false
	}
	switch target.Kind {
	case "Table":
		return mimeType == "application" && (mimeSubType == "json" || mimeSubType == "yaml")
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		return true
	}
	return false
}

// AllowsServerVersion is handlers.RequestScope's: the sv parameter names meta.k8s.io's version.
func (e restrictions) AllowsServerVersion(v string) bool {
	return Endpoint(e) != Discovery && v == metav1.SchemeGroupVersion.Version
}

// AllowsStreamSchema is kube-apiserver's: stream=watch only.
func (restrictions) AllowsStreamSchema(s string) bool { return s == "watch" }

// Accept returns the Accept header values as the proxy sends them on to kube-apiserver at endpoint e,
// joined with ",". kube-apiserver negotiates range by range in q order
// (negotiation.NegotiateMediaTypeOptions), and serves JSON wherever it serves protobuf, CBOR or YAML; so
// when it can serve some range, Accept keeps only the ranges it can serve, each turned into
// application/json with the same parameters (q, as, g, v, stream, ...), and kube-apiserver picks the same
// range in JSON. A range it cannot serve is never turned into one it can
// (application/vnd.kubernetes.protobuf;as=Table does not become a JSON Table). When it can serve none,
// it gets a header it refuses too, and answers its own 406 Not Acceptable: the values as they are
// (Accept: text/plain), but for protobuf, CBOR and YAML ranges, in which it would write its errors
// (see refused).
// Wildcards ("*/*", "application/*") are kept: kube-apiserver answers them in JSON, its first media
// type. No Accept at all stays empty (kube-apiserver answers JSON). A range repeating an earlier one is
// dropped.
//
//	application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json
//	-> application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json
func Accept(values []string, e Endpoint) string {
	return accept(values, e, false, false)
}

// AcceptProtobuf is Accept for a client whose protobuf answers the proxy translates (body.Translator's
// ProtobufUpstreamOf): protobuf ranges are kept as they are where kube-apiserver would answer them with
// what the proxy decodes, the meta.k8s.io PartialObjectMetadata and PartialObjectMetadataList shapes of
// any resource and, with objects (the endpoint's kinds are built-in ones the proxy's protobuf scheme
// knows), plain objects and lists; other protobuf ranges become JSON, as Accept makes them. YAML and CBOR
// ranges become JSON as in Accept. When kube-apiserver can serve no range, the protobuf ranges are sent
// as they are, and it writes its 406 Status in protobuf where it would for the client (a custom resource
// asked for in plain protobuf), which the proxy translates too.
//
//	application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json
//	-> application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json
func AcceptProtobuf(values []string, e Endpoint, objects bool) string {
	return accept(values, e, true, objects)
}

func accept(values []string, e Endpoint, protobuf, objects bool) string {
	var out []string
	seen := map[string]bool{}
	ranges := 0
	for _, value := range values {
		for _, r := range strings.Split(value, ",") {
			r = strings.TrimSpace(r)
			if r == "" {
				continue
			}
			ranges++
			options, ok := negotiation.NegotiateMediaTypeOptions(r, serializers, restrictions(e))
			if !ok {
				continue
			}
			keep := options.Accepted.MediaType == runtime.ContentTypeJSON ||
				protobuf && options.Accepted.MediaType == runtime.ContentTypeProtobuf && (objects || options.Convert != nil)
			if mediaType, params, hasParams := strings.Cut(r, ";"); !keep && !strings.Contains(mediaType, "*") {
				r = runtime.ContentTypeJSON
				if hasParams {
					r += ";" + params
				}
			}
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 && ranges > 0 {
		return refused(values, protobuf)
	}
	return strings.Join(out, ",")
}

// binary are the media types the proxy cannot translate.
var binary = map[string]bool{
	"application/vnd.kubernetes.protobuf": true,
	"application/cbor":                    true,
	"application/cbor-seq":                true,
	"application/yaml":                    true,
}

// notAcceptable is a media range every kube-apiserver endpoint refuses, the Status of its refusal
// included, which it then writes in JSON (responsewriters.WriteObjectNegotiated falls back to JSON when
// the Status itself cannot be negotiated).
const notAcceptable = "application/json;as=NotAcceptable;g=meta.k8s.io;v=v1"

// refused returns the Accept header to send for values of which kube-apiserver can serve no range: the
// ranges as the client sent them, but for the CBOR and YAML ones and, unless protobuf (the proxy
// translates protobuf answers), the protobuf ones. kube-apiserver writes the Status of a request it
// refuses early (403 Forbidden names the resource and its group) in the client's media type where it can
// (negotiation.DefaultEndpointRestrictions: a plain range), and the proxy translates only JSON and
// protobuf; when no other range is left, notAcceptable stands for them. kube-apiserver answers 406 either
// way, with the same message, but in JSON where it would have answered in a dropped media type.
func refused(values []string, protobuf bool) string {
	var out []string
	for _, value := range values {
		for _, r := range strings.Split(value, ",") {
			r = strings.TrimSpace(r)
			mediaType, _, _ := strings.Cut(r, ";")
			mediaType = strings.ToLower(strings.TrimSpace(mediaType))
			if r != "" && (!binary[mediaType] || protobuf && mediaType == runtime.ContentTypeProtobuf) {
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		return notAcceptable
	}
	return strings.Join(out, ",")
}

// AnswersYAML reports whether kube-apiserver at endpoint e answers a request with these Accept values in
// YAML (the range it picks is application/yaml): the proxy then asks for JSON (Accept) and writes the
// translation as kube-apiserver writes YAML, the YAML form of its JSON (sigs.k8s.io/yaml.JSONToYAML).
func AnswersYAML(values []string, e Endpoint) bool {
	return Answer(values, e) == "application/yaml"
}

// Answer returns the media type kube-apiserver at endpoint e answers a request with these Accept values
// in: application/json, application/yaml or application/vnd.kubernetes.protobuf (JSON for no Accept at
// all, or for one it can serve no range of, which it refuses in JSON).
func Answer(values []string, e Endpoint) string {
	if len(values) == 0 {
		return runtime.ContentTypeJSON
	}
	options, ok := negotiation.NegotiateMediaTypeOptions(strings.Join(values, ","), serializers, restrictions(e))
	if !ok {
		return runtime.ContentTypeJSON
	}
	return options.Accepted.MediaType
}

// Narrow sets the Accept header to Accept of its values (see there), and leaves a header without Accept
// as it is.
func Narrow(h http.Header, e Endpoint) {
	values := h.Values("Accept")
	if len(values) == 0 {
		return
	}
	h.Set("Accept", Accept(values, e))
}

// NarrowProtobuf sets the Accept header to AcceptProtobuf of its values (see there), and leaves a header
// without Accept as it is.
func NarrowProtobuf(h http.Header, e Endpoint, objects bool) {
	values := h.Values("Accept")
	if len(values) == 0 {
		return
	}
	h.Set("Accept", AcceptProtobuf(values, e, objects))
}

// IsProtobuf reports whether a Content-Type value is application/vnd.kubernetes.protobuf, with any
// parameters (";stream=watch" for a watch).
func IsProtobuf(contentType string) bool {
	mediaType, _ := MediaType(contentType)
	return mediaType == runtime.ContentTypeProtobuf
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

// AsksTable reports whether kube-apiserver answers a request with this Accept header (as Narrow or
// NarrowProtobuf left it) in JSON with a meta.k8s.io Table (as=Table, as kubectl get asks). It negotiates as kube-apiserver does
// (negotiation.NegotiateMediaTypeOptions: ranges in q order, the first one it can serve wins), with JSON
// as the only media type: a Table is never protobuf, and a JSON answer is to the JSON ranges. kube-apiserver answers a Table with a plain application/json Content-Type (the shape is
// named in Content-Type for aggregated discovery only: responsewriters.WriteObjectNegotiated), so the
// response alone does not say it holds a Table.
func AsksTable(accept string) bool {
	options, ok := negotiation.NegotiateMediaTypeOptions(accept, serializers[:1], restrictions(Resource))
	return ok && options.Convert != nil && options.Convert.Kind == "Table"
}
