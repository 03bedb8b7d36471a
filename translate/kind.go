package translate

import (
	"encoding/json"
	"fmt"

	kjson "sigs.k8s.io/json"
)

// Kind is the typed JSON codec of one kind at one version: it decodes a JSON object into the upstream (or
// private) Go type, runs the generated converter and encodes the twin.
type Kind interface {
	// ToPrivate translates an upstream object. unknown lists fields of data that the Go type does not have
	// (the apiserver would report them under fieldValidation=Warn or Strict); they are not in out.
	ToPrivate(data []byte) (out []byte, unknown []error, err error)
	// ToUpstream translates a private object read from the backend.
	ToUpstream(data []byte) (out []byte, unknown []error, err error)
	// New returns new zero values of the upstream Go type and of its private twin (pointers), for tests
	// and tools that work with typed objects.
	New() (upstream, private any)
	// Convert converts a typed value made by New into its twin: an upstream value into a private one, or a
	// private value into an upstream one. It panics if in and out are not a pair made by New.
	Convert(in, out any)
}

// NewKind returns the Kind for a pair of generated converters, e.g.
// NewKind(v1beta2.MachineToPrivate, v1beta2.MachineToUpstream). U is the upstream Go type and P its private
// twin.
func NewKind[U, P any](toPrivate func(in *U, out *P), toUpstream func(in *P, out *U)) Kind {
	return typedKind[U, P]{toPrivate: toPrivate, toUpstream: toUpstream}
}

type typedKind[U, P any] struct {
	toPrivate  func(*U, *P)
	toUpstream func(*P, *U)
}

func (k typedKind[U, P]) ToPrivate(data []byte) ([]byte, []error, error) {
	return convert(data, k.toPrivate)
}

func (k typedKind[U, P]) ToUpstream(data []byte) ([]byte, []error, error) {
	return convert(data, k.toUpstream)
}

func (k typedKind[U, P]) New() (any, any) { return new(U), new(P) }

func (k typedKind[U, P]) Convert(in, out any) {
	switch in := in.(type) {
	case *U:
		k.toPrivate(in, out.(*P))
	case *P:
		k.toUpstream(in, out.(*U))
	default:
		panic(fmt.Sprintf("translate: Convert(%T, %T): not a pair of this kind", in, out))
	}
}

// convert decodes data into a new In as kube-apiserver decodes a request (case-sensitive field names,
// duplicate and unknown fields reported, not fatal), converts it and encodes the result.
func convert[In, Out any](data []byte, fn func(*In, *Out)) ([]byte, []error, error) {
	in, out := new(In), new(Out)
	strict, err := kjson.UnmarshalStrict(data, in)
	if err != nil {
		return nil, nil, err
	}
	fn(in, out)
	b, err := json.Marshal(out)
	if err != nil {
		return nil, strict, fmt.Errorf("encoding %T: %w", out, err)
	}
	return b, strict, nil
}
