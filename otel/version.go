package reboundotel

// ScopeName is the instrumentation scope name of the tracer and meter this
// package creates: the package's import path.
const ScopeName = "github.com/rebound-go/rebound/otel"

// Version is the version of this instrumentation, reported as the
// instrumentation scope version.
const Version = "0.1.0"
