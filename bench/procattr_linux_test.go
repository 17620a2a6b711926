package bench

import (
	"os/exec"
	"syscall"
)

// dieWithBench makes cmd's process get SIGKILL when the benchmark process
// ends, so that a private redis-server or a node peer does not outlive a
// benchmark binary that panicked (a go test -timeout) or was killed before
// its cleanups ran.
func dieWithBench(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
