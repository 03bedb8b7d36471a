//go:build linux

package pageout

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Executable asks the kernel to reclaim the resident pages of the proxy's own executable
// (madvise(2) MADV_PAGEOUT, Linux 5.4 and later) and returns how many bytes of mappings it advised.
//
// Only the read-only mappings of the executable are advised (its machine code, read-only data and
// function table: r-xp and r--p lines of /proc/self/maps naming the file /proc/self/exe resolves to);
// its writable data is never touched. Package initialisation of the linked libraries runs code and reads
// type descriptors spread over the whole binary, and the kernel maps the page cache 64 KiB around each
// fault (fault-around), so an idle proxy holds about 35 MiB of the binary that it does not use again.
// These pages are clean: reclaiming them loses nothing, and a page that is used again is read back in
// on its next access. The kernel reclaims only pages that no other process maps, so a page shared with
// another container running the same image on the node stays. A kernel without MADV_PAGEOUT (EINVAL)
// is not an error: nothing is advised.
func Executable() (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer maps.Close()
	var advised int64
	s := bufio.NewScanner(maps)
	for s.Scan() {
		start, end, ok := readOnlyMappingOf(s.Text(), exe)
		if !ok {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_PAGEOUT); errno != 0 {
			if errors.Is(errno, unix.EINVAL) {
				return advised, nil
			}
			return advised, fmt.Errorf("madvise(MADV_PAGEOUT) of %x-%x: %w", start, end, errno)
		}
		advised += int64(end - start)
	}
	return advised, s.Err()
}

// readOnlyMappingOf parses a line of /proc/<pid>/maps ("start-end perms offset dev inode path", proc(5))
// and reports the mapping's address range if it maps the file path without write permission.
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
