package framework

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// CreateNamespaceInput is a namespace to create for one test.
type CreateNamespaceInput struct {
	// Client creates it, straight on the backend (the serving label is the migration's to write:
	// InstallServingPolicy lets system:masters do it).
	Client kubernetes.Interface
	// Name is the namespace's.
	Name string
	// Labels are set on it (serving.Label: serving.Upstream, for a namespace served from the upstream
	// groups).
	Labels map[string]string
}

// CreateNamespace creates the namespace and deletes it when the test ends, without waiting for the
// deletion to finish. A create that fails stops the test.
func CreateNamespace(ctx context.Context, t testing.TB, in CreateNamespaceInput) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.Name, Labels: in.Labels}}
	if _, err := in.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Client.CoreV1().Namespaces().Delete(context.Background(), in.Name, metav1.DeleteOptions{})
	})
}

// WaitForServedInput is an object a proxy serves once it follows a namespace's serving label.
type WaitForServedInput struct {
	// Getter reads through the proxy.
	Getter dynamic.Interface
	// Resource, Namespace and Name are the object's: one that exists only in the groups the namespace
	// is to be served from (created straight in the platform's upstream CRD, for serving.Upstream).
	Resource  schema.GroupVersionResource
	Namespace string
	Name      string
	// Timeout bounds the wait; zero is a minute (the proxy's namespace informer on a busy machine).
	Timeout time.Duration
}

// WaitForServed waits until a get of the object through the proxy succeeds: the proxy's informer has
// seen the namespace's label and serves it from the groups that hold the object. It stops the test
// when the wait ends first.
func WaitForServed(ctx context.Context, t testing.TB, in WaitForServedInput) {
	t.Helper()
	timeout := in.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := in.Getter.Resource(in.Resource).Namespace(in.Namespace).Get(ctx, in.Name, metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("%s %s/%s is not served through the proxy: %v", in.Resource.Resource, in.Namespace, in.Name, err)
	}
}
