// Package bullmq prepares the BullMQ side of rebound's benchmarks: the Node
// project in this folder (package.json, a pinned package-lock.json, and
// bench.js, which runs the workloads of the Go benchmarks on BullMQ). It
// checks that node and the locked packages are installed, and installs them
// with npm ci where they are missing. node_modules is not committed; the
// report command (bench/cmd/report) installs it when it runs.
package bullmq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// MinNode is the oldest Node.js major version the lock file was made for.
const MinNode = 20

// UnavailableEnv names the environment variable through which the report
// tells the benchmarks why BullMQ cannot be measured in this run (npm ci
// failed, say); a benchmark then skips its BullMQ rows with that reason.
const UnavailableEnv = "REBOUND_BULLMQ_UNAVAILABLE"

// Script is the Node script, in the folder, that runs the workloads.
const Script = "bench.js"

// InstallArgs is the npm command that installs the locked packages: exactly
// the lock file's versions, no install scripts (the one optional native
// add-on they would build, msgpackr-extract, is not needed: msgpackr falls
// back to JavaScript).
var InstallArgs = []string{"npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"}

// Node returns the path of the node binary and its version ("v20.20.2"),
// or an error saying why it cannot run the benchmarks.
func Node(ctx context.Context) (path, version string, err error) {
	path, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("node is not installed (%v); BullMQ needs Node.js %d or later", err, MinNode)
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s --version failed: %v", path, err)
	}
	version = strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < MinNode {
		return "", "", fmt.Errorf("node %s is older than %d, the version the lock file was made for", version, MinNode)
	}
	return path, version, nil
}

// lockFile is the part of package-lock.json (lockfileVersion 2 or 3) read
// here.
type lockFile struct {
	Packages map[string]struct {
		Version  string `json:"version"`
		Optional bool   `json:"optional"`
	} `json:"packages"`
}

// Installed checks that every package the lock file in dir pins is
// installed in dir/node_modules at its locked version (an optional package,
// such as another platform's add-on, may be missing), and returns the
// installed bullmq version.
func Installed(dir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return "", fmt.Errorf("no lock file: %v", err)
	}
	var lock lockFile
	if err := json.Unmarshal(raw, &lock); err != nil {
		return "", fmt.Errorf("package-lock.json: %v", err)
	}
	if _, ok := lock.Packages["node_modules/bullmq"]; !ok {
		return "", errors.New("package-lock.json pins no bullmq")
	}
	bullmq := ""
	for path, want := range lock.Packages {
		if path == "" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path), "package.json"))
		if err != nil {
			if want.Optional && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return "", fmt.Errorf("%s is not installed: run `%s` in the folder", path, strings.Join(InstallArgs, " "))
		}
		var got struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			return "", fmt.Errorf("%s/package.json: %v", path, err)
		}
		if got.Version != want.Version {
			return "", fmt.Errorf("%s is %s, the lock file pins %s: run `%s` in the folder", path, got.Version, want.Version, strings.Join(InstallArgs, " "))
		}
		if path == "node_modules/bullmq" {
			bullmq = got.Version
		}
	}
	return bullmq, nil
}

// Install runs npm ci in dir unless the locked packages are installed
// already. It reports whether it ran npm, and on failure what went wrong,
// with the end of npm's output.
func Install(ctx context.Context, dir string) (ran bool, err error) {
	if _, err := Installed(dir); err == nil {
		return false, nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return false, fmt.Errorf("npm is not installed (%v): BullMQ cannot be installed from the lock file", err)
	}
	cmd := exec.CommandContext(ctx, InstallArgs[0], InstallArgs[1:]...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return true, fmt.Errorf("`%s` failed: %v (%s)", strings.Join(InstallArgs, " "), err, tail(out.String(), 3))
	}
	if _, err := Installed(dir); err != nil {
		return true, fmt.Errorf("`%s` succeeded but %v", strings.Join(InstallArgs, " "), err)
	}
	return true, nil
}

// tail returns the last n non-empty lines of s, joined with " / ",
// leaving out npm's pointer to its log file (a path of this machine).
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "complete log of this run") {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
