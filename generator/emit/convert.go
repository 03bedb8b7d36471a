package emit

import (
	"fmt"

	"github.com/dave/jennifer/jen"
	"k8s.io/gengo/v2/types"

	"github.com/openshift/hypershift-capi-proxy/generator/model"
)

const translatePath = "github.com/openshift/hypershift-capi-proxy/translate"

// direction is one way of conversion: its function-name suffix, the translate.Direction it uses, and the
// sides it reads from and writes to.
type direction struct {
	suffix    string // "ToPrivate" or "ToUpstream"
	from, to  side
	translate string
}

var directions = []direction{
	{suffix: "ToPrivate", from: upstreamSide, to: privateSide, translate: "ToPrivate"},
	{suffix: "ToUpstream", from: privateSide, to: upstreamSide, translate: "ToUpstream"},
}

// Converters writes zz_generated/convert/<dir>/zz_generated.convert.go: for every type of the package that
// can carry a group, <Type>ToPrivate(in *upstream.T, out *private.T) and <Type>ToUpstream(in *private.T,
// out *upstream.T). They copy field by field; a field whose type carries no group is copied whole, with a
// memory cast where the twins differ only by package (they have the same layout: the private type is
// generated field for field from the upstream one). out may share memory with in; in is never modified.
func (e *Emitter) Converters(pkg *model.Package) error {
	f := jen.NewFilePathName(e.M.ConvertPath(pkg), pkg.Version)
	e.header(f, pkg.Path)
	f.PackageComment(fmt.Sprintf("Package %s converts between %s and its private twin %s.",
		pkg.Version, pkg.Path, e.M.PrivatePath(pkg)))
	e.importAliases(f)
	for _, t := range pkg.Types {
		if !e.M.Carries(t) || e.M.Aliased(t) {
			continue
		}
		for _, d := range directions {
			name := t.Name.Name + d.suffix
			var body []jen.Code
			switch t.Kind {
			case types.Struct:
				for _, mem := range t.Members {
					body = append(body, e.member(t, mem, d)...)
				}
			case types.Alias:
				body = e.conv(t.Underlying, nil, nil, d)
			default:
				return fmt.Errorf("%s: cannot convert %s type %s", pkg.Path, t.Kind, t.Name)
			}
			f.Commentf("%s converts %s into %s.", name, sideName(d.from), sideName(d.to))
			f.Func().Id(name).Params(
				jen.Id("in").Op("*").Add(e.typeExpr(t, d.from)),
				jen.Id("out").Op("*").Add(e.typeExpr(t, d.to)),
			).Block(body...)
		}
	}
	return e.write(f, "zz_generated/convert/"+pkg.Dir, "zz_generated.convert.go")
}

func sideName(s side) string {
	if s == privateSide {
		return "the private twin"
	}
	return "the upstream type"
}

// member converts one struct field.
func (e *Emitter) member(owner *types.Type, mem types.Member, d direction) []jen.Code {
	in := jen.Id("in").Dot(mem.Name)
	if g := e.M.GroupField(owner, mem); g != "" {
		fn := jen.Qual(translatePath, d.translate).Dot(groupFunc(g))
		if mem.Type.Kind == types.Pointer {
			return []jen.Code{jen.If(jen.Id("in").Dot(mem.Name).Op("!=").Nil()).Block(
				jen.Id("v").Op(":=").Add(fn).Call(jen.Op("*").Add(in)),
				jen.Id("out").Dot(mem.Name).Op("=").Op("&").Id("v"),
			).Else().Block(jen.Id("out").Dot(mem.Name).Op("=").Nil())}
		}
		return []jen.Code{jen.Id("out").Dot(mem.Name).Op("=").Add(fn).Call(in)}
	}
	if !e.M.Carries(mem.Type) {
		return []jen.Code{jen.Id("out").Dot(mem.Name).Op("=").Add(e.copyValue(mem.Type, jen.Id("in").Dot(mem.Name), d))}
	}
	return e.conv(mem.Type, jen.Op("&").Id("in").Dot(mem.Name), jen.Op("&").Id("out").Dot(mem.Name), d)
}

func groupFunc(kind string) string {
	if kind == "group" {
		return "Group"
	}
	return "APIVersion"
}

// copyValue is the expression copying a value of a type that carries no group: the value itself where
// the type is the same on both sides, a memory cast to the twin type otherwise.
func (e *Emitter) copyValue(t *types.Type, in *jen.Statement, d direction) jen.Code {
	if e.identical(t) {
		return in
	}
	return jen.Op("*").Parens(jen.Op("*").Add(e.typeExpr(t, d.to))).Parens(
		jen.Qual("unsafe", "Pointer").Call(jen.Op("&").Add(in)))
}

// conv converts *inPtr into *outPtr for a type that carries a group. inPtr and outPtr are pointer
// expressions; nested levels rebind in and out, as conversion-gen does. nil for both means the
// function's own in and out, which need no rebinding.
func (e *Emitter) conv(t *types.Type, inPtr, outPtr jen.Code, d direction) []jen.Code {
	bound := inPtr == nil
	if bound {
		inPtr, outPtr = jen.Id("in"), jen.Id("out")
	}
	if sp := model.SpecialOf(t); sp != "" {
		return []jen.Code{jen.Qual(translatePath, d.translate).Dot(string(sp)).Call(inPtr, outPtr)}
	}
	if pkg := e.M.PackageOf(t); pkg != nil && t.Name.Name != "" {
		return []jen.Code{jen.Qual(e.M.ConvertPath(pkg), t.Name.Name+d.suffix).Call(inPtr, outPtr)}
	}
	// Rebind in and out to the pointers first, inside a block, so that nested levels never refer to an
	// outer name after shadowing it.
	in, out := jen.Id("in"), jen.Id("out")
	star := func(c jen.Code) *jen.Statement { return jen.Op("*").Add(c) }
	rebind := jen.List(jen.Id("in"), jen.Id("out")).Op(":=").List(inPtr, outPtr)
	elem := func(inE, outE jen.Code) []jen.Code {
		if !e.M.Carries(t.Elem) {
			return []jen.Code{star(outE).Op("=").Add(e.copyValue(t.Elem, star(inE), d))}
		}
		return e.conv(t.Elem, inE, outE, d)
	}
	block := func(stmt jen.Code) []jen.Code {
		if bound {
			return []jen.Code{stmt}
		}
		return []jen.Code{jen.Block(rebind, stmt)}
	}
	ifSet := func(body ...jen.Code) []jen.Code {
		return block(jen.If(star(in).Op("!=").Nil()).Block(body...).Else().Block(star(out).Op("=").Nil()))
	}
	switch t.Kind {
	case types.Pointer:
		return ifSet(append([]jen.Code{star(out).Op("=").New(e.typeExpr(t.Elem, d.to))},
			elem(star(in), star(out))...)...)
	case types.Slice:
		return ifSet(
			star(out).Op("=").Make(jen.Index().Add(e.typeExpr(t.Elem, d.to)), jen.Len(star(in))),
			jen.For(jen.Id("i").Op(":=").Range().Add(star(in))).Block(
				elem(jen.Op("&").Parens(star(in)).Index(jen.Id("i")), jen.Op("&").Parens(star(out)).Index(jen.Id("i")))...),
		)
	case types.Map:
		key := jen.Id("k")
		if !e.identical(t.Key) {
			key = jen.Add(e.typeExpr(t.Key, d.to)).Parens(jen.Id("k"))
		}
		return ifSet(
			star(out).Op("=").Make(jen.Map(e.typeExpr(t.Key, d.to)).Add(e.typeExpr(t.Elem, d.to)), jen.Len(star(in))),
			jen.For(jen.List(jen.Id("k"), jen.Id("v")).Op(":=").Range().Add(star(in))).Block(append(
				[]jen.Code{jen.Var().Id("o").Add(e.typeExpr(t.Elem, d.to))},
				append(elem(jen.Op("&").Id("v"), jen.Op("&").Id("o")), jen.Parens(star(out)).Index(key).Op("=").Id("o"))...)...),
		)
	case types.Array:
		return block(jen.For(jen.Id("i").Op(":=").Range().Add(star(in))).Block(
			elem(jen.Op("&").Parens(star(in)).Index(jen.Id("i")), jen.Op("&").Parens(star(out)).Index(jen.Id("i")))...))
	}
	panic(fmt.Sprintf("emit: cannot convert %s type %s", t.Kind, t))
}
