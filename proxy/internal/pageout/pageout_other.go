//go:build !linux

package pageout

// Executable does nothing where madvise(2) and /proc/self/smaps do not exist.
func Executable() (int64, error) { return 0, nil }
