package emit

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Placeholders of the conversion webhook the committed private CRDs name, as upstream's kustomize bases
// name a "webhook-service" in namespace "system" that each installation replaces: the proxy's
// install-crds command (or a kustomize patch) sets the real service or URL and the CA bundle. Committed
// files hold no host-specific value, so make verify stays deterministic.
const (
	ConversionServiceNamespace = "system"
	ConversionServiceName      = "capi-proxy"
	// ConversionPath is where the proxy serves its conversion webhook.
	ConversionPath = "/convert"
)

// ConversionStanzas completes the CRDs controller-gen wrote to dir (controller-gen has no marker for it;
// upstream adds it with kustomize): a CRD whose kind converts by hub and spoke gets
//
//	conversion:
//	  strategy: Webhook
//	  webhook:
//	    clientConfig: {service: {namespace: system, name: capi-proxy, path: /convert}}
//	    conversionReviewVersions: [v1]
//
// A CRD of several versions without hub and spoke keeps strategy None (no stanza), which is only correct
// when all its versions have the same schema: otherwise generation fails. The files are rewritten with
// sigs.k8s.io/yaml, which reproduces controller-gen's formatting byte for byte.
func (e *Emitter) ConversionStanzas(dir string) error {
	conversions := map[string]translate.Conversion{} // "plural.privategroup" -> hub or spoke
	for _, pkg := range e.M.Packages {
		for _, k := range pkg.Kinds {
			if k.Conversion != translate.NoConversion {
				conversions[k.Resource+"."+pkg.PrivateGroup] = k.Conversion
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(e.Root, dir, "*.yaml"))
	if err != nil {
		return err
	}
	var problems []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var crd map[string]any
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		name, _ := lookup(crd, "metadata", "name").(string)
		spec, _ := crd["spec"].(map[string]any)
		versions, _ := lookup(crd, "spec", "versions").([]any)
		if spec == nil || name == "" {
			return fmt.Errorf("%s: not a CustomResourceDefinition", file)
		}
		if _, ok := conversions[name]; !ok {
			if len(versions) > 1 && !sameSchemas(versions) {
				problems = append(problems, fmt.Sprintf("%s: %d versions with different schemas, but no version converts "+
					"by hub and spoke (upstream has neither conversion methods on its Go types nor conversion functions in a "+
					"package of apis/upstream.ConversionPackages for it): the apiserver could not convert them", name, len(versions)))
			}
			continue
		}
		spec["conversion"] = map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"clientConfig": map[string]any{"service": map[string]any{
					"namespace": ConversionServiceNamespace, "name": ConversionServiceName, "path": ConversionPath,
				}},
				"conversionReviewVersions": []any{"v1"},
			},
		}
		out, err := yaml.Marshal(crd)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := os.WriteFile(file, append([]byte("---\n"), out...), 0o644); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("CRD conversion:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// sameSchemas reports whether the CRD versions have equal openAPIV3Schemas, descriptions aside.
func sameSchemas(versions []any) bool {
	var first any
	for i, v := range versions {
		s := withoutDescriptions(lookup(v, "schema", "openAPIV3Schema"))
		if i == 0 {
			first = s
		} else if !reflect.DeepEqual(first, s) {
			return false
		}
	}
	return true
}

// withoutDescriptions returns a copy of a decoded JSON schema without "description" members.
func withoutDescriptions(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			if k != "description" {
				out[k] = withoutDescriptions(c)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = withoutDescriptions(c)
		}
		return out
	}
	return v
}

// lookup returns the value at a path of object keys, or nil.
func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
