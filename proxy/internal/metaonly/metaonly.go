// Package metaonly is the transform the proxy's metadata informers store objects with (client-go's
// cache.TransformFunc): of an object's metadata, only what the proxy reads of it.
//
// The informers follow every Namespace and every CustomResourceDefinition of the management cluster.
// Their metadata carries what the proxy never reads and what grows with the cluster: managedFields (an
// entry per field manager, each with the set of fields it owns), annotations (OpenShift's on every
// Namespace; on a CRD, kubectl's last-applied-configuration can hold the whole CRD), ownerReferences
// and finalizers. Stored as listed, they would stay in the heap of every proxy for as long as it runs.
package metaonly

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// NameAndLabels returns a cache.TransformFunc that keeps of a *metav1.PartialObjectMetadata (what
// client-go's metadata informer lists and watches) its TypeMeta, namespace, name, UID,
// resourceVersion and labels, in a new object that shares nothing with the decoded one, so that the
// rest is collected. Any other object is returned as it is. It is idempotent, as client-go asks of a
// transform.
func NameAndLabels() cache.TransformFunc {
	return func(obj any) (any, error) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return obj, nil
		}
		return &metav1.PartialObjectMetadata{
			TypeMeta: m.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Namespace:       m.Namespace,
				Name:            m.Name,
				UID:             m.UID,
				ResourceVersion: m.ResourceVersion,
				Labels:          m.Labels,
			},
		}, nil
	}
}
