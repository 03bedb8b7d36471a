package discovery

import (
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
)

// v2beta1 and v2 of apidiscovery.k8s.io have the same fields (v2 is v2beta1 promoted unchanged); these
// functions copy one into the other field by field. TestV2beta1RoundTrip fills every field at random and
// fails if one is added upstream and not copied here.

func v2beta1ToV2(in *apidiscoveryv2beta1.APIGroupDiscoveryList) *apidiscoveryv2.APIGroupDiscoveryList {
	out := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: in.TypeMeta, ListMeta: in.ListMeta}
	if in.Items != nil {
		out.Items = make([]apidiscoveryv2.APIGroupDiscovery, len(in.Items))
	}
	for i, g := range in.Items {
		o := &out.Items[i]
		o.TypeMeta, o.ObjectMeta = g.TypeMeta, g.ObjectMeta
		if g.Versions != nil {
			o.Versions = make([]apidiscoveryv2.APIVersionDiscovery, len(g.Versions))
		}
		for j, v := range g.Versions {
			ov := &o.Versions[j]
			ov.Version, ov.Freshness = v.Version, apidiscoveryv2.DiscoveryFreshness(v.Freshness)
			if v.Resources != nil {
				ov.Resources = make([]apidiscoveryv2.APIResourceDiscovery, len(v.Resources))
			}
			for k, r := range v.Resources {
				or := &ov.Resources[k]
				or.Resource, or.ResponseKind, or.Scope = r.Resource, r.ResponseKind, apidiscoveryv2.ResourceScope(r.Scope)
				or.SingularResource, or.Verbs, or.ShortNames, or.Categories = r.SingularResource, r.Verbs, r.ShortNames, r.Categories
				if r.Subresources != nil {
					or.Subresources = make([]apidiscoveryv2.APISubresourceDiscovery, len(r.Subresources))
				}
				for l, s := range r.Subresources {
					or.Subresources[l] = apidiscoveryv2.APISubresourceDiscovery{
						Subresource: s.Subresource, ResponseKind: s.ResponseKind, AcceptedTypes: s.AcceptedTypes, Verbs: s.Verbs,
					}
				}
			}
		}
	}
	return out
}

func v2ToV2beta1(in *apidiscoveryv2.APIGroupDiscoveryList) *apidiscoveryv2beta1.APIGroupDiscoveryList {
	out := &apidiscoveryv2beta1.APIGroupDiscoveryList{TypeMeta: in.TypeMeta, ListMeta: in.ListMeta}
	if in.Items != nil {
		out.Items = make([]apidiscoveryv2beta1.APIGroupDiscovery, len(in.Items))
	}
	for i, g := range in.Items {
		o := &out.Items[i]
		o.TypeMeta, o.ObjectMeta = g.TypeMeta, g.ObjectMeta
		if g.Versions != nil {
			o.Versions = make([]apidiscoveryv2beta1.APIVersionDiscovery, len(g.Versions))
		}
		for j, v := range g.Versions {
			ov := &o.Versions[j]
			ov.Version, ov.Freshness = v.Version, apidiscoveryv2beta1.DiscoveryFreshness(v.Freshness)
			if v.Resources != nil {
				ov.Resources = make([]apidiscoveryv2beta1.APIResourceDiscovery, len(v.Resources))
			}
			for k, r := range v.Resources {
				or := &ov.Resources[k]
				or.Resource, or.ResponseKind, or.Scope = r.Resource, r.ResponseKind, apidiscoveryv2beta1.ResourceScope(r.Scope)
				or.SingularResource, or.Verbs, or.ShortNames, or.Categories = r.SingularResource, r.Verbs, r.ShortNames, r.Categories
				if r.Subresources != nil {
					or.Subresources = make([]apidiscoveryv2beta1.APISubresourceDiscovery, len(r.Subresources))
				}
				for l, s := range r.Subresources {
					or.Subresources[l] = apidiscoveryv2beta1.APISubresourceDiscovery{
						Subresource: s.Subresource, ResponseKind: s.ResponseKind, AcceptedTypes: s.AcceptedTypes, Verbs: s.Verbs,
					}
				}
			}
		}
	}
	return out
}
