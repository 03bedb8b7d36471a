package upstream

// CAPIV1Beta1Removal is the Cluster API release that stops serving CAPI's v1beta1 API version (every
// v1beta1 package of sigs.k8s.io/cluster-api: core, addons, ipam, kubeadm bootstrap and control plane).
// Source: CAPI's book, reference/versions.md, "Cluster API release vs API versions" (as of v1.13.6):
// "v1beta1 | Deprecated | Deprecated since CAPI v1.11; in v1.16, April 2027 v1beta1 will stop to be
// served", with the removal plan in kubernetes-sigs/cluster-api issue 11920. Upstream states it nowhere
// machine-readable: its CRDs mark the versions deprecated (+kubebuilder:deprecatedversion) but name no
// release.
const CAPIV1Beta1Removal = "v1.16"

// RemovedReleases names, by upstream package (an import path of Packages), the release of the project
// that owns the package in which its version stops being served, as that project numbers its releases.
// Only versions upstream marks deprecated (+kubebuilder:deprecatedversion) may be listed; the generator
// fails otherwise, and on a path Packages lacks. It copies the release into the package's routes
// (translate.Route.RemovedRelease), from which the proxy's requested_deprecated_apis_total metric takes
// its removed_release label. A deprecated version not listed has no known removal ("").
var RemovedReleases = map[string]string{
	"sigs.k8s.io/cluster-api/api/core/v1beta1":                 CAPIV1Beta1Removal,
	"sigs.k8s.io/cluster-api/api/addons/v1beta1":               CAPIV1Beta1Removal,
	"sigs.k8s.io/cluster-api/api/ipam/v1beta1":                 CAPIV1Beta1Removal,
	"sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1":    CAPIV1Beta1Removal,
	"sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1": CAPIV1Beta1Removal,
}
