package emit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// WebhooksDir is where the private admission webhook configurations are written, relative to the
// repository root.
const WebhooksDir = "apis/private/webhooks"

// WebhookConfigurationPrefix starts the name of every generated webhook configuration:
// <prefix><source name>-mutating and -validating.
const WebhookConfigurationPrefix = "hypershift-capi-"

// Webhooks writes apis/private/webhooks/<name>.yaml for every webhook source: the manifest's
// MutatingWebhookConfiguration and ValidatingWebhookConfiguration, each webhook with
//
//   - its rules' upstream groups mapped to the private ones, keeping only the resources a private CRD
//     serves (a webhook left with no rule is dropped: no private object would ever reach it);
//   - its name's upstream group suffix mapped ("default.machine.cluster.x-k8s.io" ->
//     "default.machine.cluster.hypershift.openshift.io"), so that it is unique beside upstream's own;
//   - its client configuration pointing at the proxy's placeholder service (ConversionServiceNamespace/
//     ConversionServiceName, as the CRDs' conversion webhook), at upstream.AdmissionPathPrefix + name +
//     the upstream path, which installation replaces with the proxy's real address;
//   - everything else (failurePolicy, sideEffects, matchPolicy, timeoutSeconds, admissionReviewVersions,
//     selectors, matchConditions, reinvocationPolicy) as upstream wrote it.
//
// module resolves a module path to the version the build uses. A manifest holding anything but these two
// kinds, or a webhook without a service path, fails the run.
func (e *Emitter) Webhooks(sources []upstream.WebhookSource, module func(path string) (Module, error)) error {
	served := sets.New[string]() // "<resource>.<upstream group>"
	for _, p := range e.M.Packages {
		for _, k := range p.Kinds {
			served.Insert(k.Resource + "." + p.Group)
		}
	}
	dir := filepath.Join(e.Root, WebhooksDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, src := range sources {
		m, err := module(src.Module)
		if err != nil {
			return fmt.Errorf("webhooks %s: %w", src.Name, err)
		}
		where := fmt.Sprintf("%s@%s %s", m.Path, m.Version, src.File)
		data, err := os.ReadFile(filepath.Join(m.Dir, src.File))
		if err != nil {
			return fmt.Errorf("webhooks %s: %w", src.Name, err)
		}
		docs, err := yamlDocuments(data)
		if err != nil {
			return fmt.Errorf("webhooks %s: %s: %w", src.Name, where, err)
		}
		var out [][]byte
		for _, doc := range docs {
			var tm struct{ Kind string }
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				return fmt.Errorf("webhooks %s: %s: %w", src.Name, where, err)
			}
			var obj any
			switch tm.Kind {
			case "MutatingWebhookConfiguration":
				in := &admissionregistrationv1.MutatingWebhookConfiguration{}
				if err := yaml.UnmarshalStrict(doc, in); err != nil {
					return fmt.Errorf("webhooks %s: %s: %w", src.Name, where, err)
				}
				var kept []admissionregistrationv1.MutatingWebhook
				kept, err = privateWebhooks(src.Name, in.Webhooks, served, func(w *admissionregistrationv1.MutatingWebhook) webhookParts {
					return webhookParts{&w.Name, &w.ClientConfig, &w.Rules}
				})
				if len(kept) > 0 {
					obj = &admissionregistrationv1.MutatingWebhookConfiguration{TypeMeta: in.TypeMeta,
						ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigurationPrefix + src.Name + "-mutating"}, Webhooks: kept}
				}
			case "ValidatingWebhookConfiguration":
				in := &admissionregistrationv1.ValidatingWebhookConfiguration{}
				if err := yaml.UnmarshalStrict(doc, in); err != nil {
					return fmt.Errorf("webhooks %s: %s: %w", src.Name, where, err)
				}
				var kept []admissionregistrationv1.ValidatingWebhook
				kept, err = privateWebhooks(src.Name, in.Webhooks, served, func(w *admissionregistrationv1.ValidatingWebhook) webhookParts {
					return webhookParts{&w.Name, &w.ClientConfig, &w.Rules}
				})
				if len(kept) > 0 {
					obj = &admissionregistrationv1.ValidatingWebhookConfiguration{TypeMeta: in.TypeMeta,
						ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigurationPrefix + src.Name + "-validating"}, Webhooks: kept}
				}
			default:
				return fmt.Errorf("webhooks %s: %s holds a %q, want webhook configurations", src.Name, where, tm.Kind)
			}
			if err != nil {
				return fmt.Errorf("webhooks %s: %s: %w", src.Name, where, err)
			}
			if obj == nil {
				continue
			}
			body, err := yaml.Marshal(obj)
			if err != nil {
				return err
			}
			// A manifest, not an object read back: drop the empty creationTimestamp.
			out = append(out, bytes.ReplaceAll(body, []byte("  creationTimestamp: null\n"), nil))
		}
		if len(out) == 0 {
			return fmt.Errorf("webhooks %s: %s has no webhook for a kind a private CRD serves", src.Name, where)
		}
		header := fmt.Sprintf("# Code generated by hypershift-capi-proxy/generator from %s (apis/upstream.Webhooks). DO NOT EDIT.\n"+
			"# Its webhooks on the private groups, served by the proxy at %s%s/<upstream path>, which forwards them to\n"+
			"# the %s manager's webhook server (--admission-webhook=%s=<URL>).\n",
			where, upstream.AdmissionPathPrefix, src.Name, src.Name, src.Name)
		path := filepath.Join(dir, src.Name+".yaml")
		content := append([]byte(header), bytes.Join(out, []byte("---\n"))...)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// webhookParts are the fields of a webhook the private groups change, shared by the mutating and
// validating types.
type webhookParts struct {
	name  *string
	cc    *admissionregistrationv1.WebhookClientConfig
	rules *[]admissionregistrationv1.RuleWithOperations
}

// privateWebhooks rewrites each of webhooks for the private groups (privateWebhook) and returns those
// with a rule left, in order.
func privateWebhooks[W any](source string, webhooks []W, served sets.Set[string], parts func(*W) webhookParts) ([]W, error) {
	var out []W
	for i := range webhooks {
		p := parts(&webhooks[i])
		keep, err := privateWebhook(source, p.name, p.cc, p.rules, served)
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, webhooks[i])
		}
	}
	return out, nil
}

// privateWebhook rewrites one webhook (its name, client configuration and rules) for the private groups,
// and tells whether any rule is left. A webhook without a service path is an error.
func privateWebhook(source string, name *string, cc *admissionregistrationv1.WebhookClientConfig,
	rules *[]admissionregistrationv1.RuleWithOperations, served sets.Set[string]) (bool, error) {
	if cc.Service == nil || cc.Service.Path == nil {
		return false, fmt.Errorf("webhook %s has no service path", *name)
	}
	var kept []admissionregistrationv1.RuleWithOperations
	for _, r := range *rules {
		var groups []string
		var resources []string
		for _, g := range r.APIGroups {
			if translate.ToPrivate.Maps(g) {
				groups = append(groups, g)
			}
		}
		for _, res := range r.Resources {
			base, _, _ := strings.Cut(res, "/")
			for _, g := range groups {
				if served.Has(base + "." + g) {
					resources = append(resources, res)
					break
				}
			}
		}
		if len(groups) == 0 || len(resources) == 0 {
			continue
		}
		for i, g := range groups {
			groups[i] = translate.ToPrivate.Group(g)
		}
		r.APIGroups, r.Resources = groups, resources
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return false, nil
	}
	*rules = kept
	*name = privateName(*name)
	path := upstream.AdmissionPathPrefix + source + *cc.Service.Path
	*cc = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: ConversionServiceNamespace, Name: ConversionServiceName, Path: &path}}
	return true, nil
}

// privateName maps the upstream group a webhook's name ends with to its private twin (the longest one
// that matches); a name ending in no mapped group is returned as it is.
func privateName(name string) string {
	best := ""
	for _, g := range upstream.Groups {
		if strings.HasSuffix(name, "."+g.Upstream) && len(g.Upstream) > len(best) {
			best = g.Upstream
		}
	}
	if best == "" {
		return name
	}
	return strings.TrimSuffix(name, best) + translate.ToPrivate.Group(best)
}

// yamlDocuments splits a multi-document YAML file, skipping empty documents.
func yamlDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			out = append(out, doc)
		}
	}
}
