package bench

import "os"

// quickEnv, set to 1, runs the throughput, memory and enqueue scenarios at
// a tenth of their jobs and one round each (the report's -quick): a smoke
// test of the benchmarks on a busy machine, not figures to publish.
const quickEnv = "REBOUND_BENCH_QUICK"

var quick = os.Getenv(quickEnv) == "1"

// scaled is n, or a tenth of it in a quick run.
func scaled(n int) int {
	if quick {
		return max(n/10, 1)
	}
	return n
}

// rounds is n, or 1 in a quick run.
func rounds(n int) int {
	if quick {
		return 1
	}
	return n
}
