// Package ui serves rebound's browser page: a retry policy's curve, the herd
// it makes, and, given native queues, their jobs by state, refreshed live.
//
// The page is hand-written HTML, CSS and JavaScript embedded in the binary;
// it loads nothing from the network. Every number it shows comes from the Go
// side through JSON: the curve view asks a [Model] (the rebound command passes
// the code its plan and herd commands run, so the page and the terminal agree
// to the digit), and the queue view reads each [Queue].
//
// # Security
//
// The page shows job payloads and errors and can act on queues, so
// the server trusts no request by default:
//
//   - On loopback (the default) it answers only requests whose Host is a
//     loopback address or "localhost", which defeats DNS rebinding.
//   - Beyond loopback ([Config].Remote) every request needs the access token:
//     a "token" query parameter, which the page swaps for an HttpOnly cookie,
//     or an "Authorization: Bearer" header.
//   - State-changing requests (POST) must carry the per-process token the page
//     embeds, in the X-Rebound-Token header, and pass Go's cross-origin
//     checks (Sec-Fetch-Site, Origin).
//   - A Content-Security-Policy allows only the page's own scripts and styles.
//   - A read-only server ([Config].ReadOnly) refuses every request that is
//     not a read, before any other check of it, and reports no action.
//   - Over TLS ([Config].TLS) the access token's cookie is Secure.
//
// # Queue actions
//
// The queue view reads counts and single jobs through [Queue]. A queue that
// also implements [JobLister], [JobPager], [Retrier], [Runner], [Deleter] or [Pauser]
// gains that feature in the API and the page without further change here:
// the server reports each queue's features and the page shows only the
// controls a queue supports.
//
// # A job's page
//
// /job shows one job (named by the exact bytes of its queue's name and
// its ID, in base64url): everything the queue stores about it, escaped
// and bounded, and its schedule on one time bar, the attempts so far as
// far as the queue stores their times and the next fire times of a rule
// the page names, computed by the [Model] keyed by the job's ID. The
// queue does not store the worker's rule; the page says whose times it
// draws.
package ui
