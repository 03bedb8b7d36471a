package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	awsv1 "sigs.k8s.io/cluster-api-provider-aws/v2/api/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// scheme holds the upstream types the hosted clusters are seeded with.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, clusterv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// namespaceName is the hosted-control-plane namespace of hosted cluster i, as HyperShift names them
// (clusters-<name>).
func namespaceName(i int) string { return fmt.Sprintf("clusters-hc%d", i) }

// machineName is Machine j of a hosted cluster.
func machineName(j int) string { return fmt.Sprintf("hc-workers-%d", j) }

// hostedCluster returns the objects of one hosted cluster in namespace ns, in the upstream groups, in the
// order they are created (owners first): the kubeconfig Secret CAPI caches (labelled with the cluster's
// name) and another Secret, a ConfigMap, the Cluster and its AWSCluster, an AWSMachineTemplate, a
// MachineDeployment, its MachineSet, machines Machines with their AWSMachines, and a MachineHealthCheck.
// Owner references are filled in by seed once the owners exist.
func hostedCluster(ns string, machines int) []client.Object {
	const cluster = "hc"
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		l := map[string]string{clusterv1.ClusterNameLabel: cluster}
		for k, v := range labels {
			l[k] = v
		}
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}
	}
	infraRef := func(kind, name string) clusterv1.ContractVersionedObjectReference {
		return clusterv1.ContractVersionedObjectReference{APIGroup: awsv1.GroupVersion.Group, Kind: kind, Name: name}
	}
	poolLabels := map[string]string{clusterv1.MachineDeploymentNameLabel: "hc-workers"}
	machineSpec := func(infra string) clusterv1.MachineSpec {
		return clusterv1.MachineSpec{
			ClusterName:       cluster,
			Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("hc-user-data")},
			InfrastructureRef: infraRef("AWSMachine", infra),
			Version:           "v1.34.4",
		}
	}
	awsMachineSpec := awsv1.AWSMachineSpec{
		InstanceType:       "m6i.xlarge",
		IAMInstanceProfile: "hc-worker-profile",
		AMI:                awsv1.AMIReference{ID: ptr.To("ami-0123456789abcdef0")},
		Subnet:             &awsv1.AWSResourceReference{ID: ptr.To("subnet-0123456789abcdef0")},
		AdditionalTags:     awsv1.Tags{"kubernetes.io/cluster/hc": "owned", "red-hat-managed": "true"},
		RootVolume:         &awsv1.Volume{Size: 120, Type: awsv1.VolumeTypeGP3},
	}
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: meta(cluster+"-kubeconfig", nil), Type: clusterv1.ClusterSecretType,
			Data: map[string][]byte{"value": []byte(strings.Repeat("k", 1500))}},
		&corev1.Secret{ObjectMeta: meta("hc-user-data", nil), Data: map[string][]byte{"value": []byte(strings.Repeat("u", 900))}},
		&corev1.ConfigMap{ObjectMeta: meta("hc-config", nil), Data: map[string]string{"config": strings.Repeat("c", 500)}},
		&clusterv1.Cluster{ObjectMeta: meta(cluster, nil), Spec: clusterv1.ClusterSpec{
			InfrastructureRef: infraRef("AWSCluster", cluster),
			ClusterNetwork:    clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.132.0.0/14"}}},
		}},
		&awsv1.AWSCluster{ObjectMeta: meta(cluster, nil), Spec: awsv1.AWSClusterSpec{Region: "us-east-1"}},
		&awsv1.AWSMachineTemplate{ObjectMeta: meta("hc-workers", nil), Spec: awsv1.AWSMachineTemplateSpec{
			Template: awsv1.AWSMachineTemplateResource{Spec: awsMachineSpec}}},
		&clusterv1.MachineDeployment{ObjectMeta: meta("hc-workers", nil), Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: cluster, Replicas: ptr.To(int32(machines)),
			Selector: metav1.LabelSelector{MatchLabels: poolLabels},
			Template: clusterv1.MachineTemplateSpec{ObjectMeta: clusterv1.ObjectMeta{Labels: poolLabels},
				Spec: func() clusterv1.MachineSpec {
					s := machineSpec("")
					s.InfrastructureRef = infraRef("AWSMachineTemplate", "hc-workers")
					return s
				}()},
		}},
		&clusterv1.MachineSet{ObjectMeta: meta("hc-workers-a", poolLabels), Spec: clusterv1.MachineSetSpec{
			ClusterName: cluster, Replicas: ptr.To(int32(machines)),
			Selector: metav1.LabelSelector{MatchLabels: poolLabels},
			Template: clusterv1.MachineTemplateSpec{ObjectMeta: clusterv1.ObjectMeta{Labels: poolLabels},
				Spec: func() clusterv1.MachineSpec {
					s := machineSpec("")
					s.InfrastructureRef = infraRef("AWSMachineTemplate", "hc-workers")
					return s
				}()},
		}},
	}
	for j := range machines {
		name := machineName(j)
		objs = append(objs,
			&clusterv1.Machine{ObjectMeta: meta(name, poolLabels), Spec: machineSpec(name)},
			&awsv1.AWSMachine{ObjectMeta: meta(name, poolLabels), Spec: awsMachineSpec})
	}
	return append(objs, &clusterv1.MachineHealthCheck{ObjectMeta: meta("hc-workers", nil), Spec: clusterv1.MachineHealthCheckSpec{
		ClusterName: cluster, Selector: metav1.LabelSelector{MatchLabels: poolLabels},
		Checks: clusterv1.MachineHealthCheckChecks{
			NodeStartupTimeoutSeconds: ptr.To(int32(1200)),
			UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: ptr.To(int32(480))},
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: ptr.To(int32(480))},
			},
		},
	}})
}

// owners says whose ownerReference each seeded kind carries: the owner's kind and name (by the object's
// own name when empty).
var owners = map[string]struct{ kind, name string }{
	"AWSCluster":         {"Cluster", "hc"},
	"MachineSet":         {"MachineDeployment", "hc-workers"},
	"Machine":            {"MachineSet", "hc-workers-a"},
	"AWSMachine":         {"Machine", ""},
	"AWSMachineTemplate": {"Cluster", "hc"},
	"MachineDeployment":  {"Cluster", "hc"},
	"MachineHealthCheck": {"Cluster", "hc"},
}

// seed creates namespaces hosted clusters with c (upstream groups, through a proxy), on workers
// goroutines, and returns the number of objects created.
func seed(ctx context.Context, c client.Client, namespaces, machines, workers int) (int, error) {
	var next, created atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= namespaces {
					return
				}
				n, err := seedNamespace(ctx, c, namespaceName(i), machines)
				created.Add(int64(n))
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return int(created.Load()), first
}

// seedNamespace creates namespace ns and its hosted cluster's objects, owners first, each owned object
// with a controller ownerReference to its owner (the names and UIDs as created).
func seedNamespace(ctx context.Context, c client.Client, ns string, machines int) (int, error) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return 0, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	type key struct{ kind, name string }
	created := map[key]client.Object{}
	n := 0
	for _, obj := range hostedCluster(ns, machines) {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return n, err
		}
		if o, ok := owners[gvk.Kind]; ok {
			name := o.name
			if name == "" {
				name = obj.GetName()
			}
			owner := created[key{o.kind, name}]
			if owner == nil {
				return n, fmt.Errorf("%s %s/%s: owner %s %s not created first", gvk.Kind, ns, obj.GetName(), o.kind, name)
			}
			ogvk, _ := apiutil.GVKForObject(owner, scheme)
			obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: ogvk.GroupVersion().String(), Kind: ogvk.Kind,
				Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}})
		}
		if err := c.Create(ctx, obj); err != nil {
			return n, fmt.Errorf("creating %s %s/%s: %w", gvk.Kind, ns, obj.GetName(), err)
		}
		created[key{gvk.Kind, obj.GetName()}] = obj
		n++
	}
	return n, nil
}

// The kinds the fleet watches, in the upstream groups at the storage version of the private CRDs
// (v1beta2, so that no read is converted); the bare proxy's clients read the same resources in the private
// groups (privateGVR).
var (
	coreGV  = clusterv1.GroupVersion
	awsGV   = awsv1.GroupVersion
	addonGV = schema.GroupVersion{Group: "addons.cluster.x-k8s.io", Version: "v1beta2"}
	kcpGV   = schema.GroupVersion{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2"}

	clusters             = coreGV.WithResource("clusters")
	machinesGVR          = coreGV.WithResource("machines")
	machineSets          = coreGV.WithResource("machinesets")
	machineDeployments   = coreGV.WithResource("machinedeployments")
	machineHealthChecks  = coreGV.WithResource("machinehealthchecks")
	machinePools         = coreGV.WithResource("machinepools")
	machineDrainRules    = coreGV.WithResource("machinedrainrules")
	resourceSets         = addonGV.WithResource("clusterresourcesets")
	resourceSetBindings  = addonGV.WithResource("clusterresourcesetbindings")
	kubeadmControlPlanes = kcpGV.WithResource("kubeadmcontrolplanes")
	awsClusters          = awsGV.WithResource("awsclusters")
	awsMachines          = awsGV.WithResource("awsmachines")
	awsMachineTemplates  = awsGV.WithResource("awsmachinetemplates")

	secrets    = corev1.SchemeGroupVersion.WithResource("secrets")
	configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// privateGVR is gvr in its private group (apis/upstream: x-k8s.io becomes hypershift.openshift.io);
// built-in resources are left alone.
func privateGVR(gvr schema.GroupVersionResource) schema.GroupVersionResource {
	if g, ok := strings.CutSuffix(gvr.Group, "x-k8s.io"); ok {
		gvr.Group = g + "hypershift.openshift.io"
	}
	return gvr
}
