package migration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Upstream resources of a HyperShift hosted control plane (see the package doc of the shapes below).
var (
	clusters           = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	machineDeployments = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"}
	machineSets        = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinesets"}
	machines           = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	machineHealthCheck = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinehealthchecks"}
	awsClusters        = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "awsclusters"}
	awsMachineTmpls    = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "awsmachinetemplates"}
	awsMachines        = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "awsmachines"}
	agentClusters      = schema.GroupVersionResource{Group: "capi-provider.agent-install.openshift.io", Version: "v1beta1", Resource: "agentclusters"}
	agentMachineTmpls  = schema.GroupVersionResource{Group: "capi-provider.agent-install.openshift.io", Version: "v1beta1", Resource: "agentmachinetemplates"}
	agentMachines      = schema.GroupVersionResource{Group: "capi-provider.agent-install.openshift.io", Version: "v1beta1", Resource: "agentmachines"}

	// shapeResources are every mapped resource a shape creates.
	shapeResources = []schema.GroupVersionResource{clusters, machineDeployments, machineSets, machines, machineHealthCheck,
		awsClusters, awsMachineTmpls, awsMachines, agentClusters, agentMachineTmpls, agentMachines}
)

// shape sizes a HyperShift-shaped hosted control plane namespace (facts from HyperShift's hostedcluster
// controller and control-plane-operator, see the project's notes): one Cluster "hc" whose controlPlaneRef
// names the HostedControlPlane (hypershift.openshift.io, outside every CAPI group) and whose
// infrastructureRef names an AWSCluster; an AgentCluster beside it; per NodePool a MachineDeployment with
// an AWSMachineTemplate (every second one Agent), its MachineSet and Machines with their infrastructure
// machines, a MachineHealthCheck, the NodePool's user-data Secret; a bootstrap Secret per Machine owned by
// the Machine, and the kubeconfig Secret owned by the Cluster.
type shape struct {
	nodePools, machinesPerPool int
	// bare leaves out the AgentCluster and, of each pool, all but the Machines, which the Cluster owns.
	bare bool
}

// smallShape has every kind of the shape once.
var smallShape = shape{nodePools: 1, machinesPerPool: 1}

// killShape is the kill test's: a Cluster, its AWSCluster, one Machine with its AWSMachine, and a Secret
// owned by each of the Cluster and the Machine.
var killShape = shape{nodePools: 1, machinesPerPool: 1, bare: true}

// create creates the shape in namespace ns in the upstream groups, straight at the apiserver, with the
// status of the kinds that have one written through /status.
func (s shape) create(ctx context.Context, t testing.TB, dyn dynamic.Interface, kube kubernetes.Interface, ns string) {
	t.Helper()
	mk := func(gvr schema.GroupVersionResource, doc string, status string, owners ...*unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		u.SetNamespace(ns)
		u.SetOwnerReferences(ownerRefs(owners...))
		got, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating %s %s: %v", gvr.Resource, u.GetName(), err)
		}
		if status != "" {
			if err := json.Unmarshal([]byte(status), &got.Object); err != nil {
				t.Fatal(err)
			}
			if got, err = dyn.Resource(gvr).Namespace(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("status of %s %s: %v", gvr.Resource, u.GetName(), err)
			}
		}
		return got
	}
	secret := func(name, key string, owners ...*unstructured.Unstructured) {
		t.Helper()
		// CAPI's managers cache only Secrets with its cluster-name label.
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: ownerRefs(owners...),
			Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "hc"}},
			Data: map[string][]byte{key: []byte("data of " + name)}}
		if _, err := kube.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Secret %s: %v", name, err)
		}
	}

	cluster := mk(clusters, `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","metadata":{"name":"hc",
		"annotations":{"hypershift.openshift.io/cluster":"`+ns+`/hc"},"finalizers":["cluster.cluster.x-k8s.io"]},
		"spec":{"controlPlaneRef":{"apiGroup":"hypershift.openshift.io","kind":"HostedControlPlane","name":"hc"},
		"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSCluster","name":"hc"}}}`,
		`{"status":{"phase":"Provisioned","initialization":{"infrastructureProvisioned":true,"controlPlaneInitialized":true}}}`)
	mk(awsClusters, `{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSCluster","metadata":{"name":"hc",
		"labels":{"cluster.x-k8s.io/cluster-name":"hc"},"finalizers":["awscluster.infrastructure.cluster.x-k8s.io"]},
		"spec":{"region":"us-east-1","controlPlaneEndpoint":{"host":"api.hc.example.com","port":6443}}}`,
		`{"status":{"ready":true}}`, cluster)
	if !s.bare {
		mk(agentClusters, `{"apiVersion":"capi-provider.agent-install.openshift.io/v1beta1","kind":"AgentCluster","metadata":{"name":"hc-agent",
		"labels":{"cluster.x-k8s.io/cluster-name":"hc"}},"spec":{"controlPlaneEndpoint":{"host":"api.hc.example.com","port":6443}}}`,
			`{"status":{"ready":true,"clusterDeploymentReference":{"name":"hc","namespace":"`+ns+`"}}}`, cluster)
	}
	secret("hc-kubeconfig", "value", cluster)
	for p := 0; p < s.nodePools; p++ {
		pool := fmt.Sprintf("np%d", p)
		agent := p%2 == 1
		tmplGVR, tmplKind, tmplGroup, machineGVR, machineKind := awsMachineTmpls, "AWSMachineTemplate", awsMachineTmpls.Group, awsMachines, "AWSMachine"
		tmplDoc := `{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachineTemplate","metadata":{"name":"` + pool + `"},
			"spec":{"template":{"spec":{"instanceType":"m5.large","ami":{"id":"ami-123"}}}}}`
		if agent {
			tmplGVR, tmplKind, tmplGroup, machineGVR, machineKind = agentMachineTmpls, "AgentMachineTemplate", agentMachineTmpls.Group, agentMachines, "AgentMachine"
			tmplDoc = `{"apiVersion":"capi-provider.agent-install.openshift.io/v1beta1","kind":"AgentMachineTemplate","metadata":{"name":"` + pool + `"},
				"spec":{"template":{"spec":{"agentLabelSelector":{"matchLabels":{"pool":"` + pool + `"}}}}}}`
		}
		msName := pool + "-5d4f8"
		var ms *unstructured.Unstructured
		if s.bare {
			ms = cluster
		} else {
			ms = s.pool(mk, secret, cluster, pool, msName, tmplGVR, tmplDoc, tmplGroup, tmplKind)
		}
		for i := 0; i < s.machinesPerPool; i++ {
			name := fmt.Sprintf("%s-%d", msName, i)
			machine := mk(machines, fmt.Sprintf(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":%q,
				"labels":{"cluster.x-k8s.io/cluster-name":"hc","hypershift.openshift.io/nodePool":%q,"cluster.x-k8s.io/set-name":%q},
				"annotations":{"cluster.x-k8s.io/cloned-from-groupkind":"%s.%s","cluster.x-k8s.io/cloned-from-name":%q},
				"finalizers":["machine.cluster.x-k8s.io"]},
				"spec":{"clusterName":"hc","bootstrap":{"dataSecretName":%q},"providerID":"aws:///us-east-1a/i-%04d",
				"infrastructureRef":{"apiGroup":%q,"kind":%q,"name":%q}}}`, name, pool, msName, tmplKind, tmplGroup, pool, name+"-bootstrap", i, tmplGroup, machineKind, name),
				fmt.Sprintf(`{"status":{"phase":"Running","nodeRef":{"name":"node-%s"},"addresses":[{"type":"InternalIP","address":"10.0.0.%d"}]}}`, name, i%250+1), ms)
			infraDoc := fmt.Sprintf(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachine","metadata":{"name":%q,
				"labels":{"cluster.x-k8s.io/cluster-name":"hc"},"finalizers":["awsmachine.infrastructure.cluster.x-k8s.io"]},
				"spec":{"instanceType":"m5.large","providerID":"aws:///us-east-1a/i-%04d"}}`, name, i)
			infraStatus := `{"status":{"ready":true,"instanceState":"running"}}`
			if agent {
				infraDoc = fmt.Sprintf(`{"apiVersion":"capi-provider.agent-install.openshift.io/v1beta1","kind":"AgentMachine","metadata":{"name":%q,
					"labels":{"cluster.x-k8s.io/cluster-name":"hc"},"finalizers":["agentmachine.agent-install.openshift.io/deprovision"]},
					"spec":{"agentLabelSelector":{"matchLabels":{"pool":%q}}}}`, name, pool)
				infraStatus = `{"status":{"ready":true}}`
			}
			mk(machineGVR, infraDoc, infraStatus, machine)
			secret(name+"-bootstrap", "value", machine)
		}
	}
}

// mkFunc creates an object with owners; secretFunc a Secret.
type (
	mkFunc     func(gvr schema.GroupVersionResource, doc string, status string, owners ...*unstructured.Unstructured) *unstructured.Unstructured
	secretFunc func(name, key string, owners ...*unstructured.Unstructured)
)

// pool creates a NodePool's objects but its Machines: the machine template, the user-data Secret, the
// MachineDeployment, its MachineHealthCheck, and its MachineSet, which it returns.
func (s shape) pool(mk mkFunc, secret secretFunc, cluster *unstructured.Unstructured, pool, msName string,
	tmplGVR schema.GroupVersionResource, tmplDoc, tmplGroup, tmplKind string) *unstructured.Unstructured {
	mk(tmplGVR, tmplDoc, "", cluster)
	secret(pool+"-user-data", "value", cluster)
	template := fmt.Sprintf(`{"metadata":{"labels":{"cluster.x-k8s.io/cluster-name":"hc","hypershift.openshift.io/nodePool":%q}},
		"spec":{"clusterName":"hc","bootstrap":{"dataSecretName":%q},
		"infrastructureRef":{"apiGroup":%q,"kind":%q,"name":%q}}}`, pool, pool+"-user-data", tmplGroup, tmplKind, pool)
	selector := fmt.Sprintf(`{"matchLabels":{"cluster.x-k8s.io/cluster-name":"hc","hypershift.openshift.io/nodePool":%q}}`, pool)
	md := mk(machineDeployments, fmt.Sprintf(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment","metadata":{"name":%q,
		"labels":{"cluster.x-k8s.io/cluster-name":"hc"},"annotations":{"hypershift.openshift.io/nodePool":"clusters/%s"}},
		"spec":{"clusterName":"hc","replicas":%d,"selector":%s,"template":%s,
		"rollout":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1,"maxUnavailable":0}}}}}`, pool, pool, s.machinesPerPool, selector, template),
		fmt.Sprintf(`{"status":{"replicas":%d,"readyReplicas":%d,"phase":"Running"}}`, s.machinesPerPool, s.machinesPerPool), cluster)
	mk(machineHealthCheck, fmt.Sprintf(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineHealthCheck","metadata":{"name":%q},
		"spec":{"clusterName":"hc","selector":%s,"checks":{"unhealthyNodeConditions":[{"type":"Ready","status":"False","timeoutSeconds":480}]}}}`, pool, selector),
		"", cluster)
	return mk(machineSets, fmt.Sprintf(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","metadata":{"name":%q,
		"labels":{"cluster.x-k8s.io/cluster-name":"hc","hypershift.openshift.io/nodePool":%q,"cluster.x-k8s.io/deployment-name":%q,
			"machine-template-hash":"1234567890-5d4f8"}},
		"spec":{"clusterName":"hc","replicas":%d,"selector":%s,"template":%s}}`, msName, pool, pool, s.machinesPerPool, selector, template),
		fmt.Sprintf(`{"status":{"replicas":%d,"readyReplicas":%d}}`, s.machinesPerPool, s.machinesPerPool), md)
}

// ownerRefs are controller references to the owners (the first is the controller), as CAPI sets them.
func ownerRefs(owners ...*unstructured.Unstructured) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for i, o := range owners {
		controller := i == 0
		block := true
		out = append(out, metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(),
			Controller: &controller, BlockOwnerDeletion: &block})
	}
	return out
}
