package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rebound-go/rebound/bench/bullmq"
)

// bullmqFolder is the Node project of the BullMQ peer, from the module root.
const bullmqFolder = "bench/bullmq"

// prepareBullMQ makes the BullMQ rows measurable: it checks node and
// installs the locked packages with npm ci where they are missing. It
// records what it found for the machine table and returns the environment
// the benchmarks need: when BullMQ cannot run, the reason, which its rows
// then give for not being measured.
func (r *report) prepareBullMQ(ctx context.Context, root string) []string {
	why := ""
	_, node, err := bullmq.Node(ctx)
	if err != nil {
		why = err.Error()
	} else {
		dir := filepath.Join(root, filepath.FromSlash(bullmqFolder))
		fmt.Fprintf(os.Stderr, "report: checking the BullMQ packages in %s\n", bullmqFolder)
		ran, err := bullmq.Install(ctx, dir)
		if ran {
			r.commands = append(r.commands, "(cd "+bullmqFolder+" && "+strings.Join(bullmq.InstallArgs, " ")+")")
		}
		if err != nil {
			why = bullmqFolder + ": " + err.Error()
		} else if v, err := bullmq.Installed(dir); err != nil {
			why = bullmqFolder + ": " + err.Error()
		} else {
			r.machine.BullMQ = fmt.Sprintf("%s on Node.js %s (`%s`, from its lock file)", v, node, bullmqFolder)
		}
	}
	if why != "" {
		fmt.Fprintf(os.Stderr, "report: BullMQ is not measured: %s\n", why)
		r.machine.BullMQ = "not measured: " + why
		return []string{bullmq.UnavailableEnv + "=" + why}
	}
	return nil
}
