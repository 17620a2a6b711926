//go:build !linux

package bench

const (
	clockProcessCPUTime = 2
	clockThreadCPUTime  = 3
)

// cpuClock is unavailable off Linux; the cpu-ns/op metric is then omitted.
func cpuClock(int) (int64, bool) { return 0, false }
