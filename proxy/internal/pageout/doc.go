// Package pageout returns to the kernel the resident pages of the proxy's own executable that it does
// not use again: those that package initialisation touched, and those a burst of watches did.
package pageout
