package server

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// yamlToJSON converts a YAML body to JSON; a JSON body is returned as it is.
func yamlToJSON(mediaType string, data []byte) ([]byte, error) {
	if mediaType != body.YAML {
		return data, nil
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("decoding YAML: %w", err)
	}
	return j, nil
}

// unsupportedMediaType is the 415 the proxy answers for a body it cannot translate.
func unsupportedMediaType(got string, supported ...string) error {
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
		fmt.Sprintf("the body of type %q cannot be translated, supported types: %s", got, strings.Join(supported, ", ")), 0, false)
}

// joinPath joins a backend path prefix and a request path with exactly one slash between them.
func joinPath(prefix, path string) string {
	if prefix == "" {
		return path
	}
	return strings.TrimSuffix(prefix, "/") + "/" + strings.TrimPrefix(path, "/")
}

// transcodeCBOR replaces a CBOR request body by its JSON form when it must be translated: always for a
// mapped resource, else when it names a mapped group. It returns the body's media type afterwards. The
// error is an API status: 400 for a body that is not one CBOR object.
func (s *server) transcodeCBOR(r *http.Request, mapped bool) (string, error) {
	data, err := body.ReadRequest(r, s.maxBody)
	if err != nil {
		return "", err
	}
	if !mapped && !groupnames.Mentions(translate.ToPrivate, data) {
		body.SetRequest(r, r.Header.Get("Content-Type"), data)
		return body.CBOR, nil
	}
	j, err := body.CBORToJSON(data)
	if err != nil {
		return "", apierrors.NewBadRequest(err.Error())
	}
	body.SetRequest(r, body.JSON, j)
	return body.JSON, nil
}
