#!/usr/bin/env bash
# Jaeger all-in-one for rebound's end-to-end tracing test (otel/e2e_jaeger_test.go).
#
#   bash .ci/jaeger.sh build   build the binary once into the cache (no-op when cached)
#   bash .ci/jaeger.sh start   build if needed, start Jaeger on loopback with in-memory
#                              storage, wait until it is ready, and print the variables
#                              the test reads, as shell assignments for eval
#   bash .ci/jaeger.sh stop    stop the Jaeger this script started
#
# Typical use:  eval "$(bash .ci/jaeger.sh start)"; go test ./otel/...; bash .ci/jaeger.sh stop
#
# Jaeger comes from the Go module proxy through the separate tools module in
# .ci/tools/jaeger (its own go.mod, so none of it reaches the library's go.mod).
# The binary (about 120 MB; about 10 minutes to compile on 2 cores) is cached outside
# the repository, keyed by the tools module's go.sum, and reused on every later run.
# Everything binds 127.0.0.1 only and spans live in memory: nothing is written to disk
# but the binary, its log and its pid file.
#
# Environment:
#   REBOUND_JAEGER_CACHE  where the binary is cached (default: ${XDG_CACHE_HOME:-$HOME/.cache}/rebound/jaeger)
#   REBOUND_JAEGER_RUN    where the config, log and pid file go (default: a directory under the cache)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
tools="$here/tools/jaeger"
if [ -n "${XDG_CACHE_HOME:-}" ]; then user_cache="$XDG_CACHE_HOME"
elif [ -n "${HOME:-}" ]; then user_cache="$HOME/.cache"
else user_cache="${TMPDIR:-/tmp}/rebound-cache"; fi
cache="${REBOUND_JAEGER_CACHE:-$user_cache/rebound/jaeger}"
run="${REBOUND_JAEGER_RUN:-$cache/run}"
key="$(sha256sum "$tools/go.sum" | cut -c1-16)"
bin="$cache/jaeger-$key"

query_url="http://127.0.0.1:16686"
otlp_http="127.0.0.1:4318"

log() { printf 'jaeger.sh: %s\n' "$*" >&2; }

build() {
  if [ -x "$bin" ]; then
    log "using cached $bin"
    return
  fi
  mkdir -p "$cache"
  log "building Jaeger into $bin (slow the first time: downloads, then about 10 minutes of compiling on 2 cores)"
  local start=$SECONDS tmp="$bin.tmp.$$"
  # GOWORK=off keeps any go.work of the caller out of the tools module; -trimpath keeps
  # the build reproducible between checkouts so the Go build cache is reused.
  (cd "$tools" && GOWORK=off GOFLAGS=-mod=readonly nice -n 10 go build -trimpath -o "$tmp" github.com/jaegertracing/jaeger/cmd/jaeger)
  mv -f "$tmp" "$bin"
  log "built in $((SECONDS - start)) s"
}

write_config() {
  mkdir -p "$run"
  # Only what the test needs: the OTLP receiver (gRPC and HTTP), in-memory storage and
  # the query API, every endpoint on 127.0.0.1. The collector's own metrics are off so
  # nothing listens on 8888.
  cat >"$run/config.yaml" <<EOF
service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    resource:
      service.name: jaeger
    metrics:
      level: none
    logs:
      level: info

extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:13133
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    enable_tracing: false
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:16686
    grpc:
      endpoint: 127.0.0.1:16685

receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:4317
      http:
        endpoint: $otlp_http

processors:
  batch:
    timeout: 200ms

exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
EOF
}

ready() {
  curl -fsS -o /dev/null --max-time 2 "$query_url/api/services" 2>/dev/null
}

print_env() {
  echo "export REBOUND_JAEGER_QUERY=$query_url"
  echo "export REBOUND_JAEGER_OTLP=http://$otlp_http"
}

start() {
  if [ -f "$run/pid" ] && kill -0 "$(cat "$run/pid")" 2>/dev/null && ready; then
    log "already running (pid $(cat "$run/pid"))"
    print_env
    return
  fi
  build
  write_config
  log "starting; log in $run/jaeger.log"
  nohup "$bin" --config "$run/config.yaml" >"$run/jaeger.log" 2>&1 </dev/null &
  echo $! >"$run/pid"
  for _ in $(seq 300); do
    if ready; then
      log "ready at $query_url (pid $(cat "$run/pid"))"
      print_env
      return
    fi
    if ! kill -0 "$(cat "$run/pid")" 2>/dev/null; then
      log "Jaeger exited during startup; last lines of its log:"
      tail -n 30 "$run/jaeger.log" >&2
      exit 1
    fi
    sleep 0.2
  done
  log "Jaeger did not answer on $query_url within 60 s; last lines of its log:"
  tail -n 30 "$run/jaeger.log" >&2
  stop
  exit 1
}

stop() {
  if [ -f "$run/pid" ]; then
    local pid
    pid="$(cat "$run/pid")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      log "stopped pid $pid"
    fi
    rm -f "$run/pid"
  fi
}

case "${1:-start}" in
  build) build ;;
  start) start ;;
  stop) stop ;;
  *) log "unknown command '${1}': expected build, start or stop"; exit 2 ;;
esac
