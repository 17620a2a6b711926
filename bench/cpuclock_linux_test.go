package bench

import (
	"syscall"
	"unsafe"
)

// Clock ids of clock_gettime(2).
const (
	clockProcessCPUTime = 2
	clockThreadCPUTime  = 3
)

// cpuClock reads a CPU-time clock in nanoseconds, or returns false where the
// clock cannot be read.
func cpuClock(id int) (int64, bool) {
	var ts syscall.Timespec
	_, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return ts.Nano(), true
}
