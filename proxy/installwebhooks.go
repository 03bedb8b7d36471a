package main

import (
	"context"
	"fmt"
	"io"
	"net/url"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/install/crds"
)

// readWebhookConfigurations decodes every MutatingWebhookConfiguration and ValidatingWebhookConfiguration
// in files, a directory standing for its *.yaml files (sorted). Documents of other kinds, and fields those
// kinds do not have, are an error.
func readWebhookConfigurations(paths ...string) ([]client.Object, error) {
	var out []client.Object
	err := crds.Documents(paths, func(file string, doc []byte) error {
		var tm struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		var obj client.Object
		switch {
		case tm.APIVersion == admissionregistrationv1.SchemeGroupVersion.String() && tm.Kind == "MutatingWebhookConfiguration":
			obj = &admissionregistrationv1.MutatingWebhookConfiguration{}
		case tm.APIVersion == admissionregistrationv1.SchemeGroupVersion.String() && tm.Kind == "ValidatingWebhookConfiguration":
			obj = &admissionregistrationv1.ValidatingWebhookConfiguration{}
		default:
			return fmt.Errorf("%s: a %s %s, not an admissionregistration.k8s.io/v1 webhook configuration", file, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, obj)
		return nil
	})
	return out, err
}

// pointWebhooks points every webhook of a webhook configuration at the proxy, w: the host of w.URL (its
// path is the conversion webhook's) or w.Service, at the webhook's own path, with w.CABundle.
func pointWebhooks(obj client.Object, w crds.Webhook) error {
	var configs []*admissionregistrationv1.WebhookClientConfig
	switch c := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range c.Webhooks {
			configs = append(configs, &c.Webhooks[i].ClientConfig)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range c.Webhooks {
			configs = append(configs, &c.Webhooks[i].ClientConfig)
		}
	}
	for _, cc := range configs {
		if cc.Service == nil || cc.Service.Path == nil {
			return fmt.Errorf("webhook configuration %s: a webhook names no path of the proxy", obj.GetName())
		}
		path := *cc.Service.Path
		out := admissionregistrationv1.WebhookClientConfig{CABundle: w.CABundle}
		if w.URL != "" {
			u, err := url.Parse(w.URL)
			if err != nil {
				return fmt.Errorf("--webhook-url: %w", err)
			}
			s := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
			out.URL = &s
		} else {
			out.Service = &admissionregistrationv1.ServiceReference{Namespace: w.Service.Namespace, Name: w.Service.Name,
				Port: w.Service.Port, Path: &path}
		}
		*cc = out
	}
	return nil
}

// applyObjects creates every object, or replaces the one of that name already there.
func applyObjects(ctx context.Context, c client.Client, objs []client.Object) error {
	for _, obj := range objs {
		err := c.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			existing := obj.DeepCopyObject().(client.Object)
			if err = c.Get(ctx, client.ObjectKeyFromObject(obj), existing); err == nil {
				obj.SetResourceVersion(existing.GetResourceVersion())
				err = c.Update(ctx, obj)
			}
		}
		if err != nil {
			return fmt.Errorf("installing %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// writeObjects writes objs as YAML documents.
func writeObjects(w io.Writer, objs []client.Object) error {
	for _, obj := range objs {
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
