package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
)

// The module proxy serves some versions of a module that `go list -m -versions` does not list (it refuses
// to list most provider modules), and refuses some it would list. A bump therefore asks for candidate
// versions one by one, by exact version, as `go mod download -json MODULE@VERSION` does.

// Answer is what the module proxy said to one exact version of a module.
type Answer struct {
	Version string
	// Served is true when the module proxy handed out the version.
	Served bool
	// Why is go's error when it did not, without go's repetition of module@version and without the
	// address it read ("403 Forbidden: This module version is not available.").
	Why string
}

// Probe is the probing of the versions after one pinned version of a module.
type Probe struct {
	Module, Pinned string
	Answers        []Answer
}

// maxProbes bounds the versions asked for per module.
const maxProbes = 8

// nextVersions returns the candidate versions after v: the next patch and the next minor release
// (v1.13.6 -> v1.13.7, v1.14.0); after a pre-release, its release and the next minor (v1.14.0-rc.1 ->
// v1.14.0, v1.15.0). A version that is not semantic or is a pseudo-version has none.
func nextVersions(v string) []string {
	if !semver.IsValid(v) || isPseudo(v) {
		return nil
	}
	major, minor, patch, ok := parts(v)
	if !ok {
		return nil
	}
	if semver.Prerelease(v) != "" {
		return []string{fmt.Sprintf("v%d.%d.%d", major, minor, patch), fmt.Sprintf("v%d.%d.0", major, minor+1)}
	}
	return []string{fmt.Sprintf("v%d.%d.%d", major, minor, patch+1), fmt.Sprintf("v%d.%d.0", major, minor+1)}
}

var pseudo = regexp.MustCompile(`[.-]\d{14}-[0-9a-f]{12}$`)

func isPseudo(v string) bool { return pseudo.MatchString(semver.Canonical(v)) || pseudo.MatchString(v) }

// parts splits a valid semantic version into its numbers.
func parts(v string) (major, minor, patch int, ok bool) {
	core := strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	fields := strings.Split(core, ".")
	if len(fields) != 3 {
		return 0, 0, 0, false
	}
	var n [3]int
	for i, f := range fields {
		x, err := strconv.Atoi(f)
		if err != nil {
			return 0, 0, 0, false
		}
		n[i] = x
	}
	return n[0], n[1], n[2], true
}

// probe asks for the candidates after pinned, and after each served one again, up to maxProbes versions.
func probe(module, pinned string, ask func(module, version string) Answer) Probe {
	p := Probe{Module: module, Pinned: pinned}
	queue := nextVersions(pinned)
	seen := map[string]bool{}
	for len(queue) > 0 && len(p.Answers) < maxProbes {
		v := queue[0]
		queue = queue[1:]
		if seen[v] {
			continue
		}
		seen[v] = true
		a := ask(module, v)
		p.Answers = append(p.Answers, a)
		if a.Served {
			queue = append(queue, nextVersions(v)...)
		}
	}
	return p
}

// Newest is the newest version the module proxy served, or the pinned one.
func (p Probe) Newest() string {
	newest := p.Pinned
	for _, a := range p.Answers {
		if a.Served && semver.Compare(a.Version, newest) > 0 {
			newest = a.Version
		}
	}
	return newest
}

// Line is the probe as one line of the report.
func (p Probe) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s:", p.Module, p.Pinned)
	if len(p.Answers) == 0 {
		b.WriteString(" no candidate (not a release version)")
	}
	for i, a := range p.Answers {
		if i > 0 {
			b.WriteString(";")
		}
		if a.Served {
			fmt.Fprintf(&b, " %s served", a.Version)
		} else {
			fmt.Fprintf(&b, " %s not served (%s)", a.Version, a.Why)
		}
	}
	if n := p.Newest(); n != p.Pinned {
		fmt.Fprintf(&b, ". NEWER THAN THE PIN: %s", n)
	}
	return b.String()
}

// goDownload asks the module proxy for module@version with `go mod download -json`, run outside any
// module, and returns its answer.
func goDownload(module, version string) Answer {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.Output()
	var info struct{ Version, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil {
		why := "go mod download: " + jerr.Error()
		if err != nil {
			why = "go mod download: " + err.Error()
		}
		return Answer{Version: version, Why: why}
	}
	if info.Error != "" {
		return Answer{Version: version, Why: downloadError(module, version, info.Error)}
	}
	return Answer{Version: version, Served: info.Version == version}
}

var reading = regexp.MustCompile(`reading \S+: `)

// downloadError shortens go's error for module@version: without the module@version prefix and the
// address read, on one line.
func downloadError(module, version, msg string) string {
	msg = strings.TrimPrefix(msg, module+"@"+version+": ")
	msg = reading.ReplaceAllString(msg, "")
	msg = strings.ReplaceAll(msg, "\n\tserver response: ", ": ")
	return strings.Join(strings.Fields(msg), " ")
}

// probedModules returns the modules a bump probes, sorted, each with its pinned version: those of mods
// (module path -> version, from go.mod) that hold a package of pkgs (the longest prefix) or that
// ConversionPackages lists.
func probedModules(mods map[string]string, pkgs []upstream.Package, conversions []upstream.ConversionModule) map[string]string {
	out := map[string]string{}
	for _, p := range pkgs {
		if m := moduleOf(p.Path, mods); m != "" {
			out[m] = mods[m]
		}
	}
	for _, c := range conversions {
		if v, ok := mods[c.Module]; ok {
			out[c.Module] = v
		}
	}
	return out
}

// probeAll probes every module of probedModules at the pins of gomod, in module order.
func probeAll(gomod string, ask func(module, version string) Answer) ([]Probe, error) {
	mods, err := requirements(gomod)
	if err != nil {
		return nil, err
	}
	probed := probedModules(mods, upstream.Packages, upstream.ConversionPackages)
	var out []Probe
	for _, m := range slices.Sorted(maps.Keys(probed)) {
		out = append(out, probe(m, probed[m], ask))
	}
	return out, nil
}
