package emit

import (
	"github.com/dave/jennifer/jen"

	"github.com/openshift/hypershift-capi-proxy/translate"
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
			// Fields in the declaration order of translate.Route; zero values are left out, so that the table
			// reads like one a person wrote.
			var fields []jen.Code
			field := func(name string, v jen.Code) { fields = append(fields, jen.Line().Id(name).Op(":").Add(v)) }
			gvr := func(group string) jen.Code {
				return jen.Qual(schema, "GroupVersionResource").Values(jen.Id("Group").Op(":").Lit(group),
					jen.Id("Version").Op(":").Lit(pkg.Version), jen.Id("Resource").Op(":").Lit(k.Resource))
			}
			field("Upstream", gvr(pkg.Group))
			field("Private", gvr(pkg.PrivateGroup))
			field("Kind", jen.Lit(k.Name))
			field("ListKind", jen.Lit(k.ListName))
			field("Singular", jen.Lit(k.Singular))
			if k.Namespaced {
				field("Namespaced", jen.True())
			}
			for _, f := range []struct {
				name string
				ss   []string
			}{{"Subresources", k.Subresources}, {"ShortNames", k.ShortNames}, {"Categories", k.Categories}} {
				if len(f.ss) > 0 {
					field(f.name, strs(f.ss))
				}
			}
			if k.Storage {
				field("Storage", jen.True())
			}
			if k.Unserved {
				field("Unserved", jen.True())
			}
			if k.Conversion != translate.NoConversion {
				field("Conversion", jen.Qual(translatePath, k.Conversion.String()))
			}
			if labels := e.ContractLabels(pkg, k.Name); labels != nil {
				field("ContractLabels", labelsLit(labels))
			}
			field("Object", jen.Qual(translatePath, "NewKind").Call(jen.Qual(conv, k.Name+"ToPrivate"), jen.Qual(conv, k.Name+"ToUpstream")))
			field("Paths", jen.Qual(translatePath, "Paths").Call(paths...))
			field("List", jen.Qual(translatePath, "NewKind").Call(jen.Qual(conv, k.ListName+"ToPrivate"), jen.Qual(conv, k.ListName+"ToUpstream")))
			routes = append(routes, jen.Values(append(fields, jen.Line())...))
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
