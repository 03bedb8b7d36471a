// Package pageout returns to the kernel the resident pages of the proxy's own executable that it does
// not use again: those that package initialisation touched, and those a burst of watches did. It works
// for a process that does not own its executable, as in a container running as non-root from a
// read-only root filesystem (the install assets' Deployments).
package pageout
