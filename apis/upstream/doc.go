// Package upstream is the one table that drives generation and translation: which upstream API packages
// are mirrored into private API groups, and how each upstream group maps to its private twin.
//
// The generator (../../generator) loads every package in Packages with k8s.io/gengo/v2, discovers its kinds
// (types marked +kubebuilder:object:root=true that embed metav1.ObjectMeta or metav1.ListMeta) and its hub
// (the version whose kinds carry +kubebuilder:storageversion), and emits the private Go types, CRDs,
// typed converters and the route table from it. Whole-object conversions between versions come from the
// API types' methods or from functions of the candidate packages in ConversionPackages, wherever the
// pinned version keeps them. Adding an upstream package is one line in Packages; adding an upstream group
// is one line in Groups.
//
// Nothing here imports the upstream packages themselves: the table is plain data, so the proxy and the
// generator can both read it.
package upstream
