package framework

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
	"github.com/openshift/hypershift-capi-proxy/install"
)

var (
	// UpstreamScheme is what a CAPI controller uses: core and the upstream CAPI core v1beta2 types.
	UpstreamScheme = newScheme(corev1.AddToScheme, clusterv1.AddToScheme)
	// PrivateScheme reads the backend directly: core, the private CAPI core v1beta2 types and CRDs.
	PrivateScheme = newScheme(corev1.AddToScheme, privclusterv1.AddToScheme, apiextensionsv1.AddToScheme)
)

func newScheme(adds ...func(*runtime.Scheme) error) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range adds {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// PrivateCRDs returns the files of the generated private CRDs.
func (e *Env) PrivateCRDs() ([]string, error) {
	files, err := filepath.Glob(filepath.Join(e.Root, "apis", "private", "crds", "*.yaml"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no private CRDs in %s", filepath.Join(e.Root, "apis", "private", "crds"))
	}
	return files, err
}

// AdminClient is a controller-runtime client straight to the apiserver as the admin, on PrivateScheme.
func (e *Env) AdminClient() (client.Client, error) {
	return client.New(e.DirectConfig(e.AdminToken), client.Options{Scheme: PrivateScheme})
}

// InstallPrivateCRDs installs the generated private CRDs and waits until they are established.
func (e *Env) InstallPrivateCRDs(ctx context.Context) error {
	c, err := e.AdminClient()
	if err != nil {
		return err
	}
	files, err := e.PrivateCRDs()
	if err != nil {
		return err
	}
	return e.InstallCRDs(ctx, c, files...)
}

// InstallServingPolicy creates the ValidatingAdmissionPolicy and binding that let only the migration's
// identity write the namespaces' serving label (install.ServingPolicy with its default: system:masters,
// the admin's group), as the install assets do. Users other than the admin (alice) cannot write it.
func (e *Env) InstallServingPolicy(ctx context.Context) error {
	kube, err := kubernetes.NewForConfig(e.DirectConfig(e.AdminToken))
	if err != nil {
		return err
	}
	policy, binding, err := install.ServingPolicy(install.ServingGuard{})
	if err != nil {
		return err
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the serving policy: %w", err)
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the serving policy's binding: %w", err)
	}
	return nil
}
