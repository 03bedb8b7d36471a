// Package machines makes the v1beta2 Machines the benchmarks translate: about 6.1 KB of JSON each as
// kube-apiserver returns them (metadata with labels, annotations, an owner reference, managedFields of
// two managers, a spec naming the bootstrap and infrastructure groups, a status with conditions and
// addresses), in the private or the upstream groups.
package machines

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Groups of the core, bootstrap and infrastructure providers, private and upstream (apis/upstream).
const (
	PrivateCore      = "cluster.hypershift.openshift.io"
	UpstreamCore     = "cluster.x-k8s.io"
	privateBootstrap = "bootstrap.cluster.hypershift.openshift.io"
	privateInfra     = "infrastructure.cluster.hypershift.openshift.io"
	upstreamBoot     = "bootstrap.cluster.x-k8s.io"
	upstreamInfra    = "infrastructure.cluster.x-k8s.io"
)

// OwnerName names the MachineSet that owns every Machine of this package (its controller
// ownerReference), and OwnerUID is the uid that ownerReference names. kube-controller-manager's garbage
// collector deletes a stored Machine whose owner does not exist, so a benchmark that stores Machines
// creates their owner (MachineSet) and names its uid instead (WithOwnerUID).
const (
	OwnerName = "hc1-workers-7d9f8"
	OwnerUID  = "5f1b2c3d-0000-4000-8000-000000000002"
)

// MachineSet returns the body of a create of the MachineSet OwnerName in namespace, which selects the
// Machines of this package by their set-name label: the fields its CRD requires, in the private or the
// upstream groups.
func MachineSet(namespace string, private bool) []byte {
	g := groupsOf(private)
	selector := obj{"cluster.x-k8s.io/set-name": OwnerName}
	return encode(obj{
		"apiVersion": g[0] + "/v1beta2", "kind": "MachineSet",
		"metadata": obj{"name": OwnerName, "namespace": namespace},
		"spec": obj{
			"clusterName": "hc1",
			"replicas":    0,
			"selector":    obj{"matchLabels": selector},
			"template": obj{
				"metadata": obj{"labels": selector},
				"spec": obj{
					"clusterName":       "hc1",
					"bootstrap":         obj{"dataSecretName": OwnerName + "-user-data"},
					"infrastructureRef": obj{"apiGroup": g[2], "kind": "AWSMachineTemplate", "name": OwnerName},
				},
			},
		},
	})
}

// WithOwnerUID returns body (of Create or Object) with its owner's uid OwnerUID replaced by uid, a uid
// of the same length (a UUID as kube-apiserver sets it), so that the body's size stays the same.
func WithOwnerUID(body []byte, uid string) []byte {
	return bytes.ReplaceAll(body, []byte(OwnerUID), []byte(uid))
}

// Object returns Machine name in namespace as kube-apiserver would return it, with metadata.uid and
// resourceVersion set, status and managedFields included: about 6.1 KB. private says which groups the
// object names (the backend's or a client's).
func Object(name, namespace string, private bool) []byte {
	return encode(object(name, namespace, private, true))
}

// Create returns the body of a create of Machine name in namespace: the metadata and spec of Object
// (status is a subresource, and kube-apiserver sets uid, resourceVersion and managedFields itself). Stored
// and read back, it is about 6.1 KB.
func Create(name, namespace string, private bool) []byte {
	return encode(object(name, namespace, private, false))
}

// List returns a MachineList of n Objects named machine-0..machine-<n-1>, as kube-apiserver streams it.
func List(n int, namespace string, private bool) []byte {
	var b strings.Builder
	apiVersion := groupsOf(private)[0] + "/v1beta2"
	fmt.Fprintf(&b, `{"apiVersion":%q,"items":[`, apiVersion)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(Object(fmt.Sprintf("machine-%d", i), namespace, private))
	}
	b.WriteString(`],"kind":"MachineList","metadata":{"resourceVersion":"123456"}}`)
	return []byte(b.String())
}

func groupsOf(private bool) [3]string {
	if private {
		return [3]string{PrivateCore, privateBootstrap, privateInfra}
	}
	return [3]string{UpstreamCore, upstreamBoot, upstreamInfra}
}

func encode(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and numbers always encode
	}
	return data
}

type obj = map[string]any

// Sizes of the description annotation that bring Object and a stored Create to about 6.1 KB.
const (
	objectPad = 600
	createPad = 2100
)

func object(name, namespace string, private, stored bool) obj {
	g := groupsOf(private)
	core, boot, infra := g[0], g[1], g[2]
	gv := core + "/v1beta2"
	meta := obj{
		"name": name, "namespace": namespace,
		"labels": obj{
			"cluster.x-k8s.io/cluster-name":            "hc1",
			"cluster.x-k8s.io/set-name":                "hc1-workers-7d9f8",
			"cluster.x-k8s.io/deployment-name":         "hc1-workers",
			"machine-template-hash":                    "3816419074",
			"hypershift.openshift.io/nodePool":         "hc1-workers",
			"topology.kubernetes.io/zone":              "us-east-1a",
			"node.kubernetes.io/instance-type":         "m6i.xlarge",
			"hypershift.openshift.io/hosted-cluster":   "clusters-hc1",
			"hypershift.openshift.io/infra-id":         "hc1-x7k2p",
			"cluster.x-k8s.io/control-plane-name":      "",
			"hypershift.openshift.io/nodePoolRevision": "4",
		},
		"annotations": obj{
			"cluster.x-k8s.io/cloned-from-name":                   "hc1-workers-5c6a1",
			"cluster.x-k8s.io/cloned-from-groupkind":              "AWSMachineTemplate." + infra,
			"machine.cluster.x-k8s.io/exclude-node-draining":      "",
			"hypershift.openshift.io/nodePoolTargetConfigVersion": strings.Repeat("0123456789abcdef", 4),
			"hypershift.openshift.io/nodePoolTargetReleaseImage":  "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("ab", 32),
		},
		"finalizers": []string{"machine.cluster.x-k8s.io"},
		"ownerReferences": []obj{{
			"apiVersion": gv, "kind": "MachineSet", "name": OwnerName,
			"uid": OwnerUID, "controller": true, "blockOwnerDeletion": true,
		}},
		"generation": 3,
	}
	m := obj{
		"apiVersion": gv, "kind": "Machine", "metadata": meta,
		"spec": obj{
			"clusterName": "hc1",
			"bootstrap": obj{
				"configRef":      obj{"apiGroup": boot, "kind": "KubeadmConfig", "name": name + "-bootstrap"},
				"dataSecretName": name + "-user-data",
			},
			"infrastructureRef": obj{"apiGroup": infra, "kind": "AWSMachine", "name": name},
			"version":           "v1.34.2",
			"providerID":        "aws:///us-east-1a/i-0123456789abcdef0",
			"failureDomain":     "us-east-1a",
			"readinessGates":    []obj{{"conditionType": "APIServerPodHealthy"}, {"conditionType": "EtcdPodHealthy"}},
			"deletion":          obj{"nodeDrainTimeoutSeconds": 600, "nodeVolumeDetachTimeoutSeconds": 300, "nodeDeletionTimeoutSeconds": 10},
			"minReadySeconds":   0,
		},
	}
	if !stored {
		// kube-apiserver adds uid, resourceVersion, creationTimestamp and the creator's managedFields
		// (about 2 KB); a status is a subresource. The description stands in for what Object has more.
		meta["annotations"].(obj)["hypershift.openshift.io/description"] = strings.Repeat("machine of hc1 ", createPad/15)
		return m
	}
	meta["annotations"].(obj)["hypershift.openshift.io/description"] = strings.Repeat("machine of hc1 ", objectPad/15)
	meta["uid"] = "5f1b2c3d-0000-4000-8000-000000000001"
	meta["resourceVersion"] = "123456"
	meta["creationTimestamp"] = "2026-11-24T10:00:00Z"
	meta["managedFields"] = []obj{
		{"manager": "capi-machineset", "operation": "Apply", "apiVersion": gv, "time": "2026-11-24T10:00:00Z",
			"fieldsType": "FieldsV1", "fieldsV1": obj{
				"f:metadata": obj{"f:labels": obj{".": obj{}, "f:cluster.x-k8s.io/cluster-name": obj{}, "f:cluster.x-k8s.io/set-name": obj{},
					"f:cluster.x-k8s.io/deployment-name": obj{}, "f:machine-template-hash": obj{}, "f:hypershift.openshift.io/nodePool": obj{}},
					"f:annotations":     obj{".": obj{}, "f:cluster.x-k8s.io/cloned-from-name": obj{}, "f:cluster.x-k8s.io/cloned-from-groupkind": obj{}},
					"f:ownerReferences": obj{`k:{"uid":"` + OwnerUID + `"}`: obj{}}},
				"f:spec": obj{"f:clusterName": obj{}, "f:bootstrap": obj{"f:configRef": obj{"f:apiGroup": obj{}, "f:kind": obj{}, "f:name": obj{}}},
					"f:infrastructureRef": obj{"f:apiGroup": obj{}, "f:kind": obj{}, "f:name": obj{}}, "f:version": obj{}, "f:failureDomain": obj{},
					"f:readinessGates": obj{}, "f:deletion": obj{"f:nodeDrainTimeoutSeconds": obj{}}},
			}},
		{"manager": "capi-machine", "operation": "Update", "apiVersion": gv, "time": "2026-11-24T10:05:00Z", "subresource": "status",
			"fieldsType": "FieldsV1", "fieldsV1": obj{
				"f:status": obj{"f:phase": obj{}, "f:nodeRef": obj{".": obj{}, "f:name": obj{}}, "f:addresses": obj{}, "f:conditions": obj{},
					"f:bootstrapReady": obj{}, "f:infrastructureReady": obj{}, "f:nodeInfo": obj{".": obj{}, "f:kubeletVersion": obj{}}}}},
	}
	conditions := []obj{}
	for _, c := range []string{"Available", "Ready", "UpToDate", "BootstrapConfigReady", "InfrastructureReady", "NodeReady", "NodeHealthy", "Deleting", "Paused"} {
		status := "True"
		if c == "Deleting" || c == "Paused" {
			status = "False"
		}
		conditions = append(conditions, obj{"type": c, "status": status, "reason": "Not" + c, "observedGeneration": 3,
			"lastTransitionTime": "2026-11-24T10:05:00Z", "message": ""})
	}
	m["status"] = obj{
		"phase":              "Running",
		"nodeRef":            obj{"name": "ip-10-0-1-23.ec2.internal"},
		"addresses":          []obj{{"type": "InternalIP", "address": "10.0.1.23"}, {"type": "InternalDNS", "address": "ip-10-0-1-23.ec2.internal"}, {"type": "Hostname", "address": "ip-10-0-1-23.ec2.internal"}},
		"conditions":         conditions,
		"observedGeneration": 3,
		"initialization":     obj{"bootstrapDataSecretCreated": true, "infrastructureProvisioned": true},
		"nodeInfo": obj{"kubeletVersion": "v1.34.2", "containerRuntimeVersion": "cri-o://1.34.1", "kernelVersion": "5.14.0-570.el9.x86_64",
			"osImage": "Red Hat Enterprise Linux CoreOS 9.6", "operatingSystem": "linux", "architecture": "amd64",
			"machineID": strings.Repeat("a1", 16), "systemUUID": "ec2a1b2c-3d4e-5f60-7182-93a4b5c6d7e8", "bootID": "1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b",
			"kubeProxyVersion": "", "containerRuntimeVersion2": ""},
	}
	return m
}

// Table returns the meta.k8s.io Table of n Objects named machine-0..machine-<n-1> that kube-apiserver
// answers a list with when a client asks for one (kubectl get): CAPI's printer columns as cells, and
// each row's object the Machine's PartialObjectMetadata (includeObject=Metadata, kubectl's default).
func Table(n int, namespace string, private bool) []byte {
	var b strings.Builder
	b.WriteString(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"123456"},"columnDefinitions":[`)
	for i, c := range []string{"Name", "Cluster", "Node Name", "Provider ID", "Phase", "Age", "Version"} {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(encode(obj{"name": c, "type": "string", "format": "", "description": c, "priority": 0}))
	}
	b.WriteString(`],"rows":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		name := fmt.Sprintf("machine-%d", i)
		m := object(name, namespace, private, true)
		b.Write(encode(obj{
			"cells":  []any{name, "hc1", "ip-10-0-1-" + fmt.Sprint(i%250) + ".ec2.internal", "aws:///us-east-1a/i-0123456789abcdef0", "Running", "5d", "v1.34.2"},
			"object": obj{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": m["metadata"]},
		}))
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
