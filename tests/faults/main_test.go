// Package faults drives the proxy through backend faults and oversized input against a real
// kube-apiserver that it stops, restarts and starts again (same port, same etcd): in a control plane
// of its own, so that no other test sees the apiserver go away.
package faults

import (
	"context"
	"os"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

var (
	env   *framework.Env
	proxy *framework.Proxy
)

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, func(ctx context.Context, e *framework.Env) error {
		return e.InstallPrivateCRDs(ctx)
	}, &env, &proxy))
}
