// Package crdcache is a watch-backed, metadata-only cache of the backend's CustomResourceDefinitions,
// read with the proxy's own identity. Package convert asks it for the contract labels of a referenced
// kind's CRD (HyperShift's HostedControlPlane.hypershift.openshift.io, which its CAPI Cluster references,
// as much as a routed AWSMachine), as CAPI's contract.GetAPIVersion reads them with a GET of the CRD's
// PartialObjectMetadata from its manager's cache: here one list and one watch serve every conversion,
// instead of a request per conversion.
//
// It is client-go's metadata informer (k8s.io/client-go/metadata/metadatainformer) on
// apiextensions.k8s.io/v1 customresourcedefinitions: the proxy's identity needs get, list and watch on
// customresourcedefinitions. It holds of each CRD only its name, UID, resourceVersion and labels (package
// metaonly), never its schema, annotations or managedFields.
package crdcache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/metaonly"
)

// Resource is what the cache watches.
var Resource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Cache holds the metadata of every CustomResourceDefinition of the backend. It is safe for concurrent
// use.
type Cache struct {
	informer cache.SharedIndexInformer
	// denied is set while the backend refuses the proxy's identity the list or watch (401, 403).
	denied atomic.Bool
}

// New returns a Cache reading the backend of cfg with cfg's credentials; Start starts it.
func New(cfg *rest.Config) (*Cache, error) {
	c, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("crdcache: %w", err)
	}
	return NewForClient(c), nil
}

// NewForClient returns a Cache reading with a metadata client.
func NewForClient(c metadata.Interface) *Cache {
	// No resync: the watch delivers every change, and the cache has no handlers to repeat.
	inf := metadatainformer.NewFilteredMetadataInformer(c, Resource, metav1.NamespaceAll, 0, cache.Indexers{}, nil)
	cc := &Cache{informer: inf.Informer()}
	// Labels are all the proxy reads of a CRD (contract labels); see package metaonly.
	_ = cc.informer.SetTransform(metaonly.NameAndLabels()) // fails only once the informer has started
	_ = cc.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		denied := apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
		if denied && !cc.denied.Load() {
			klog.ErrorS(err, "The proxy's identity may not list and watch customresourcedefinitions: referenced kinds cannot be resolved for conversions")
		}
		cc.denied.Store(denied)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return cc
}

// Start lists and watches until ctx is done; it returns at once. Until the first list has arrived
// (HasSynced), Get finds nothing.
func (c *Cache) Start(ctx context.Context) {
	go c.informer.RunWithContext(ctx)
}

// HasSynced tells whether the first list has arrived.
func (c *Cache) HasSynced() bool { return c.informer.HasSynced() }

// WaitForSync waits until the first list has arrived or ctx is done, and tells which.
func (c *Cache) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced)
}

// Get returns the metadata of the CustomResourceDefinition named name ("hostedcontrolplanes.hypershift.openshift.io"),
// as last seen by the watch: its name, UID, resourceVersion and labels, nothing else.
func (c *Cache) Get(name string) (metav1.Object, bool) {
	obj, ok, err := c.informer.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	m, ok := obj.(metav1.Object)
	return m, ok
}

// Ready is a readiness check (controller-runtime's healthz.Checker): an error until the first list has
// arrived, so that no conversion fails for want of a CRD the cache has not seen yet. An identity the
// backend refuses the list (401, 403) counts as ready, as the proxy cannot do better by waiting: the error
// is logged, and referenced kinds stay unresolved (their CRDs are not found) until the
// identity is granted get, list and watch on customresourcedefinitions and the cache lists again.
func (c *Cache) Ready(*http.Request) error {
	if !c.HasSynced() && !c.denied.Load() {
		return errors.New("the CustomResourceDefinition metadata cache has not synced yet")
	}
	return nil
}
