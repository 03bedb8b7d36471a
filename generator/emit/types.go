package emit

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"
	"k8s.io/gengo/v2/types"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/generator/model"
)

// PrivateTypes writes apis/private/<dir>/: doc.go with +groupName set to the private group, the private
// types field for field (same JSON tags, validation and printcolumn markers, doc comments), and
// register.go. Deepcopy comes from controller-gen afterwards.
func (e *Emitter) PrivateTypes(pkg *model.Package) error {
	rel := "apis/private/" + pkg.Dir
	path := e.M.PrivatePath(pkg)

	doc := jen.NewFilePathName(path, pkg.Version)
	e.header(doc, pkg.Path)
	doc.PackageComment(fmt.Sprintf("Package %s is the private twin of %s, served in group %s instead of %s.",
		pkg.Version, pkg.Path, pkg.PrivateGroup, pkg.Group))
	doc.PackageComment("+kubebuilder:object:generate=true")
	doc.PackageComment("+groupName=" + pkg.PrivateGroup)
	if err := e.write(doc, rel, "zz_generated.doc.go"); err != nil {
		return err
	}

	f := jen.NewFilePathName(path, pkg.Version)
	e.header(f, pkg.Path)
	e.importAliases(f)
	for _, t := range pkg.Types {
		s := jen.Null()
		if lines := t.SecondClosestCommentLines; len(lines) > 0 {
			for _, l := range lines {
				s.Add(comment(rewriteMarker(l))).Line()
			}
			s.Line()
		}
		for _, l := range t.CommentLines {
			s.Add(comment(rewriteMarker(l))).Line()
		}
		if isKind(pkg, t) {
			labels := e.ContractLabels(pkg, t.Name.Name)
			for _, k := range slices.Sorted(maps.Keys(labels)) {
				s.Add(comment(fmt.Sprintf("+kubebuilder:metadata:labels=%q", k+"="+labels[k]))).Line()
			}
		}
		switch {
		case e.M.Aliased(t):
			s.Type().Id(t.Name.Name).Op("=").Qual(t.Name.Package, t.Name.Name)
		case t.Kind == types.Struct:
			var fields []jen.Code
			for _, mem := range t.Members {
				fields = append(fields, e.field(mem))
			}
			s.Type().Id(t.Name.Name).Struct(fields...)
		case t.Kind == types.Alias:
			s.Type().Id(t.Name.Name).Add(e.typeExpr(t.Underlying, privateSide))
		default:
			return fmt.Errorf("%s: cannot mirror %s type %s", pkg.Path, t.Kind, t.Name)
		}
		f.Add(s)
	}
	if err := e.write(f, rel, "zz_generated.types.go"); err != nil {
		return err
	}
	return e.register(pkg)
}

// field renders one struct field with its comments and its exact tag.
func (e *Emitter) field(mem types.Member) jen.Code {
	s := jen.Null()
	for _, l := range mem.CommentLines {
		s.Add(comment(l)).Line()
	}
	if mem.Embedded {
		s.Add(e.typeExpr(mem.Type, privateSide))
	} else {
		s.Id(mem.Name).Add(e.typeExpr(mem.Type, privateSide))
	}
	if mem.Tags != "" {
		s.Op("`" + mem.Tags + "`")
	}
	return s
}

// comment renders one comment line exactly: "// text", or "//" for an empty line.
func comment(line string) jen.Code {
	if line == "" {
		return jen.Comment("//")
	}
	return jen.Comment("// " + line)
}

// rewriteMarker makes a +kubebuilder:resource marker clash-free: shortNames get
// upstream.PrivateShortNamePrefix and categories upstream.PrivateCategoryPrefix.
func rewriteMarker(line string) string {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "+kubebuilder:resource:")
	if !ok {
		return line
	}
	args := strings.Split(rest, ",")
	for i, a := range args {
		k, v, _ := strings.Cut(a, "=")
		var prefix string
		switch k {
		case "shortName":
			prefix = upstream.PrivateShortNamePrefix
		case "categories":
			prefix = upstream.PrivateCategoryPrefix
		default:
			continue
		}
		vals := strings.Split(v, ";")
		for j := range vals {
			vals[j] = prefix + vals[j]
		}
		args[i] = k + "=" + strings.Join(vals, ";")
	}
	return "+kubebuilder:resource:" + strings.Join(args, ",")
}

func isKind(pkg *model.Package, t *types.Type) bool {
	for _, k := range pkg.Kinds {
		if k.Type == t {
			return true
		}
	}
	return false
}

// ContractLabels returns CAPI's contract labels for kind of pkg's group, label key to value
// ("cluster.x-k8s.io/v1beta2": "v1beta2"): for every contract, the versions of the kind whose package
// implements it, served versions only. They are computed per kind, not per group, because one group holds
// kinds of several providers, each with its own versions (CAPA's AWSCluster: v1beta1_v1beta2; CAPZ's
// AzureCluster: v1beta1). The CRD carries them as labels and the route table repeats them for the
// proxy's apiVersion getter.
func (e *Emitter) ContractLabels(pkg *model.Package, kind string) map[string]string {
	byContract := map[string][]string{}
	for _, p := range e.M.Packages {
		if p.Group != pkg.Group || p.Contract == "" {
			continue
		}
		for _, k := range p.Kinds {
			if k.Name == kind && !k.Unserved {
				byContract[p.Contract] = append(byContract[p.Contract], p.Version)
			}
		}
	}
	if len(byContract) == 0 {
		return nil
	}
	out := map[string]string{}
	for c, versions := range byContract {
		sort.Strings(versions)
		out[ContractLabelPrefix+c] = strings.Join(versions, "_")
	}
	return out
}

// ContractLabelPrefix starts every CAPI contract label key ("cluster.x-k8s.io/v1beta2").
const ContractLabelPrefix = "cluster.x-k8s.io/"

// register writes zz_generated.register.go: GroupVersion (the private group), SchemeBuilder and
// AddToScheme with every kind and list.
func (e *Emitter) register(pkg *model.Package) error {
	f := jen.NewFilePathName(e.M.PrivatePath(pkg), pkg.Version)
	e.header(f, pkg.Path)
	schema := "k8s.io/apimachinery/pkg/runtime/schema"
	runtime := "k8s.io/apimachinery/pkg/runtime"
	var objs []jen.Code
	for _, k := range pkg.Kinds {
		objs = append(objs, jen.Op("&").Id(k.Name).Values(), jen.Op("&").Id(k.ListName).Values())
	}
	f.Var().Defs(
		jen.Comment("GroupVersion is the private group and version of this package.").Line().
			Id("GroupVersion").Op("=").Qual(schema, "GroupVersion").Values(jen.Dict{
			jen.Id("Group"):   jen.Lit(pkg.PrivateGroup),
			jen.Id("Version"): jen.Lit(pkg.Version),
		}),
		jen.Line().Comment("SchemeBuilder adds the kinds of this package to a scheme.").Line().
			Id("SchemeBuilder").Op("=").Qual(runtime, "NewSchemeBuilder").Call(jen.Id("addKnownTypes")),
		jen.Line().Comment("AddToScheme adds the kinds of this package to a scheme.").Line().
			Id("AddToScheme").Op("=").Id("SchemeBuilder").Dot("AddToScheme"),
	)
	f.Func().Id("addKnownTypes").Params(jen.Id("scheme").Op("*").Qual(runtime, "Scheme")).Error().Block(
		jen.Id("scheme").Dot("AddKnownTypes").Call(append([]jen.Code{jen.Id("GroupVersion")}, objs...)...),
		jen.Qual("k8s.io/apimachinery/pkg/apis/meta/v1", "AddToGroupVersion").Call(jen.Id("scheme"), jen.Id("GroupVersion")),
		jen.Return(jen.Nil()),
	)
	return e.write(f, "apis/private/"+pkg.Dir, "zz_generated.register.go")
}
