package emit

import (
	"github.com/dave/jennifer/jen"

	"github.com/openshift/hypershift-capi-proxy/generator/model"
)

// Routes writes zz_generated/routes/zz_generated.routes.go: one translate.Route per kind and version
// (unserved ones marked Unserved), with its typed codecs and group-carrying JSON paths.
func (e *Emitter) Routes() error {
	f := jen.NewFilePathName(e.M.Module+"/zz_generated/routes", "routes")
	e.header(f, "apis/upstream.Packages")
	f.PackageComment("Package routes holds the generated route table: every mapped kind at every version of its CRD.")
	e.importAliases(f)
	schema := "k8s.io/apimachinery/pkg/runtime/schema"
	strs := func(ss []string) jen.Code {
		if len(ss) == 0 {
			return jen.Nil()
		}
		var c []jen.Code
		for _, s := range ss {
			c = append(c, jen.Lit(s))
		}
		return jen.Index().String().Values(c...)
	}
	var routes []jen.Code
	for _, pkg := range e.M.Packages {
		conv := e.M.ConvertPath(pkg)
		for _, k := range pkg.Kinds {
			var paths []jen.Code
			for _, p := range k.Paths {
				paths = append(paths, jen.Line().Lit(p))
			}
			paths = append(paths, jen.Line())
			fields := jen.Dict{
				jen.Id("Upstream"): jen.Qual(schema, "GroupVersionResource").Values(jen.Dict{
					jen.Id("Group"): jen.Lit(pkg.Group), jen.Id("Version"): jen.Lit(pkg.Version), jen.Id("Resource"): jen.Lit(k.Resource)}),
				jen.Id("Private"): jen.Qual(schema, "GroupVersionResource").Values(jen.Dict{
					jen.Id("Group"): jen.Lit(pkg.PrivateGroup), jen.Id("Version"): jen.Lit(pkg.Version), jen.Id("Resource"): jen.Lit(k.Resource)}),
				jen.Id("Kind"):         jen.Lit(k.Name),
				jen.Id("ListKind"):     jen.Lit(k.ListName),
				jen.Id("Singular"):     jen.Lit(k.Singular),
				jen.Id("Namespaced"):   jen.Lit(k.Namespaced),
				jen.Id("Subresources"): strs(k.Subresources),
				jen.Id("ShortNames"):   strs(k.ShortNames),
				jen.Id("Categories"):   strs(k.Categories),
				jen.Id("Storage"):      jen.Lit(k.Storage),
				jen.Id("Object"):       jen.Qual(translatePath, "NewKind").Call(jen.Qual(conv, k.Name+"ToPrivate"), jen.Qual(conv, k.Name+"ToUpstream")),
				jen.Id("List"):         jen.Qual(translatePath, "NewKind").Call(jen.Qual(conv, k.ListName+"ToPrivate"), jen.Qual(conv, k.ListName+"ToUpstream")),
				jen.Id("Paths"):        jen.Qual(translatePath, "Paths").Call(paths...),
			}
			// Zero values are left out, so that the table reads like one a person wrote.
			if k.Unserved {
				fields[jen.Id("Unserved")] = jen.True()
			}
			if k.Conversion != model.NoConversion {
				fields[jen.Id("Conversion")] = jen.Qual(translatePath, conversionConst[k.Conversion])
			}
			if labels := e.contractLabels(pkg, k.Name); labels != nil {
				fields[jen.Id("ContractLabels")] = labelsLit(labels)
			}
			routes = append(routes, jen.Values(fields))
		}
	}
	var setters []jen.Code
	for _, pkg := range e.M.Packages {
		if pkg.SetsAPIVersionGetter {
			setters = append(setters, jen.Line().Qual(pkg.Path, "SetAPIVersionGetter"))
		}
	}
	if len(setters) > 0 {
		setters = append(setters, jen.Line())
	}
	f.Comment("APIVersionGetterSetters are the SetAPIVersionGetter functions of the upstream packages whose conversions")
	f.Comment("turn a reference by apiGroup and kind into one by apiVersion (CAPI's apiVersion getter): whoever runs")
	f.Comment("those conversions installs its getter with each of them.")
	f.Var().Id("APIVersionGetterSetters").Op("=").Index().Func().Params(
		jen.Func().Params(jen.Qual(schema, "GroupKind")).Params(jen.String(), jen.Error()),
	).Values(setters...)
	f.Line()
	f.Comment("Routes lists every mapped kind at every version, in the order of apis/upstream.Packages.")
	f.Var().Id("Routes").Op("=").Index().Qual(translatePath, "Route").ValuesFunc(func(g *jen.Group) {
		for _, r := range routes {
			g.Line().Add(r)
		}
		g.Line()
	})
	return e.write(f, "zz_generated/routes", "zz_generated.routes.go")
}

// conversionConst names the translate.Conversion constant of a model conversion.
var conversionConst = map[model.Conversion]string{
	model.HubConversion:   "Hub",
	model.SpokeConversion: "Spoke",
}

// labelsLit is a map[string]string literal of labels, or nil.
func labelsLit(labels map[string]string) jen.Code {
	if len(labels) == 0 {
		return jen.Nil()
	}
	d := jen.Dict{}
	for k, v := range labels {
		d[jen.Lit(k)] = jen.Lit(v)
	}
	return jen.Map(jen.String()).String().Values(d)
}
