package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/internal/testenv"
)

// machine describes where and with what a report was made.
type machine struct {
	CPU      string
	Cores    int
	OS       string
	Go       string
	Commit   string
	Redis    server
	Postgres server
	// BullMQ is the BullMQ peer's version and Node's, or why it was not
	// measured; empty when no section with BullMQ rows ran.
	BullMQ string
}

// server is a database the benchmarks may use.
type server struct {
	Addr    string
	Version string // empty when it did not answer
	Err     string // why it did not answer
}

func (s server) up() bool { return s.Version != "" }

func detect(ctx context.Context, root string) machine {
	m := machine{
		CPU:   cpuModel(),
		Cores: runtime.NumCPU(),
		OS:    runtime.GOOS + "/" + runtime.GOARCH,
		Go:    runtime.Version(),
	}
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.OS += ", kernel " + strings.TrimSpace(string(rel))
	}
	if out, err := command(ctx, root, "go", "env", "GOVERSION"); err == nil {
		m.Go = out
	}
	if out, err := command(ctx, root, "git", "rev-parse", "--short", "HEAD"); err == nil {
		m.Commit = out
		if st, err := command(ctx, root, "git", "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
			m.Commit += " (with uncommitted changes)"
		}
	}
	m.Redis = redisVersion(ctx)
	m.Postgres = postgresVersion(ctx)
	return m
}

func command(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// cpuModel reads the processor's name from /proc/cpuinfo where there is one.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH + " (model unknown)"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH + " (model unknown)"
}

func redisVersion(ctx context.Context) server {
	s := server{Addr: testenv.RedisAddr()}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		s.Err = err.Error()
		return s
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			s.Version = v
		}
	}
	if s.Version == "" {
		s.Version = "unknown version"
	}
	return s
}

func postgresVersion(ctx context.Context) server {
	url := testenv.PostgresURL()
	s := server{Addr: url}
	if cfg, err := pgx.ParseConfig(url); err == nil {
		s.Addr = cfg.Host + ":" + itoa(int(cfg.Port)) + "/" + cfg.Database
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		s.Err = err.Error()
		return s
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&s.Version); err != nil {
		s.Err, s.Version = err.Error(), ""
	}
	return s
}
