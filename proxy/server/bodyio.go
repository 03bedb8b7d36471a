package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// readBody reads a request body of at most limit bytes. The error is an API status: 413 for a body too
// large, 400 for one that could not be read.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	_ = r.Body.Close()
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	return data, nil
}

// setBody replaces a request body and its length.
func setBody(r *http.Request, contentType string, data []byte) {
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	r.ContentLength = int64(len(data))
	r.Header.Set("Content-Length", strconv.Itoa(len(data)))
	r.Header.Set("Content-Type", contentType)
}

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
	data, err := readBody(r, s.maxBody)
	if err != nil {
		return "", err
	}
	if !mapped && !groupnames.Mentions(translate.ToPrivate, data) {
		setBody(r, r.Header.Get("Content-Type"), data)
		return body.CBOR, nil
	}
	j, err := body.CBORToJSON(data)
	if err != nil {
		return "", apierrors.NewBadRequest(err.Error())
	}
	setBody(r, body.JSON, j)
	return body.JSON, nil
}
