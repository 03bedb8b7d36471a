package emit

import (
	"github.com/dave/jennifer/jen"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Routes writes zz_generated/routes/zz_generated.routes.go: one translate.Route per kind and version
// (unserved ones marked Unserved, deprecated ones Deprecated with their RemovedRelease), with its
// group-carrying JSON paths, the typed codecs (Object, List) of the kinds that convert by hub and spoke,
// which the proxy's conversions run, and on each spoke upstream's conversions to and from the hub (ToHub,
// FromHub, ViaHubError), methods of the spoke's Go type or functions of a conversion package, adapted to
// one signature so that no caller needs to know which. The typed codecs of the
// other kinds (translate.NoConversion: converted by setting apiVersion) are only for tests, which compare
// the rewrite along Paths with them: zz_generated/routes/codecs sets them when imported, so that
// the proxy's binary links neither those kinds' Go types nor their converters nor what those import.
func (e *Emitter) Routes() error {
	if err := e.routeTable(); err != nil {
		return err
	}
	return e.codecs()
}

// routeTable writes zz_generated/routes/zz_generated.routes.go (Routes).
func (e *Emitter) routeTable() error {
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
			if k.Deprecated {
				field("Deprecated", jen.True())
			}
			if pkg.RemovedRelease != "" {
				field("RemovedRelease", jen.Lit(pkg.RemovedRelease))
			}
			if k.Conversion != translate.NoConversion {
				field("Conversion", jen.Qual(translatePath, k.Conversion.String()))
			}
			if k.Conversion == translate.Spoke {
				if k.ConvertsByFunctions() {
					field("ToHub", jen.Qual(translatePath, "ConvertFunc").Call(jen.Qual(k.ToHub.Package, k.ToHub.Name)))
					field("FromHub", jen.Qual(translatePath, "ConvertFunc").Call(jen.Qual(k.FromHub.Package, k.FromHub.Name)))
					field("ViaHubError", jen.Qual(translatePath, "ConverterViaHubError"))
				} else {
					method := func(name string) jen.Code {
						return jen.Parens(jen.Op("*").Qual(pkg.Path, k.Name)).Dot(name)
					}
					field("ToHub", jen.Qual(translatePath, "ConvertToMethod").Call(method("ConvertTo")))
					field("FromHub", jen.Qual(translatePath, "ConvertFromMethod").Call(method("ConvertFrom")))
					field("ViaHubError", jen.Qual(translatePath, "MethodsViaHubError"))
				}
			}
			if labels := e.ContractLabels(pkg, k.Name); labels != nil {
				field("ContractLabels", labelsLit(labels))
			}
			if k.Conversion != translate.NoConversion {
				field("Object", kindCodec(conv, k.Name))
			}
			field("Paths", jen.Qual(translatePath, "Paths").Call(paths...))
			if k.Conversion != translate.NoConversion {
				field("List", kindCodec(conv, k.ListName))
			}
			routes = append(routes, jen.Values(append(fields, jen.Line())...))
		}
	}
	var setters []jen.Code
	for _, s := range e.M.APIVersionGetterSetters {
		set := jen.Qual(s.Package, "SetAPIVersionGetter")
		if !s.Context {
			set = jen.Qual(translatePath, "GetterSetterWithoutContext").Call(set)
		}
		setters = append(setters, jen.Line().Add(set))
	}
	if len(setters) > 0 {
		setters = append(setters, jen.Line())
	}
	f.Comment("APIVersionGetterSetters are the SetAPIVersionGetter functions of the upstream packages whose conversions")
	f.Comment("turn a reference by apiGroup and kind into one by apiVersion (CAPI's apiVersion getter), those whose")
	f.Comment("getter takes no context adapted to one that does: whoever runs those conversions installs its getter")
	f.Comment("with each of them.")
	f.Var().Id("APIVersionGetterSetters").Op("=").Index().Func().Params(
		jen.Func().Params(jen.Qual("context", "Context"), jen.Qual(schema, "GroupKind")).Params(jen.String(), jen.Error()),
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

// kindCodec is the translate.Kind of the Go kind name, with the typed converters of the package conv.
func kindCodec(conv, name string) jen.Code {
	return jen.Qual(translatePath, "NewKind").Call(jen.Qual(conv, name+"ToPrivate"), jen.Qual(conv, name+"ToUpstream"))
}

// codecs writes zz_generated/routes/codecs/zz_generated.codecs.go: the typed codecs of the kinds
// Routes leaves without (translate.NoConversion), set into routes.Routes by the package's init.
func (e *Emitter) codecs() error {
	f := jen.NewFilePathName(e.M.Module+"/zz_generated/routes/codecs", "codecs")
	e.header(f, "apis/upstream.Packages")
	f.PackageComment(`Package codecs completes the generated route table (package routes) with the typed codecs of the kinds
whose versions convert by setting apiVersion (translate.NoConversion). The proxy never runs them, and
routes.Routes leaves them out so that its binary does not link those kinds' Go types; tests that compare
the rewrite along a route's Paths with its typed codecs import this package for its side effect:

	import _ "` + e.M.Module + `/zz_generated/routes/codecs"

Its init sets Object and List of every route of routes.Routes that has none, so that every route has both
in the test binary. It runs before the importing package's own variables are initialised, so a table
built from routes.Routes at package level has them too.`)
	e.importAliases(f)
	schema := "k8s.io/apimachinery/pkg/runtime/schema"
	routesPath := e.M.Module + "/zz_generated/routes"
	d := jen.Dict{}
	for _, pkg := range e.M.Packages {
		conv := e.M.ConvertPath(pkg)
		for _, k := range pkg.Kinds {
			if k.Conversion != translate.NoConversion {
				continue
			}
			gvk := jen.Values(jen.Id("Group").Op(":").Lit(pkg.Group),
				jen.Id("Version").Op(":").Lit(pkg.Version), jen.Id("Kind").Op(":").Lit(k.Name))
			d[gvk] = jen.Values(kindCodec(conv, k.Name), kindCodec(conv, k.ListName))
		}
	}
	f.Comment("byKind are the typed codecs (object, list) of the kinds routes.Routes has none of, by upstream kind and version.")
	f.Var().Id("byKind").Op("=").Map(jen.Qual(schema, "GroupVersionKind")).Index(jen.Lit(2)).Qual(translatePath, "Kind").Values(d)
	f.Line()
	f.Func().Id("init").Params().Block(
		jen.For(jen.Id("i").Op(":=").Range().Qual(routesPath, "Routes")).Block(
			jen.Id("r").Op(":=").Op("&").Qual(routesPath, "Routes").Index(jen.Id("i")),
			jen.If(jen.List(jen.Id("c"), jen.Id("ok")).Op(":=").Id("byKind").Index(jen.Id("r").Dot("UpstreamGVK").Call()),
				jen.Id("ok").Op("&&").Id("r").Dot("Object").Op("==").Nil()).Block(
				jen.List(jen.Id("r").Dot("Object"), jen.Id("r").Dot("List")).Op("=").List(jen.Id("c").Index(jen.Lit(0)), jen.Id("c").Index(jen.Lit(1))),
			),
		),
	)
	return e.write(f, "zz_generated/routes/codecs", "zz_generated.codecs.go")
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
