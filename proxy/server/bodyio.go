package server

import (
	"strings"
)

// joinPath joins a backend path prefix and a request path with exactly one slash between them.
func joinPath(prefix, path string) string {
	if prefix == "" {
		return path
	}
	return strings.TrimSuffix(prefix, "/") + "/" + strings.TrimPrefix(path, "/")
}
