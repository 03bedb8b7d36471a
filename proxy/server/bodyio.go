package server

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
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

// joinPath joins a backend path prefix and a request path with exactly one slash between them.
func joinPath(prefix, path string) string {
	if prefix == "" {
		return path
	}
	return strings.TrimSuffix(prefix, "/") + "/" + strings.TrimPrefix(path, "/")
}
