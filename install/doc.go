// Package install renders what deploys the proxy, as typed Kubernetes objects, for HyperShift's operators
// to create and for make generate to write the kustomize bases under config/ (generator/emit/install.go):
// one source for both, so that the YAML an SRE applies and the objects HyperShift reconciles agree.
//
// Two topologies (docs/topologies.md):
//
//   - shared: one Deployment per management cluster (Shared: Deployment, Service, PodDisruptionBudget,
//     ServiceAccount and RBAC), pass-through authentication; the clients' kubeconfigs point at the
//     Service's API port (APIPort), the private CRDs' conversion webhook at its webhook port (443).
//   - sidecar: a container beside a CAPI manager or provider in its pod (InjectSidecar, or
//     SidecarContainer, SidecarVolumes and Kubeconfig one by one): the API listener on loopback with
//     the pod's credentials (auth mode sidecar), the manager's kubeconfig pointing at it, and the
//     conversion webhook on a TLS listener of its own that WebhookService exposes to the apiserver.
//
// The private CRDs come from the generated manifests embedded in package apis/private (CRDs), with
// their conversion webhook pointed at a Service (by package install/crds, which also installs them on a
// cluster for the proxy's install-crds command).
//
// Every Secret and ConfigMap named here is mounted, never read: the serving certificate Secret holds
// tls.crt and tls.key (and ca.crt, the CA a sidecar's manager trusts), as a kubernetes.io/tls Secret or
// OpenShift's service CA writes it.
package install
