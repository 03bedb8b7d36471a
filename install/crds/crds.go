// Package crds installs the private CRDs (apis/private/crds) with their conversion webhook pointed at a
// running proxy. The generated CRDs of kinds that convert by hub and spoke name a placeholder service
// (system/capi-proxy, path /convert), as upstream's kustomize bases do; installation replaces its client
// configuration with the proxy's real address, a URL or a Service, and the CA bundle that signs the
// proxy's serving certificate. The proxy's install-crds command is this package on the command line:
//
//	capi-proxy install-crds --kubeconfig=admin.kubeconfig \
//	  --webhook-url=https://10.0.0.5:8443/convert --ca-bundle-file=proxy-ca.crt apis/private/crds
package crds

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// YAMLFiles expands paths into files: a file stands for itself, a directory for its *.yaml files
// (sorted) but kustomization.yaml, kustomize's own file, which is no manifest.
func YAMLFiles(paths ...string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.yaml"))
		if err != nil {
			return nil, err
		}
		sort.Strings(matches)
		for _, m := range matches {
			if filepath.Base(m) != "kustomization.yaml" {
				files = append(files, m)
			}
		}
	}
	return files, nil
}

// Read decodes every CustomResourceDefinition in files, a file being one or more YAML documents and a
// directory standing for its *.yaml files (sorted). Documents of other kinds are an error, as are fields
// a CRD does not have.
func Read(paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	err := Documents(paths, func(file string, doc []byte) error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if crd.GroupVersionKind() != apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition") {
			return fmt.Errorf("%s: a %s, not a CustomResourceDefinition", file, crd.GroupVersionKind())
		}
		out = append(out, crd)
		return nil
	})
	return out, err
}

// Documents calls fn with every non-empty YAML document of the files paths stand for (YAMLFiles), in
// order, and stops at the first error.
func Documents(paths []string, fn func(file string, doc []byte) error) error {
	files, err := YAMLFiles(paths...)
	if err != nil {
		return err
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := docs.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			if err := fn(file, doc); err != nil {
				return err
			}
		}
	}
	return nil
}

// Webhook is where the apiserver reaches the proxy's conversion webhook: exactly one of URL and Service,
// and the PEM bundle of the certificate authorities that sign the proxy's serving certificate.
type Webhook struct {
	// URL is the whole URL of the webhook, e.g. https://10.0.0.5:8443/convert.
	URL string
	// Service names a Service in front of the proxy; its Path should be "/convert".
	Service *apiextensionsv1.ServiceReference
	// CABundle is PEM; empty means the apiserver's system trust roots.
	CABundle []byte
}

// Validate checks that exactly one of URL and Service is set, and that a URL is https.
func (w Webhook) Validate() error {
	switch {
	case (w.URL == "") == (w.Service == nil):
		return errors.New("the conversion webhook needs exactly one of a URL and a service")
	case w.URL != "" && !strings.HasPrefix(w.URL, "https://"):
		return fmt.Errorf("the conversion webhook URL %q is not https: the apiserver calls webhooks over TLS only", w.URL)
	}
	return nil
}

// SetWebhook points the conversion webhook of crd at w, if crd converts by webhook; it returns whether it
// did. Other CRDs (strategy None) are left as they are.
func SetWebhook(crd *apiextensionsv1.CustomResourceDefinition, w Webhook) bool {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil {
		return false
	}
	cc := &apiextensionsv1.WebhookClientConfig{CABundle: w.CABundle}
	if w.URL != "" {
		url := w.URL
		cc.URL = &url
	} else {
		svc := *w.Service
		cc.Service = &svc
	}
	c.Webhook.ClientConfig = cc
	return true
}

// Apply creates every CRD, or updates the one of that name already there (its spec, labels and
// annotations; what others put there is kept), and waits up to timeout until each is Established.
func Apply(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	for _, crd := range crds {
		want := crd.DeepCopy()
		err := c.Create(ctx, want)
		if apierrors.IsAlreadyExists(err) {
			err = update(ctx, c, crd)
		}
		if err != nil {
			return fmt.Errorf("applying CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, c, crd.Name, timeout); err != nil {
			return err
		}
	}
	return nil
}

func update(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	existing := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(crd), existing); err != nil {
		return err
	}
	existing.Spec = crd.Spec
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for k, v := range crd.Labels {
		existing.Labels[k] = v
	}
	if existing.Annotations == nil {
		existing.Annotations = map[string]string{}
	}
	for k, v := range crd.Annotations {
		existing.Annotations[k] = v
	}
	return c.Update(ctx, existing)
}

func waitEstablished(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, nil
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}

// Write writes crds as YAML documents (for kubectl apply or a kustomization), each starting with "---".
func Write(w io.Writer, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			return err
		}
		// What the apiserver sets is no part of a manifest.
		delete(obj, "status")
		unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}
