//go:build tools

// Package lint pins golangci-lint in a module of its own, so that its dependencies never reach the main
// go.mod or controller-gen's (hack/tools). make lint builds it into bin/ and runs it with .golangci.yml.
package lint

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)
