package install

import (
	"fmt"
	"net"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"

	"github.com/openshift/hypershift-capi-proxy/proxy/options/flagname"
)

const (
	// KubeconfigConfigMap is the default ConfigMap holding the kubeconfig a sidecar's manager uses
	// (Kubeconfig), under KubeconfigKey. It carries no credential: the sidecar drops the client's and
	// sends the pod's.
	KubeconfigConfigMap = "capi-proxy-kubeconfig"
	// KubeconfigKey is the key of the kubeconfig in that ConfigMap, and of a backend kubeconfig Secret.
	KubeconfigKey = "kubeconfig"
	// KubeconfigDir is where the manager's container mounts that ConfigMap; KUBECONFIG names the file.
	KubeconfigDir = "/etc/capi-proxy/kubeconfig"
	// WebhookServiceName is the Service exposing a sidecar's webhook listener in its namespace (the
	// private CRDs' conversion webhook names it, in the one namespace chosen to serve conversions).
	WebhookServiceName = Name
)

// Sidecar configures the proxy as a container beside a CAPI manager or provider.
type Sidecar struct {
	// Image of the proxy; empty means DefaultImage.
	Image string
	// ServingCertSecret names the Secret with tls.crt and tls.key, and ca.crt, the CA the manager's
	// kubeconfig trusts; empty means ServingCertSecret. The certificate must name 127.0.0.1 (the
	// manager's connection) and, if this sidecar serves the conversion webhook, the WebhookService
	// (capi-proxy.<namespace>.svc).
	ServingCertSecret string
	// BackendKubeconfigSecret, if set, names a Secret whose KubeconfigKey the proxy uses to reach the
	// apiserver, credentials included; empty means the pod's service account (in-cluster config).
	BackendKubeconfigSecret string
	// KubeconfigConfigMap names the ConfigMap holding Kubeconfig(); empty means KubeconfigConfigMap.
	KubeconfigConfigMap string
}

func (s Sidecar) defaults() Sidecar {
	if s.Image == "" {
		s.Image = DefaultImage
	}
	if s.ServingCertSecret == "" {
		s.ServingCertSecret = ServingCertSecret
	}
	if s.KubeconfigConfigMap == "" {
		s.KubeconfigConfigMap = KubeconfigConfigMap
	}
	return s
}

// SidecarArgs are the proxy's arguments as a sidecar: the API on loopback only (APIPort) with the
// sidecar authentication mode (the pod's credentials, the client's dropped, impersonation refused), the
// webhook on all interfaces (WebhookPort), the backend from BackendKubeconfigSecret or the pod's
// service account.
func SidecarArgs(s Sidecar) []string {
	s = s.defaults()
	args := []string{
		flagname.Arg(flagname.Listen, net.JoinHostPort("127.0.0.1", strconv.Itoa(APIPort))),
		flagname.Arg(flagname.WebhookListen, ":"+strconv.Itoa(WebhookPort)),
		flagname.Arg(flagname.MetricsListen, ":"+strconv.Itoa(MetricsPort)),
		flagname.Arg(flagname.AuthMode, "sidecar"),
		flagname.Arg(flagname.TLSCertFile, path.Join(ServingCertDir, corev1.TLSCertKey)),
		flagname.Arg(flagname.TLSPrivateKeyFile, path.Join(ServingCertDir, corev1.TLSPrivateKeyKey)),
	}
	if s.BackendKubeconfigSecret != "" {
		args = append(args, flagname.Arg(flagname.Kubeconfig, path.Join(BackendKubeconfigDir, KubeconfigKey)))
	}
	return args
}

// SidecarContainer is the proxy's container for a manager's pod, mounting SidecarVolumes.
func SidecarContainer(s Sidecar) corev1.Container {
	s = s.defaults()
	c := proxyContainer(s.Image, SidecarArgs(s))
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: "proxy-webhook", ContainerPort: WebhookPort, Protocol: corev1.ProtocolTCP})
	// The port names must be unique in the pod: the manager has its own "metrics".
	c.Ports[0].Name = "proxy-metrics"
	c.ReadinessProbe.HTTPGet.Port = intstr.FromString("proxy-metrics")
	c.LivenessProbe.HTTPGet.Port = intstr.FromString("proxy-metrics")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "capi-proxy-serving-cert", MountPath: ServingCertDir, ReadOnly: true}}
	if s.BackendKubeconfigSecret != "" {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "capi-proxy-backend", MountPath: BackendKubeconfigDir, ReadOnly: true})
	}
	return c
}

// SidecarVolumes are the volumes SidecarContainer and the manager's container mount: the serving
// certificate, the manager's kubeconfig and, if set, the backend kubeconfig.
func SidecarVolumes(s Sidecar) []corev1.Volume {
	s = s.defaults()
	v := []corev1.Volume{
		{Name: "capi-proxy-serving-cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.ServingCertSecret}}},
		{Name: "capi-proxy-kubeconfig", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.KubeconfigConfigMap},
		}}},
	}
	if s.BackendKubeconfigSecret != "" {
		v = append(v, corev1.Volume{Name: "capi-proxy-backend", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.BackendKubeconfigSecret}}})
	}
	return v
}

// Kubeconfig is the kubeconfig of the manager beside a sidecar: the proxy on loopback, trusted by the
// serving certificate Secret's ca.crt as the manager mounts it (ServingCertDir), no credentials.
func Kubeconfig() *clientcmdapi.Config {
	return &clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{Name: {
			Server:               "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(APIPort)),
			CertificateAuthority: path.Join(ServingCertDir, "ca.crt"),
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{Name: {}},
		Contexts:       map[string]*clientcmdapi.Context{Name: {Cluster: Name, AuthInfo: Name}},
		CurrentContext: Name,
	}
}

// KubeconfigConfigMapFor is the ConfigMap holding Kubeconfig() in namespace, named as s says.
func KubeconfigConfigMapFor(namespace string, s Sidecar) (*corev1.ConfigMap, error) {
	s = s.defaults()
	data, err := runtime.Encode(clientcmdlatest.Codec, Kubeconfig())
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: s.KubeconfigConfigMap, Namespace: namespace},
		Data:       map[string]string{KubeconfigKey: string(data)},
	}, nil
}

// InjectSidecar adds SidecarContainer and SidecarVolumes to spec and points the container named
// manager at the proxy: KUBECONFIG names the mounted Kubeconfig(), and the serving certificate is
// mounted for its ca.crt. CAPI managers and providers read KUBECONFIG through controller-runtime
// (ctrl.GetConfig) unless a --kubeconfig flag says otherwise. It fails when there is no such container
// or the sidecar is there already.
func InjectSidecar(spec *corev1.PodSpec, manager string, s Sidecar) error {
	s = s.defaults()
	var target *corev1.Container
	for i := range spec.Containers {
		switch spec.Containers[i].Name {
		case Name:
			return fmt.Errorf("install: the pod has a %s container already", Name)
		case manager:
			target = &spec.Containers[i]
		}
	}
	if target == nil {
		return fmt.Errorf("install: the pod has no container %q", manager)
	}
	target.Env = append(target.Env, corev1.EnvVar{Name: "KUBECONFIG", Value: path.Join(KubeconfigDir, KubeconfigKey)})
	target.VolumeMounts = append(target.VolumeMounts,
		corev1.VolumeMount{Name: "capi-proxy-kubeconfig", MountPath: KubeconfigDir, ReadOnly: true},
		corev1.VolumeMount{Name: "capi-proxy-serving-cert", MountPath: ServingCertDir, ReadOnly: true},
	)
	spec.Containers = append(spec.Containers, SidecarContainer(s))
	spec.Volumes = append(spec.Volumes, SidecarVolumes(s)...)
	return nil
}

// WebhookService exposes the webhook listener (and, for ServiceMonitor, the metrics listener) of the sidecars in the pods selector selects, in
// namespace, on 443 (where the private CRDs' conversion webhook calls). The CRDs are cluster-scoped and
// name one Service: conversion needs no state, so the sidecars of one namespace serve it for the whole
// cluster (see docs/topologies.md).
func WebhookService(namespace string, selector map[string]string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: WebhookServiceName, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/name": Name}},
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports: []corev1.ServicePort{
				{Name: "webhook", Port: 443, TargetPort: intstr.FromInt32(WebhookPort), Protocol: corev1.ProtocolTCP},
				{Name: "metrics", Port: MetricsPort, TargetPort: intstr.FromInt32(MetricsPort), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// SidecarClusterRoleBinding grants ProxyClusterRole to the service accounts of namespace whose pods run
// a sidecar (the sidecar's own reads carry the pod's credentials). Its name, capi-proxy-<namespace>,
// is one per namespace. The sidecars' acknowledging Leases need AcknowledgeRole and
// AcknowledgeRoleBinding in the namespace too.
func SidecarClusterRoleBinding(namespace string, serviceAccounts ...string) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: Name + "-" + namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: Name},
	}
	for _, sa := range serviceAccounts {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: namespace})
	}
	return b
}
