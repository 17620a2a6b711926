package bullmq

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

const lock = `{"lockfileVersion": 3, "packages": {
  "": {"name": "x"},
  "node_modules/bullmq": {"version": "6.7.0"},
  "node_modules/ioredis": {"version": "5.11.1"},
  "node_modules/extract-darwin": {"version": "3.0.7", "optional": true}
}}`

func TestInstalledComparesEveryLockedPackage(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "package-lock.json"), lock)
	if _, err := Installed(dir); err == nil || !strings.Contains(err.Error(), "is not installed") {
		t.Fatalf("empty node_modules: err %v, want not installed", err)
	}
	writeFile(t, filepath.Join(dir, "node_modules/bullmq/package.json"), `{"version": "6.7.0"}`)
	writeFile(t, filepath.Join(dir, "node_modules/ioredis/package.json"), `{"version": "5.10.0"}`)
	if _, err := Installed(dir); err == nil || !strings.Contains(err.Error(), "node_modules/ioredis is 5.10.0, the lock file pins 5.11.1") {
		t.Fatalf("stale ioredis: err %v, want the version mismatch", err)
	}
	writeFile(t, filepath.Join(dir, "node_modules/ioredis/package.json"), `{"version": "5.11.1"}`)
	v, err := Installed(dir)
	if err != nil || v != "6.7.0" {
		t.Fatalf("installed: %q, %v; want 6.7.0 (a missing optional package is fine)", v, err)
	}
}

func TestInstalledWithoutLock(t *testing.T) {
	if _, err := Installed(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no lock file") {
		t.Fatalf("err %v, want no lock file", err)
	}
}

// The committed lock file pins the BullMQ the benchmarks describe.
func TestCommittedLockPinsBullMQ(t *testing.T) {
	raw, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"node_modules/bullmq": {
      "version": "6.7.0"`, `"node_modules/ioredis": {
      "version": "5.11.1"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("package-lock.json lacks %s", want)
		}
	}
}
