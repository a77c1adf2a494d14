//go:build !linux

package main

// background is a no-op where threads have no priority of their own.
func background() error { return nil }
