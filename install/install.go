package install

import (
	"fmt"
	"path"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/proxy/options/flagname"
)

// Names, ports and paths every rendering shares.
const (
	// Name names the proxy's Deployment, Service, ServiceAccount, ClusterRole and container, and the
	// Service the committed private CRDs' conversion webhook names (emit.ConversionServiceName).
	Name = "capi-proxy"
	// DefaultImage is the image make image builds, at the tag the kustomize overlays name; overlays and
	// Options.Image replace it.
	DefaultImage = "quay.io/openshift/hypershift-capi-proxy:latest"

	// APIPort is where the proxy serves the Kubernetes API: all interfaces in the shared topology (the
	// Service's "https" port, 6443 as kube-apiserver's), loopback in a sidecar. No CAPI manager or
	// provider uses it (they use 8080, 8443, 9440 and 9443).
	APIPort = 6443
	// WebhookPort is the proxy's webhook listener (--webhook-listen); the Service exposes it on 443,
	// where the private CRDs' conversion webhook (a ServiceReference without a port) calls.
	WebhookPort = 9444
	// MetricsPort serves /metrics, /healthz and /readyz in plain HTTP (--metrics-listen's default).
	MetricsPort = 9446

	// WebhookPath is where the conversion webhook is served (classify.WebhookPath).
	WebhookPath = "/convert"

	// ServingCertSecret is the default Secret holding the proxy's serving certificate (tls.crt,
	// tls.key; ca.crt for a sidecar's manager). On OpenShift the shared Service's annotation asks the
	// service CA to write it.
	ServingCertSecret = "capi-proxy-serving-cert"
	// ServingCertDir is where that Secret is mounted.
	ServingCertDir = "/etc/capi-proxy/tls"
	// BackendKubeconfigDir is where the backend kubeconfig is mounted: a sidecar's backend kubeconfig
	// Secret, if any, and the shared topology's InClusterKubeconfig ConfigMap.
	BackendKubeconfigDir = "/etc/capi-proxy/backend"
	// InClusterKubeconfigConfigMap names the shared topology's ConfigMap holding InClusterKubeconfig.
	InClusterKubeconfigConfigMap = "capi-proxy-backend-kubeconfig"
	// ServiceAccountTokenFile is the pod's projected service account token, which the kubelet rotates
	// and client-go re-reads (the kubeconfig's tokenFile).
	ServiceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	// ServiceAccountCAFile is the CA of the in-cluster apiserver in every pod (InClusterKubeconfig's
	// certificate-authority), reloaded by the proxy when the kubelet rotates it.
	ServiceAccountCAFile = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
	// InClusterAPIServer is the shared topology's backend: the kubernetes Service.
	InClusterAPIServer = "https://kubernetes.default.svc"
)

// Labels is the selector of the proxy's pods in the shared topology.
var Labels = map[string]string{"app.kubernetes.io/name": Name, "app.kubernetes.io/component": "api-proxy"}

// Shared configures the shared topology.
type Shared struct {
	// Namespace of the Deployment, Service, ServiceAccount and PodDisruptionBudget; required.
	Namespace string
	// Image of the proxy; empty means DefaultImage.
	Image string
	// Replicas of the Deployment; zero means 2, the least that keeps the API and the conversion
	// webhook served through a node drain (the PodDisruptionBudget keeps one).
	Replicas int32
	// ServingCertSecret names the Secret with tls.crt and tls.key; empty means ServingCertSecret.
	// Its certificate must name the Service (capi-proxy.<namespace>.svc).
	ServingCertSecret string
}

func (s Shared) defaults() (Shared, error) {
	if s.Namespace == "" {
		return s, fmt.Errorf("install: Shared.Namespace is required")
	}
	if s.Image == "" {
		s.Image = DefaultImage
	}
	if s.Replicas == 0 {
		s.Replicas = 2
	}
	if s.ServingCertSecret == "" {
		s.ServingCertSecret = ServingCertSecret
	}
	return s, nil
}

// SharedArgs are the proxy's arguments in the shared topology: every interface, pass-through
// authentication (each client's own token reaches the apiserver), the in-cluster apiserver through
// InClusterKubeconfig (its address and CA for every request; its service account token only for the
// proxy's own reads: the Namespaces it follows and the CRDs it resolves), the serving certificate from
// ServingCertDir for the API and the webhook.
func SharedArgs() []string {
	return []string{
		flagname.Arg(flagname.Listen, ":"+strconv.Itoa(APIPort)),
		flagname.Arg(flagname.WebhookListen, ":"+strconv.Itoa(WebhookPort)),
		flagname.Arg(flagname.MetricsListen, ":"+strconv.Itoa(MetricsPort)),
		flagname.Arg(flagname.AuthMode, "pass-through"),
		flagname.Arg(flagname.Kubeconfig, path.Join(BackendKubeconfigDir, KubeconfigKey)),
		flagname.Arg(flagname.TLSCertFile, path.Join(ServingCertDir, corev1.TLSCertKey)),
		flagname.Arg(flagname.TLSPrivateKeyFile, path.Join(ServingCertDir, corev1.TLSPrivateKeyKey)),
	}
}

// InClusterKubeconfig is the shared topology's backend kubeconfig: the kubernetes Service, trusted by
// the service account CA, authenticated by the pod's service account token file (both re-read when
// the kubelet rotates them). It is what rest.InClusterConfig builds, as a file the proxy's --kubeconfig
// takes.
func InClusterKubeconfig() *clientcmdapi.Config {
	return &clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{Name: {Server: InClusterAPIServer, CertificateAuthority: ServiceAccountCAFile}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{Name: {TokenFile: ServiceAccountTokenFile}},
		Contexts:       map[string]*clientcmdapi.Context{Name: {Cluster: Name, AuthInfo: Name}},
		CurrentContext: Name,
	}
}

// InClusterKubeconfigConfigMapFor is the ConfigMap holding InClusterKubeconfig under KubeconfigKey, in
// namespace.
func InClusterKubeconfigConfigMapFor(namespace string) (*corev1.ConfigMap, error) {
	data, err := runtime.Encode(clientcmdlatest.Codec, InClusterKubeconfig())
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: InClusterKubeconfigConfigMap, Namespace: namespace, Labels: Labels},
		Data:       map[string]string{KubeconfigKey: string(data)},
	}, nil
}

// SharedObjects returns the namespaced objects of the shared topology: the ServiceAccount, the backend
// kubeconfig ConfigMap, the Deployment, the Service, the PodDisruptionBudget, and the Role and
// RoleBinding of the proxies' acknowledging Leases (AcknowledgeRole). The cluster-scoped RBAC is
// ProxyClusterRole and ProxyClusterRoleBinding; the CRDs are CRDs.
func SharedObjects(s Shared) ([]client.Object, error) {
	s, err := s.defaults()
	if err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: s.Namespace, Labels: Labels},
	}
	kubeconfig, err := InClusterKubeconfigConfigMapFor(s.Namespace)
	if err != nil {
		return nil, err
	}
	return []client.Object{sa, kubeconfig, SharedDeployment(s), SharedService(s), SharedPodDisruptionBudget(s),
		AcknowledgeRole(s.Namespace), AcknowledgeRoleBinding(s.Namespace, Name)}, nil
}

// SharedDeployment is the proxy's Deployment in the shared topology: Shared.Replicas pods spread over
// nodes (preferred pod anti-affinity by hostname, and zones by topology spread), ready while the proxy
// reaches the apiserver (/readyz), with a rolling update that never takes the last ready pod.
func SharedDeployment(s Shared) *appsv1.Deployment {
	s, _ = s.defaults()
	container := proxyContainer(s.Image, SharedArgs())
	container.Ports = append(container.Ports, corev1.ContainerPort{Name: "https", ContainerPort: APIPort, Protocol: corev1.ProtocolTCP})
	container.Ports = append(container.Ports, corev1.ContainerPort{Name: "webhook", ContainerPort: WebhookPort, Protocol: corev1.ProtocolTCP})
	container.VolumeMounts = []corev1.VolumeMount{
		{Name: "serving-cert", MountPath: ServingCertDir, ReadOnly: true},
		{Name: "backend-kubeconfig", MountPath: BackendKubeconfigDir, ReadOnly: true},
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: s.Namespace, Labels: Labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(s.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: Labels},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: Name,
					PriorityClassName:  "system-cluster-critical",
					// Longer than the proxy's --shutdown-timeout (30s), so requests in flight finish.
					TerminationGracePeriodSeconds: ptr.To[int64](40),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{container},
					Volumes: []corev1.Volume{
						{Name: "serving-cert", VolumeSource: corev1.VolumeSource{
							Secret: &corev1.SecretVolumeSource{SecretName: s.ServingCertSecret},
						}},
						{Name: "backend-kubeconfig", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: InClusterKubeconfigConfigMap},
						}}},
					},
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
							Weight: 100,
							PodAffinityTerm: corev1.PodAffinityTerm{
								LabelSelector: &metav1.LabelSelector{MatchLabels: Labels},
								TopologyKey:   corev1.LabelHostname,
							},
						}},
					}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew:           1,
						TopologyKey:       corev1.LabelTopologyZone,
						WhenUnsatisfiable: corev1.ScheduleAnyway,
						LabelSelector:     &metav1.LabelSelector{MatchLabels: Labels},
					}},
				},
			},
		},
	}
}

// SharedService is the Service in front of the shared proxy: "https" (APIPort) for clients, whose
// kubeconfigs name https://capi-proxy.<namespace>.svc:6443, and "webhook" on 443 for the apiserver's
// conversion calls. On OpenShift its annotation has the service CA write the serving certificate Secret.
func SharedService(s Shared) *corev1.Service {
	s, _ = s.defaults()
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: s.Namespace, Labels: Labels,
			Annotations: map[string]string{"service.beta.openshift.io/serving-cert-secret-name": s.ServingCertSecret}},
		Spec: corev1.ServiceSpec{
			Selector: Labels,
			Ports: []corev1.ServicePort{
				{Name: "https", Port: APIPort, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP},
				{Name: "webhook", Port: 443, TargetPort: intstr.FromString("webhook"), Protocol: corev1.ProtocolTCP},
				{Name: "metrics", Port: MetricsPort, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// SharedPodDisruptionBudget keeps all but one proxy pod through voluntary disruptions (node drains).
func SharedPodDisruptionBudget(s Shared) *policyv1.PodDisruptionBudget {
	s, _ = s.defaults()
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: s.Namespace, Labels: Labels},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: Labels},
		},
	}
}

// proxyContainer is the proxy's container with args: non-root, read-only root filesystem, no
// capabilities, probes on the metrics listener (/readyz: the backend answers; /healthz: the process
// serves).
func proxyContainer(image string, args []string) corev1.Container {
	probe := func(p string, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: p, Port: intstr.FromString("metrics"), Scheme: corev1.URISchemeHTTP,
			}},
			PeriodSeconds:    10,
			TimeoutSeconds:   5,
			FailureThreshold: failures,
		}
	}
	return corev1.Container{
		Name:  Name,
		Image: image,
		Args:  args,
		Env:   downwardAPIEnv(),
		Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		}},
		ReadinessProbe:           probe("/readyz", 3),
		LivenessProbe:            probe("/healthz", 6),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsNonRoot:             ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

// ProxyClusterRole is what the proxy's own identity reads (in the shared topology its ServiceAccount;
// in a sidecar the pod's, which ProxyClusterRoleBinding's subjects then name): the metadata of
// Namespaces and CustomResourceDefinitions, which it lists and watches to know which namespaces it
// serves from the private groups and which CRDs the backend serves; the ValidatingAdmissionPolicy and
// binding that guard the namespaces' serving label (ServingPolicy), by name, which it watches to know
// whether it may follow that label; and the apiserver's /readyz
// (granted to everyone by kube-apiserver's system:public-info-viewer, repeated for clusters that
// withdrew it). Everything else it sends carries the client's credentials.
func ProxyClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
				ResourceNames: []string{serving.PolicyName}, Verbs: []string{"get", "list", "watch"}},
			{NonResourceURLs: []string{"/readyz", "/readyz/*"}, Verbs: []string{"get"}},
		},
	}
}

// ProxyClusterRoleBinding binds ProxyClusterRole to the proxy's ServiceAccount in namespace.
func ProxyClusterRoleBinding(namespace string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: namespace}},
	}
}

// AcknowledgeRoleName names the Role and RoleBinding that let the proxy keep its acknowledging Lease
// (package proxy/acknowledge) in its own namespace.
const AcknowledgeRoleName = Name + "-acknowledge"

// AcknowledgeRole lets the proxy's own identity get, create, update and delete Leases in namespace,
// where it publishes which Namespaces it applied (serving.AcknowledgeLabel) for the migration to wait
// on. Namespaced on purpose: leases cluster-wide would let it delete other proxies' acknowledgements
// (and any controller's leader election). Creating cannot be narrowed to a name (RBAC checks
// resourceNames of creates against nothing), so it is not narrowed at all.
func AcknowledgeRole(namespace string) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: AcknowledgeRoleName, Namespace: namespace},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update", "delete"}},
		},
	}
}

// AcknowledgeRoleBinding binds AcknowledgeRole in namespace to the service accounts of namespace the
// proxies run as (Name in the shared topology; the pods' in a sidecar).
func AcknowledgeRoleBinding(namespace string, serviceAccounts ...string) *rbacv1.RoleBinding {
	b := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: AcknowledgeRoleName, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: AcknowledgeRoleName},
	}
	for _, sa := range serviceAccounts {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: namespace})
	}
	return b
}

// downwardAPIEnv are the environment variables the proxy reads its pod's name, namespace and UID from
// (the acknowledging Lease's namespace, name and owner).
func downwardAPIEnv() []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return []corev1.EnvVar{
		field(flagname.EnvPodName, "metadata.name"),
		field(flagname.EnvPodNamespace, "metadata.namespace"),
		field(flagname.EnvPodUID, "metadata.uid"),
	}
}
