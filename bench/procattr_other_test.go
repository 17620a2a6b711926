//go:build !linux

package bench

import "os/exec"

// dieWithBench is a no-op where the platform cannot tie a child's life to
// its parent's: the benchmarks' cleanups stop the process.
func dieWithBench(*exec.Cmd) {}
