package server

import "testing"

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:6443":        true,
		"127.3.2.1:1":           true,
		"[::1]:6443":            true,
		"[::ffff:127.0.0.1]:80": true,
		"10.0.0.1:6443":         false,
		"[fd00::1]:6443":        false,
		"[::ffff:10.0.0.1]:80":  false,
		"@":                     false, // a Unix socket
		"":                      false,
		"127.0.0.1":             false, // no port: not what net/http sets
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
