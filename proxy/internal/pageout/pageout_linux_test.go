//go:build linux

package pageout

import "testing"

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

// TestExecutable advises the test binary's own read-only mappings; it keeps running (its code
// is read back in as it runs).
func TestExecutable(t *testing.T) {
	advised, err := Executable()
	if err != nil {
		t.Fatal(err)
	}
	if advised == 0 {
		t.Log("nothing advised: the kernel has no MADV_PAGEOUT")
	}
}
