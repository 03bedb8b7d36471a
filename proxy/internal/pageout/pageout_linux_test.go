//go:build linux

package pageout

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestReadOnlyMappingOf(t *testing.T) {
	const exe = "/usr/local/bin/capi-proxy"
	for _, tc := range []struct {
		line       string
		start, end uintptr
		ok         bool
	}{
		{"00400000-01e00000 r-xp 00000000 fd:01 1234 /usr/local/bin/capi-proxy", 0x400000, 0x1e00000, true},
		{"01e00000-02a00000 r--p 01a00000 fd:01 1234 /usr/local/bin/capi-proxy", 0x1e00000, 0x2a00000, true},
		{"02a00000-02b00000 rw-p 02600000 fd:01 1234 /usr/local/bin/capi-proxy", 0, 0, false}, // its data: written
		{"00400000-01e00000 r-xp 00000000 fd:01 1234 /usr/local/bin/capi-proxy (deleted)", 0x400000, 0x1e00000, true},
		{"7f0000000000-7f0000001000 r--p 00000000 fd:01 99 /usr/lib/libc.so.6", 0, 0, false},
		{"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 ", 0, 0, false}, // anonymous
		{"c000000000-c000400000 rw-p 00000000 00:00 0", 0, 0, false},
		{"01e00000-00400000 r--p 01a00000 fd:01 1234 /usr/local/bin/capi-proxy", 0, 0, false}, // end before start
		{"garbage", 0, 0, false},
	} {
		start, end, ok := readOnlyMappingOf(tc.line, exe)
		if start != tc.start || end != tc.end || ok != tc.ok {
			t.Errorf("%q: %#x-%#x %v, want %#x-%#x %v", tc.line, start, end, ok, tc.start, tc.end, tc.ok)
		}
	}
}

// smapsOf writes smaps entries: a header line, then the fields proc(5) lists (a subset).
func smapsOf(entries ...[2]string) string {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e[0] + "\n")
		for _, f := range []string{"Size:               1024 kB", "Rss:                 512 kB", "Private_Clean:       512 kB"} {
			b.WriteString(f + "\n")
		}
		b.WriteString("Anonymous:          " + e[1] + "\n")
		b.WriteString("THPeligible:            0\nVmFlags: rd ex mr mw me dw sd\n")
	}
	return b.String()
}

func TestReadOnlyMappings(t *testing.T) {
	const exe = "/usr/local/bin/capi-proxy"
	smaps := smapsOf(
		[2]string{"00400000-01e00000 r-xp 00000000 fd:01 1234 /usr/local/bin/capi-proxy", "0 kB"},
		// A read-only mapping with a private copy of a page (a debugger's breakpoint, a relocation):
		// unmapping it would lose the copy.
		[2]string{"01e00000-02a00000 r--p 01a00000 fd:01 1234 /usr/local/bin/capi-proxy", "4 kB"},
		[2]string{"02a00000-02b00000 rw-p 02600000 fd:01 1234 /usr/local/bin/capi-proxy", "8 kB"},
		[2]string{"7f0000000000-7f0000001000 r--p 00000000 fd:01 99 /usr/lib/libc.so.6", "0 kB"},
		[2]string{"02b00000-02c00000 r--p 02700000 fd:01 1234 /usr/local/bin/capi-proxy", "0 kB"},
	)
	got, err := readOnlyMappings(strings.NewReader(smaps), exe)
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{{0x400000, 0x1e00000}, {0x2b00000, 0x2c00000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readOnlyMappings = %#x, want %#x", got, want)
	}

	// A mapping whose fields are missing (a kernel without them) is taken as its header says.
	got, err = readOnlyMappings(strings.NewReader("00400000-01e00000 r-xp 00000000 fd:01 1234 /usr/local/bin/capi-proxy\n"), exe)
	if err != nil || !reflect.DeepEqual(got, []mapping{{0x400000, 0x1e00000}}) {
		t.Errorf("header only: %#x, %v", got, err)
	}
}

// TestExecutable releases the test binary's own read-only mappings: it keeps running (its code is read
// back in as it runs), and what it maps of its executable drops.
func TestExecutable(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	before := residentKiB(t, exe)
	released, err := Executable()
	if err != nil {
		t.Fatal(err)
	}
	after := residentKiB(t, exe)
	t.Logf("released %d bytes of mappings; resident %d KiB before, %d KiB after", released, before, after)
	if released == 0 {
		t.Fatal("no read-only mapping of the executable found in /proc/self/smaps")
	}
	if after >= before {
		t.Errorf("resident pages of the executable: %d KiB before, %d KiB after", before, after)
	}
}

// residentKiB sums the Rss of the read-only mappings of exe in /proc/self/smaps.
func residentKiB(t *testing.T, exe string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	total, in := 0, false
	for _, line := range strings.Split(string(data), "\n") {
		if name, value, ok := smapsField(line); ok {
			if in && name == "Rss" {
				var kib int
				if _, err := fmt.Sscanf(value, "%d kB", &kib); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				total += kib
			}
			continue
		}
		_, _, in = readOnlyMappingOf(line, exe)
	}
	return total
}

// TestExecutableNotOwner runs TestExecutable in a copy of the test binary that belongs to root, as
// another user: the case of the image's binary in a container running as non-root, where Linux does
// not page out the file's pages for the process and only unmapping them releases them.
func TestExecutableNotOwner(t *testing.T) {
	if os.Getenv(notOwnerEnv) != "" {
		t.Skip("running as the non-owner")
	}
	if os.Geteuid() != 0 {
		t.Skip("changing the user needs root")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // t.TempDir makes both 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	// Written back before it runs, as an image's binary is: the page cache cannot drop dirty pages.
	copied := filepath.Join(dir, "pageout.test")
	f, err := os.OpenFile(copied, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(copied, "-test.run", "^TestExecutable$", "-test.v", "-test.count", "1")
	cmd.Env = append(os.Environ(), notOwnerEnv+"=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid %d:\n%s", nobody, out)
	if err != nil {
		t.Fatal(err)
	}
}

// notOwnerEnv marks TestExecutableNotOwner's child; nobody is the user it runs as.
const (
	notOwnerEnv = "PAGEOUT_TEST_NOT_OWNER"
	nobody      = 65534
)
