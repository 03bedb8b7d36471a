// Package conformance checks the generated private CRDs against the CRDs upstream publishes: for every CRD
// in a mirrored module's config/.../crd/bases (from the Go module cache) and for Agent's published CRDs,
// the private CRD must serve the same versions with the same served/storage/deprecation flags,
// subresources, printer columns and openAPIV3Schema, differing only in group, names, the clash-free
// shortNames and categories (upstream.PrivateShortNamePrefix, upstream.PrivateCategoryPrefix) and the
// conversion webhook stanza, which upstream's bases leave to kustomize and the generator writes itself.
package conformance

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// agentCRDs holds the CRDs the Agent provider publishes; its Go module is not on the module proxy, so
// apis/upstream/agent is written from them (see its package doc and the folder's README).
const agentCRDs = "../testdata/agent-crds"

func TestPrivateCRDsMatchUpstream(t *testing.T) {
	private := readCRDs(t, mustGlob(t, "../../apis/private/crds/*.yaml"))
	upstreamFiles := append(moduleCRDFiles(t), mustGlob(t, filepath.Join(agentCRDs, "*.yaml"))...)
	published := readCRDs(t, upstreamFiles)
	if len(published) == 0 {
		t.Fatal("found no upstream CRDs")
	}

	seen := map[string]bool{}
	for name, up := range published {
		want := privateTwin(t, up)
		got, ok := private[want.Name]
		if !ok {
			t.Errorf("upstream CRD %s (%s) has no private twin %s: add its package to apis/upstream.Packages", name, up.file, want.Name)
			continue
		}
		seen[want.Name] = true
		checkConversion(t, got.CustomResourceDefinition)
		got.Spec.Conversion = nil
		if reason, ok := descriptionDrift[name]; ok {
			// Compare everything but descriptions, which come from another k8s.io/api.
			t.Logf("%s: descriptions not compared: %s", name, reason)
			want.Spec, got.Spec = withoutDescriptions(want.Spec), withoutDescriptions(got.Spec)
		}
		if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
			t.Errorf("private CRD %s differs from upstream %s beyond group and names (-want +got):\n%s", want.Name, up.file, diff)
		}
	}
	for name, crd := range private {
		if !seen[name] {
			t.Errorf("private CRD %s (%s) has no upstream CRD in the mirrored modules", name, crd.file)
		}
	}
	t.Logf("compared %d upstream CRDs with their private twins", len(seen))
}

// checkConversion checks the one part of a private CRD's spec that upstream's bases lack: kinds that convert
// by hub and spoke have a conversion webhook at the proxy's /convert for ConversionReview v1, every other
// CRD has none (strategy None).
func checkConversion(t *testing.T, crd apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	webhook := false
	for _, r := range translate.NewTable(routes.Routes).Routes() {
		if r.Private.Resource+"."+r.Private.Group == crd.Name && r.Conversion != translate.NoConversion {
			webhook = true
		}
	}
	c := crd.Spec.Conversion
	switch {
	case !webhook && c != nil && c.Strategy != apiextensionsv1.NoneConverter:
		t.Errorf("%s: conversion %+v, want none: its kind has no hub and spoke", crd.Name, c)
	case webhook && (c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil ||
		c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.Service == nil ||
		c.Webhook.ClientConfig.Service.Path == nil || *c.Webhook.ClientConfig.Service.Path != "/convert" ||
		!slices.Equal(c.Webhook.ConversionReviewVersions, []string{"v1"})):
		t.Errorf("%s: conversion %+v, want a webhook at /convert for ConversionReview v1", crd.Name, c)
	}
}

// TestRoutesDeprecation: the route table says a version is Deprecated exactly where its private CRD
// (equal to upstream's, TestPrivateCRDsMatchUpstream) marks it deprecated, and gives a RemovedRelease
// only to deprecated versions; every version of the private CRDs has a route (served or not).
func TestRoutesDeprecation(t *testing.T) {
	deprecated := map[string]bool{} // "<version> <plural>.<private group>"
	for _, crd := range readCRDs(t, mustGlob(t, "../../apis/private/crds/*.yaml")) {
		for _, v := range crd.Spec.Versions {
			deprecated[v.Name+" "+crd.Name] = v.Deprecated
		}
	}
	var n, removed int
	for _, r := range routes.Routes {
		key := r.Private.Version + " " + r.Private.Resource + "." + r.Private.Group
		want, ok := deprecated[key]
		if !ok {
			t.Errorf("route %s: no private CRD version %s", r.Upstream, key)
			continue
		}
		delete(deprecated, key)
		if r.Deprecated != want {
			t.Errorf("route %s: Deprecated %t, its private CRD says %t", r.Upstream, r.Deprecated, want)
		}
		if r.RemovedRelease != "" && !r.Deprecated {
			t.Errorf("route %s: RemovedRelease %q on a version that is not deprecated", r.Upstream, r.RemovedRelease)
		}
		if r.Deprecated {
			n++
		}
		if r.RemovedRelease != "" {
			removed++
		}
	}
	for key := range deprecated {
		t.Errorf("private CRD version %s has no route", key)
	}
	t.Logf("%d deprecated versions, %d with a removed release", n, removed)
}

// TestContractLabels checks CAPI's contract labels on the private CRDs of provider groups: CAPI's
// apiVersion getter reads "cluster.x-k8s.io/<contract>: <versions joined by _>" and picks the newest
// version listed, so every listed version must be one the CRD serves, and every CRD of a group that
// CAPI references by contract must carry at least one such label.
func TestContractLabels(t *testing.T) {
	for _, crd := range readCRDs(t, mustGlob(t, "../../apis/private/crds/*.yaml")) {
		served := map[string]bool{}
		for _, v := range crd.Spec.Versions {
			served[v.Name] = v.Served
		}
		var n int
		for k, v := range crd.Labels {
			if !strings.HasPrefix(k, "cluster.x-k8s.io/v") {
				continue
			}
			n++
			for _, version := range strings.Split(v, "_") {
				if !served[version] {
					t.Errorf("%s: label %s=%s lists %s, which the CRD does not serve", crd.Name, k, v, version)
				}
			}
		}
		up, _ := upstream.UpstreamGroup(crd.Spec.Group)
		if n == 0 && providerGroups[up] {
			t.Errorf("%s: no contract label; CAPI cannot resolve the version of a reference to %s", crd.Name, crd.Spec.Names.Kind)
		}
	}
}

// providerGroups are the groups whose kinds CAPI references by contract (infrastructureRef,
// bootstrap configRef, controlPlaneRef).
var providerGroups = map[string]bool{
	"infrastructure.cluster.x-k8s.io":          true,
	"bootstrap.cluster.x-k8s.io":               true,
	"controlplane.cluster.x-k8s.io":            true,
	"vmware.infrastructure.cluster.x-k8s.io":   true,
	"capi-provider.agent-install.openshift.io": true,
}

// descriptionDrift lists upstream CRDs that embed k8s.io/api types and were generated against another
// k8s.io/api than this module pins (go.mod): the docs of those types, and so the schema descriptions,
// differ, while the schema itself must not.
var descriptionDrift = map[string]string{
	"kubevirtmachines.infrastructure.cluster.x-k8s.io":         "CAPK v0.11.2 embeds core/v1 Toleration and PVC specs from k8s.io/api v0.34.3",
	"kubevirtmachinetemplates.infrastructure.cluster.x-k8s.io": "CAPK v0.11.2 embeds core/v1 Toleration and PVC specs from k8s.io/api v0.34.3",
}

// withoutDescriptions returns a copy of spec with every schema description cleared.
func withoutDescriptions(spec apiextensionsv1.CustomResourceDefinitionSpec) apiextensionsv1.CustomResourceDefinitionSpec {
	spec = *spec.DeepCopy()
	var clear func(s *apiextensionsv1.JSONSchemaProps)
	clear = func(s *apiextensionsv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		s.Description = ""
		for k, p := range s.Properties {
			clear(&p)
			s.Properties[k] = p
		}
		if s.Items != nil {
			clear(s.Items.Schema)
			for i := range s.Items.JSONSchemas {
				clear(&s.Items.JSONSchemas[i])
			}
		}
		if s.AdditionalProperties != nil {
			clear(s.AdditionalProperties.Schema)
		}
		for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
			for i := range list {
				clear(&list[i])
			}
		}
		clear(s.Not)
	}
	for _, v := range spec.Versions {
		if v.Schema != nil {
			clear(v.Schema.OpenAPIV3Schema)
		}
	}
	return spec
}

type crdFile struct {
	apiextensionsv1.CustomResourceDefinition
	file string
}

// privateTwin returns what the private CRD of up must look like: up with the private group, names and
// the prefixed shortNames and categories.
func privateTwin(t *testing.T, up crdFile) apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	twin := *up.DeepCopy()
	group, ok := upstream.PrivateGroup(up.Spec.Group)
	if !ok {
		t.Fatalf("%s: group %s is not in upstream.Groups", up.file, up.Spec.Group)
	}
	twin.Spec.Group = group
	twin.Name = twin.Spec.Names.Plural + "." + group
	for i, s := range twin.Spec.Names.ShortNames {
		twin.Spec.Names.ShortNames[i] = upstream.PrivateShortNamePrefix + s
	}
	for i, c := range twin.Spec.Names.Categories {
		twin.Spec.Names.Categories[i] = upstream.PrivateCategoryPrefix + c
	}
	return twin
}

// moduleCRDFiles returns the published CRD files of every module that holds a mirrored package
// (framework.MirroredModuleCRDFiles).
func moduleCRDFiles(t *testing.T) []string {
	t.Helper()
	files, err := framework.MirroredModuleCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s (err %v)", pattern, err)
	}
	return files
}

// readCRDs decodes every CRD document of files, keyed by CRD name.
func readCRDs(t *testing.T, files []string) map[string]crdFile {
	t.Helper()
	out := map[string]crdFile{}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
				continue
			}
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var crd apiextensionsv1.CustomResourceDefinition
			if err := json.Unmarshal(js, &crd); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if crd.Kind != "CustomResourceDefinition" {
				continue
			}
			if prev, dup := out[crd.Name]; dup {
				t.Fatalf("CRD %s in both %s and %s", crd.Name, prev.file, f)
			}
			out[crd.Name] = crdFile{CustomResourceDefinition: crd, file: f}
		}
	}
	return out
}

// TestRoutesMatchCRDs checks the generated route table against the private CRDs: every route names a
// served version of a private CRD, with its kind, scope, subresources, storage flag (the hub of a kind
// that converts by webhook) and contract labels.
func TestRoutesMatchCRDs(t *testing.T) {
	crds := readCRDs(t, mustGlob(t, "../../apis/private/crds/*.yaml"))
	for _, r := range translate.NewTable(routes.Routes).Routes() {
		crd, ok := crds[r.Private.Resource+"."+r.Private.Group]
		if !ok {
			t.Errorf("route %s: no private CRD %s.%s", r.Upstream, r.Private.Resource, r.Private.Group)
			continue
		}
		i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == r.Private.Version })
		if i < 0 {
			t.Errorf("route %s: CRD %s has no version %s", r.Upstream, crd.Name, r.Private.Version)
			continue
		}
		v := crd.Spec.Versions[i]
		var subresources []string
		if v.Subresources != nil && v.Subresources.Status != nil {
			subresources = append(subresources, "status")
		}
		if v.Subresources != nil && v.Subresources.Scale != nil {
			subresources = append(subresources, "scale")
		}
		if lbl := contractLabels(crd.Labels); !maps.Equal(lbl, r.ContractLabels) {
			t.Errorf("route %s: contract labels %v, CRD %s has %v", r.Upstream, r.ContractLabels, crd.Name, lbl)
		}
		if v.Storage != r.Storage || (r.Conversion == translate.Hub) != (r.Storage && crd.Spec.Conversion != nil) || crd.Spec.Names.Kind != r.Kind || (crd.Spec.Scope == apiextensionsv1.NamespaceScoped) != r.Namespaced ||
			!slices.Equal(subresources, r.Subresources) {
			t.Errorf("route %s (kind %s, storage %v, namespaced %v, subresources %v) disagrees with CRD %s version %s (kind %s, storage %v, scope %s, subresources %v)",
				r.Upstream, r.Kind, r.Storage, r.Namespaced, r.Subresources, crd.Name, v.Name, crd.Spec.Names.Kind, v.Storage, crd.Spec.Scope, subresources)
		}
	}
}

// contractLabels returns the labels of CAPI's contracts ("cluster.x-k8s.io/v1beta2"), or nil.
func contractLabels(labels map[string]string) map[string]string {
	var out map[string]string
	for k, v := range labels {
		if strings.HasPrefix(k, "cluster.x-k8s.io/v") {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
