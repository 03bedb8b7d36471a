//go:build linux

package pageout

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Executable returns to the kernel the resident pages of the proxy's own executable, and returns how many
// bytes of mappings it released.
//
// Package initialisation of the linked libraries runs code and reads type descriptors spread over the
// whole binary, and the kernel maps the page cache 64 KiB around each fault (fault-around), so an idle
// proxy holds about 35 MiB of the binary that it does not use again. Executable releases the read-only
// mappings of the executable (its machine code, read-only data and function table: r-xp and r--p entries
// of /proc/self/smaps naming the file /proc/self/exe resolves to). A mapping holding an anonymous page
// (a debugger's breakpoint, a relocation: smaps' Anonymous above 0 kB) is left alone, as is the writable
// data. For each mapping, with madvise(2):
//
//  1. MADV_RANDOM: a page used again is read back alone, not with the readahead window around it, so
//     that pages the proxy does not use do not come back with it.
//  2. MADV_COLD (Linux 5.4+): the pages go to the inactive list, and the kernel tries to split each
//     large folio (the page cache reads a binary into folios of up to 2 MiB) that the process maps only
//     in part (mm/madvise.c), so that step 5 can drop its pages one by one, not all or none. As a
//     non-owner, this package's test keeps a quarter fewer pages mapped with it than without.
//  3. MADV_PAGEOUT (Linux 5.4+): the kernel reclaims the pages no other process maps. Linux does this
//     only for a process that owns the file or may write it (mm/madvise.c, can_do_file_pageout); in a
//     container running as non-root from a read-only root filesystem it does nothing, and no error
//     says so.
//  4. MADV_DONTNEED: the mapping's pages are unmapped, whoever owns the file. RSS drops; the page cache
//     keeps the pages, clean, for the kernel to reclaim when it needs memory, and a page used again is a
//     minor fault.
//
// Then, for the file:
//
//  5. posix_fadvise(2) POSIX_FADV_DONTNEED, which any reader of the file may ask: the page cache drops
//     the binary's clean pages that no process maps; otherwise fault-around would map them back with
//     every page the proxy uses again. A page that another container running the same image maps stays.
//
// These pages are clean copies of the file: releasing them loses nothing. A kernel without MADV_COLD or
// MADV_PAGEOUT (EINVAL, before Linux 5.4) skips those steps; any other error of madvise stops at that
// mapping.
func Executable() (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	smaps, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	mappings, err := readOnlyMappings(smaps, exe)
	smaps.Close()
	if err != nil {
		return 0, err
	}
	var released int64
	for _, m := range mappings {
		for _, advice := range []int{unix.MADV_RANDOM, unix.MADV_COLD, unix.MADV_PAGEOUT, unix.MADV_DONTNEED} {
			_, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, uintptr(advice))
			if (advice == unix.MADV_COLD || advice == unix.MADV_PAGEOUT) && errors.Is(errno, unix.EINVAL) {
				continue
			}
			if errno != 0 {
				return released, fmt.Errorf("madvise(%s) of %x-%x: %w", adviceNames[advice], m.start, m.end, errno)
			}
		}
		released += int64(m.end - m.start)
	}
	if released == 0 {
		return 0, nil
	}
	f, err := os.Open(exe)
	if err != nil {
		return released, err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return released, fmt.Errorf("posix_fadvise(POSIX_FADV_DONTNEED) of %s: %w", exe, err)
	}
	return released, nil
}

var adviceNames = map[int]string{
	unix.MADV_RANDOM:   "MADV_RANDOM",
	unix.MADV_COLD:     "MADV_COLD",
	unix.MADV_PAGEOUT:  "MADV_PAGEOUT",
	unix.MADV_DONTNEED: "MADV_DONTNEED",
}

// mapping is the address range of one mapping, [start, end).
type mapping struct{ start, end uintptr }

// readOnlyMappings reads /proc/<pid>/smaps (proc(5): a "start-end perms offset dev inode path" header
// line per mapping, then "Name: value kB" lines) and returns the mappings of the file path without write
// permission and without anonymous pages (the Anonymous line at 0 kB).
func readOnlyMappings(smaps io.Reader, path string) ([]mapping, error) {
	var (
		out     []mapping
		current mapping
		ok      bool
	)
	s := bufio.NewScanner(smaps)
	for s.Scan() {
		line := s.Text()
		if name, value, isField := smapsField(line); isField {
			if ok && name == "Anonymous" && value != "0 kB" {
				ok = false
			}
			continue
		}
		if ok {
			out = append(out, current)
		}
		current.start, current.end, ok = readOnlyMappingOf(line, path)
	}
	if ok {
		out = append(out, current)
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// smapsField splits a "Name:   value" line of smaps; a mapping's header line is not one (its first
// field is an address range, which has no colon).
func smapsField(line string) (name, value string, ok bool) {
	name, value, ok = strings.Cut(line, ":")
	if !ok || strings.ContainsAny(name, " -") {
		return "", "", false
	}
	return name, strings.TrimSpace(value), true
}

// readOnlyMappingOf parses a mapping's header line of /proc/<pid>/maps or smaps ("start-end perms
// offset dev inode path", proc(5)) and reports the mapping's address range if it maps the file path
// without write permission.
func readOnlyMappingOf(line, path string) (start, end uintptr, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || len(fields[1]) < 2 || fields[1][1] == 'w' {
		return 0, 0, false
	}
	if strings.TrimSuffix(strings.Join(fields[5:], " "), " (deleted)") != path {
		return 0, 0, false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return 0, 0, false
	}
	a, errA := strconv.ParseUint(lo, 16, 64)
	b, errB := strconv.ParseUint(hi, 16, 64)
	if errA != nil || errB != nil || b <= a {
		return 0, 0, false
	}
	return uintptr(a), uintptr(b), true
}
