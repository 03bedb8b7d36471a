// Command bumpreport tells a reviewer what a bump of the upstream modules changes in the mirrored APIs,
// instead of the diff of the generated code. make bump runs it twice around the bump:
//
//	go run ./generator/bumpreport snapshot -o before.json   # at the old pins
//	... update go.mod, make generate ...
//	go run ./generator/bumpreport snapshot -o after.json    # at the new pins
//	go run ./generator/bumpreport diff before.json after.json
//
// A snapshot is the generator's model (package generator/model) of apis/upstream.Packages at the pins
// of the root go.mod: the kinds at each version with their storage version, conversion, fields,
// group-carrying fields and contract labels, the types passed through unread, and, if the model cannot
// be built, why (with the apis/upstream.OpaqueTypes line to add for each type it cannot see into). The
// report lists, section by section: module versions, kinds and versions added or removed, storage,
// served and conversion changes, fields added or removed per kind, group-carrying fields added or
// removed with their classification, opaque and foreign types, and contract-label changes.
//
// Three more commands serve hack/bump.sh:
//
//	go run ./generator/bumpreport probe [-root dir]            # newer versions, asked for by exact version
//	go run ./generator/bumpreport pins before.mod after.mod     # the go.mod requirements and replaces that changed
//	go run ./generator/bumpreport importers [-root dir] PATH   # the mirrored packages that import PATH
//	go run ./generator/bumpreport crdtools [-root dir]         # the controller-gen versions of the published CRDs
//
// probe asks the module proxy, with `go mod download -json MODULE@VERSION`, for the next patch and the
// next minor release of every upstream module go.mod pins (and again after each one served), since the
// module proxy serves versions it does not list; it prints one line per module with every answer.
// importers prints "package module version" for each package of apis/upstream.Packages whose Go files
// import PATH (sigs.k8s.io/cluster-api/errors, which CAPI v1.14 moved). crdtools prints, per upstream
// module (and CAPI's, which publishes its CRDs beside its conversion packages), the controller-gen
// versions its published CRDs were generated with: the one hack/tools pins must reproduce them all.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
)

// projectModule is this repository's module, as the generator names it.
const projectModule = "github.com/openshift/hypershift-capi-proxy"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bumpreport:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: bumpreport snapshot [-root dir] [-o file] | diff before.json after.json | " +
			"probe [-root dir] | pins before.mod after.mod | importers [-root dir] PATH")
	}
	switch args[0] {
	case "snapshot":
		fs := flag.NewFlagSet("snapshot", flag.ContinueOnError)
		root := fs.String("root", ".", "repository root, whose go.mod pins the upstream modules")
		out := fs.String("o", "", "write the snapshot to this file instead of stdout")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		s, err := snapshotPins(*root)
		if err != nil {
			return err
		}
		data, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return err
		}
		data = append(data, '\n')
		if *out == "" {
			_, err = os.Stdout.Write(data)
			return err
		}
		return os.WriteFile(*out, data, 0o644)
	case "diff":
		if len(args) != 3 {
			return fmt.Errorf("usage: bumpreport diff before.json after.json")
		}
		var snaps [2]*Snapshot
		for i, file := range args[1:] {
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			if err := json.Unmarshal(data, &snaps[i]); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		return diff(snaps[0], snaps[1]).Write(os.Stdout)
	case "probe":
		fs := flag.NewFlagSet("probe", flag.ContinueOnError)
		root := fs.String("root", ".", "repository root, whose go.mod pins the upstream modules")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		probes, err := probeAll(filepath.Join(*root, "go.mod"), goDownload)
		if err != nil {
			return err
		}
		for _, p := range probes {
			fmt.Println(p.Line())
		}
		return nil
	case "pins":
		if len(args) != 3 {
			return fmt.Errorf("usage: bumpreport pins before.mod after.mod")
		}
		before, err := parseModFile(args[1])
		if err != nil {
			return err
		}
		after, err := parseModFile(args[2])
		if err != nil {
			return err
		}
		for _, l := range pinChanges(before, after) {
			fmt.Println(l)
		}
		return nil
	case "importers":
		fs := flag.NewFlagSet("importers", flag.ContinueOnError)
		root := fs.String("root", ".", "repository root, whose go.mod pins the upstream modules")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("usage: bumpreport importers [-root dir] PATH")
		}
		mods, err := requirements(filepath.Join(*root, "go.mod"))
		if err != nil {
			return err
		}
		found, err := importers(fs.Arg(0), upstream.Packages, mods, moduleDir)
		if err != nil {
			return err
		}
		for _, i := range found {
			fmt.Println(i.Package, i.Module, i.Version)
		}
		return nil
	case "crdtools":
		fs := flag.NewFlagSet("crdtools", flag.ContinueOnError)
		root := fs.String("root", ".", "repository root, whose go.mod pins the upstream modules")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		mods, err := requirements(filepath.Join(*root, "go.mod"))
		if err != nil {
			return err
		}
		gens, err := crdGenerators(probedModules(mods, upstream.Packages, upstream.ConversionPackages), moduleDir)
		if err != nil {
			return err
		}
		for _, m := range sortedKeys(gens) {
			fmt.Printf("%s %s: %s\n", m, mods[m], strings.Join(gens[m], ", "))
		}
		return nil
	}
	return fmt.Errorf("unknown command %q: want snapshot, diff, probe, pins, importers or crdtools", args[0])
}
