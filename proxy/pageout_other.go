//go:build !linux

package main

// pageOutExecutable does nothing where madvise(2) MADV_PAGEOUT does not exist.
func pageOutExecutable() (int64, error) { return 0, nil }
