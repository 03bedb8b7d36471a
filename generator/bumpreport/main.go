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
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
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
		return fmt.Errorf("usage: bumpreport snapshot [-root dir] [-o file] | bumpreport diff before.json after.json")
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
	}
	return fmt.Errorf("unknown command %q: want snapshot or diff", args[0])
}
