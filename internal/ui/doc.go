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
//
// # Queue actions
//
// The queue view reads counts and single jobs through [Queue]. A queue that
// also implements [JobLister], [JobPager], [Retrier], [Runner], [Deleter] or [Pauser]
// gains that feature in the API and the page without further change here:
// the server reports each queue's features and the page shows only the
// controls a queue supports.
package ui
