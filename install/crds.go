package install

import (
	"bytes"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/apis/private"
	"github.com/openshift/hypershift-capi-proxy/install/crds"
)

// CRDs returns the private CRDs (apis/private/crds, as make generate wrote them, embedded in this
// binary), sorted by name, with the conversion webhook of each one that converts by webhook pointed at
// the Service namespace/name on port 443, path WebhookPath, trusting caBundle (PEM; empty: the
// apiserver's system roots, or a CA injector such as OpenShift's service CA, which the annotation
// service.beta.openshift.io/inject-cabundle asks for).
func CRDs(namespace, name string, caBundle []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(private.CRDs, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	webhook := crds.Webhook{
		Service:  &apiextensionsv1.ServiceReference{Namespace: namespace, Name: name, Path: ptr.To(WebhookPath), Port: ptr.To[int32](443)},
		CABundle: caBundle,
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, file := range files {
		data, err := private.CRDs.ReadFile(file)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(bytes.TrimPrefix(data, []byte("---\n")), crd); err != nil {
			return nil, fmt.Errorf("apis/private/%s: %w", file, err)
		}
		crds.SetWebhook(crd, webhook)
		out = append(out, crd)
	}
	return out, nil
}
