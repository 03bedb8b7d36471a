package emit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/install"
)

// ConfigDir is where the install assets are written, relative to the repository root.
const ConfigDir = "config"

// Namespaces of the two topologies' overlays (config/shared, config/sidecar): the HyperShift operator's
// namespace, and an example hosted-control-plane namespace ("<hostedcluster-namespace>-<name>").
const (
	SharedNamespace  = "hypershift"
	SidecarNamespace = "clusters-example"
)

// hypershiftOperator is the user of HyperShift's operator (service account "operator" in SharedNamespace,
// as HyperShift's install names it), which runs the migrations (package migration) in config/'s
// rendering of install.ServingPolicy.
const hypershiftOperator = "system:serviceaccount:" + SharedNamespace + ":operator"

// Service accounts of the CAPI manager and of the infrastructure provider in a hosted-control-plane
// namespace, as HyperShift's control-plane-operator names them.
const (
	capiManagerServiceAccount  = "cluster-api"
	capiProviderServiceAccount = "capi-provider"
)

// hostedControlPlaneSubject is the service account that holds the namespaced twin of a generated role
// in a hosted-control-plane namespace: CAPI's manager role the CAPI manager's, a provider's manager
// role the provider's. HyperShift runs no kubeadm bootstrap or control-plane provider: their roles
// have no namespaced twin ("").
func hostedControlPlaneSubject(role string) string {
	switch {
	case role == "cluster-api-manager":
		return capiManagerServiceAccount
	case strings.HasPrefix(role, "kubeadm-"):
		return ""
	}
	return capiProviderServiceAccount
}

// Install writes the install assets, after the CRDs and the roles (it reads them):
//
//   - apis/private/zz_generated.embed.go: the private CRDs and ClusterRoles embedded (package private),
//     which package install renders for HyperShift's operators;
//   - apis/private/kustomization.yaml: a kustomize base of those manifests (kustomize loads files only
//     below a kustomization's own directory, so it lives there);
//   - config/private: that base, with OpenShift's CA injection asked for on the CRDs;
//   - apis/private/webhooks/kustomization.yaml and config/admission: the admission webhook
//     configurations (emit.Webhooks), CA injection asked for; in no overlay, since they refuse writes
//     unless the proxy forwards them (--admission-webhook);
//   - config/proxy-rbac: the proxy's own ClusterRole (install.ProxyClusterRole);
//   - config/serving: the admission policy that lets only the migration's identity (HyperShift's
//     operator, and system:masters) write the namespaces' serving label (install.ServingPolicy);
//   - config/network-policy: the shared topology's NetworkPolicy that lets only the host network (where
//     kube-apiserver runs) reach the webhook port (install.WebhookNetworkPolicy); in no overlay, since it
//     selects kube-apiserver as OpenShift's OVN-Kubernetes alone does;
//   - config/hosted-control-plane: for each generated role, a namespaced Role with its rules and a
//     RoleBinding to the CAPI manager's or provider's service account, for the namespace an overlay sets;
//   - config/monitoring: ServiceMonitor and PrometheusRule (install.ServiceMonitor, install.Alerts);
//   - config/shared and config/sidecar: the two topologies, as overlays of the bases above with the
//     objects package install renders for them.
//
// module resolves a module path to the version the build uses (the CAPI manager's image tag in the
// sidecar example).
func (e *Emitter) Install(roles []upstream.RoleSource, module func(path string) (Module, error)) error {
	if err := e.privateBase(); err != nil {
		return err
	}
	cfg := filepath.Join(e.Root, ConfigDir)
	if err := os.RemoveAll(cfg); err != nil {
		return err
	}
	files := map[string][]any{} // path below config -> objects
	kustomizations := map[string]kustomization{}

	kustomizations["private"] = kustomization{
		Resources: []string{"../../apis/private"},
		Patches: []patch{{
			Target: &target{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
			Patch:  "- op: add\n  path: /metadata/annotations/service.beta.openshift.io~1inject-cabundle\n  value: \"true\"\n",
		}},
	}

	// Not in the overlays: a topology adds it together with the proxy's --admission-webhook flags.
	kustomizations["admission"] = kustomization{
		Resources: []string{"../../apis/private/webhooks"},
		Patches: []patch{{
			Target: &target{Group: "admissionregistration.k8s.io", Kind: "(Validating|Mutating)WebhookConfiguration"},
			Patch:  "- op: add\n  path: /metadata/annotations/service.beta.openshift.io~1inject-cabundle\n  value: \"true\"\n",
		}},
	}

	files["proxy-rbac/clusterrole.yaml"] = []any{install.ProxyClusterRole()}
	kustomizations["proxy-rbac"] = kustomization{Resources: []string{"clusterrole.yaml"}}

	policy, binding, err := install.ServingPolicy(install.ServingGuard{Users: []string{hypershiftOperator}})
	if err != nil {
		return err
	}
	files["serving/policy.yaml"] = []any{policy, binding}
	kustomizations["serving"] = kustomization{Resources: []string{"policy.yaml"}}
	// Not in the overlays: added to config/shared where the network plugin matches its selector.
	files["network-policy/networkpolicy.yaml"] = []any{install.WebhookNetworkPolicy("")}
	kustomizations["network-policy"] = kustomization{Resources: []string{"networkpolicy.yaml"}}

	hcp, err := e.hostedControlPlaneRoles(roles)
	if err != nil {
		return err
	}
	files["hosted-control-plane/roles.yaml"] = hcp
	kustomizations["hosted-control-plane"] = kustomization{Resources: []string{"roles.yaml"}}

	rule, err := install.PrometheusRule("")
	if err != nil {
		return err
	}
	files["monitoring/servicemonitor.yaml"] = []any{install.ServiceMonitor("")}
	files["monitoring/prometheusrule.yaml"] = []any{rule}
	kustomizations["monitoring"] = kustomization{Resources: []string{"servicemonitor.yaml", "prometheusrule.yaml"}}

	shared, err := install.SharedObjects(install.Shared{Namespace: SharedNamespace})
	if err != nil {
		return err
	}
	for _, o := range shared {
		files["shared/proxy.yaml"] = append(files["shared/proxy.yaml"], o)
	}
	files["shared/proxy.yaml"] = append(files["shared/proxy.yaml"], install.ProxyClusterRoleBinding(SharedNamespace))
	kustomizations["shared"] = kustomization{
		Namespace: SharedNamespace,
		Resources: []string{"../private", "../proxy-rbac", "../serving", "../monitoring", "proxy.yaml"},
	}

	sidecar, err := e.sidecarExample(module)
	if err != nil {
		return err
	}
	files["sidecar/cluster-api.yaml"] = sidecar
	kustomizations["sidecar"] = kustomization{
		Namespace: SidecarNamespace,
		Resources: []string{"../private", "../proxy-rbac", "../serving", "../hosted-control-plane", "../monitoring", "cluster-api.yaml"},
	}

	for name, objs := range files {
		if err := writeManifests(filepath.Join(cfg, name), objs); err != nil {
			return err
		}
	}
	for dir, k := range kustomizations {
		if err := writeKustomization(filepath.Join(cfg, dir), k); err != nil {
			return err
		}
	}
	return nil
}

// privateBase writes apis/private/zz_generated.embed.go and apis/private/kustomization.yaml.
func (e *Emitter) privateBase() error {
	dir := filepath.Join(e.Root, "apis/private")
	embed := `// Code generated by hypershift-capi-proxy/generator. DO NOT EDIT.

// Package private holds the generated private API: the Go types (one package per upstream package),
// and, embedded here, the CRDs (crds/*.yaml) and the ClusterRoles granting on the private groups
// (rbac/*.yaml) that package install renders.
package private

import "embed"

// CRDs holds crds/*.yaml, one CustomResourceDefinition per file.
//
//go:embed crds/*.yaml
var CRDs embed.FS

// Roles holds rbac/*.yaml, one ClusterRole per file.
//
//go:embed rbac/*.yaml
var Roles embed.FS
`
	if err := os.WriteFile(filepath.Join(dir, "zz_generated.embed.go"), []byte(embed), 0o644); err != nil {
		return err
	}
	// The CRDs and roles form the private base. The Validating/MutatingWebhookConfigurations emit.Webhooks
	// wrote into apis/private/webhooks/*.yaml form a base of their own (config/admission), because their
	// failurePolicy is upstream's (Fail): installed without a proxy that forwards them to the managers'
	// webhook servers (--admission-webhook), they would refuse every write of the kinds they match.
	resources, err := manifestsBelow(dir, "crds", "rbac")
	if err != nil {
		return err
	}
	if err := writeKustomization(dir, kustomization{Resources: resources}); err != nil {
		return err
	}
	webhooks, err := manifestsBelow(filepath.Join(dir, "webhooks"), ".")
	if err != nil {
		return err
	}
	return writeKustomization(filepath.Join(dir, "webhooks"), kustomization{Resources: webhooks})
}

// manifestsBelow lists the YAML files of each sub directory of dir, as paths relative to dir, sorted,
// without kustomization.yaml.
func manifestsBelow(dir string, subs ...string) ([]string, error) {
	var out []string
	for _, sub := range subs {
		matches, err := filepath.Glob(filepath.Join(dir, sub, "*.yaml"))
		if err != nil {
			return nil, err
		}
		sort.Strings(matches)
		for _, m := range matches {
			if filepath.Base(m) == "kustomization.yaml" {
				continue
			}
			out = append(out, path.Join(sub, filepath.Base(m)))
		}
	}
	return out, nil
}

// hostedControlPlaneRoles returns, for every generated ClusterRole of a role HyperShift runs in a
// hosted-control-plane namespace, a Role with the same rules and a RoleBinding to its service account
// (hostedControlPlaneSubject), both without a namespace (an overlay sets it).
func (e *Emitter) hostedControlPlaneRoles(roles []upstream.RoleSource) ([]any, error) {
	var out []any
	for _, src := range roles {
		sa := hostedControlPlaneSubject(src.Name)
		if sa == "" {
			continue
		}
		file := filepath.Join(e.Root, RBACDir, src.Name+".yaml")
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var cr rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(data, &cr); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		meta := metav1.ObjectMeta{Name: cr.Name, Annotations: cr.Annotations}
		out = append(out,
			&rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
				ObjectMeta: meta,
				Rules:      cr.Rules,
			},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: cr.Name},
				// No namespace: a RoleBinding's ServiceAccount subject without one is in the binding's
				// (the RBAC authorizer's rule), wherever an overlay puts it.
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa}},
			})
	}
	return out, nil
}

// sidecarExample is the sidecar topology in SidecarNamespace: CAPI's manager Deployment (the image
// upstream publishes for the version go.mod pins) with the proxy injected (install.InjectSidecar), its
// service account, its kubeconfig ConfigMap, the Service of the webhook listener, the binding of the
// proxy's ClusterRole to the pod's service accounts, and the Role and RoleBinding of the sidecars'
// acknowledging Leases.
func (e *Emitter) sidecarExample(module func(path string) (Module, error)) ([]any, error) {
	capi, err := module("sigs.k8s.io/cluster-api")
	if err != nil {
		return nil, err
	}
	labels := map[string]string{"app.kubernetes.io/name": "cluster-api", "app.kubernetes.io/component": "capi-manager"}
	spec := corev1.PodSpec{
		ServiceAccountName: capiManagerServiceAccount,
		Containers: []corev1.Container{{
			Name:  "manager",
			Image: "registry.k8s.io/cluster-api/cluster-api-controller:" + capi.Version,
			Args:  []string{"--namespace=$(POD_NAMESPACE)", "--leader-elect"},
			Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"},
			}}},
		}},
	}
	s := install.Sidecar{}
	if err := install.InjectSidecar(&spec, "manager", s); err != nil {
		return nil, err
	}
	kubeconfig, err := install.KubeconfigConfigMapFor(SidecarNamespace, s)
	if err != nil {
		return nil, err
	}
	return []any{
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: capiManagerServiceAccount, Namespace: SidecarNamespace},
		},
		&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-api", Namespace: SidecarNamespace, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
			},
		},
		kubeconfig,
		install.WebhookService(SidecarNamespace, labels),
		install.SidecarClusterRoleBinding(SidecarNamespace, capiManagerServiceAccount, capiProviderServiceAccount),
		install.AcknowledgeRole(SidecarNamespace),
		install.AcknowledgeRoleBinding(SidecarNamespace, capiManagerServiceAccount, capiProviderServiceAccount),
	}, nil
}

// kustomization is the part of kustomize's Kustomization the assets use.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Resources  []string `json:"resources"`
	Patches    []patch  `json:"patches,omitempty"`
}

type patch struct {
	Target *target `json:"target,omitempty"`
	Patch  string  `json:"patch"`
}

type target struct {
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

const generatedHeader = "# Code generated by hypershift-capi-proxy/generator (generator/emit/install.go). DO NOT EDIT.\n"

func writeKustomization(dir string, k kustomization) error {
	k.APIVersion, k.Kind = "kustomize.config.k8s.io/v1beta1", "Kustomization"
	data, err := yaml.Marshal(k)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), append([]byte(generatedHeader), data...), 0o644)
}

// writeManifests writes objs as YAML documents, without the fields a manifest leaves empty
// (creationTimestamp: null, status: {}).
func writeManifests(file string, objs []any) error {
	var buf bytes.Buffer
	buf.WriteString(generatedHeader)
	for _, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			return err
		}
		var m any
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		out, err := yaml.Marshal(prune(m))
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(out)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, buf.Bytes(), 0o644)
}

// prune removes null creationTimestamps and empty statuses, strategies and resources from a decoded
// JSON value: what typed objects marshal but a manifest leaves out.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if k == "creationTimestamp" && c == nil {
				delete(t, k)
				continue
			}
			t[k] = prune(c)
			if m, ok := t[k].(map[string]any); ok && len(m) == 0 && (k == "status" || k == "strategy" || k == "resources") {
				delete(t, k)
			}
		}
	case []any:
		for i := range t {
			t[i] = prune(t[i])
		}
	}
	return v
}
