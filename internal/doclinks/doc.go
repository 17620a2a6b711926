// Package doclinks holds the tests that keep the project's Markdown honest:
// every relative link in README.md, docs/*.md and the other Markdown files
// of the module points at a file that exists, every #fragment at an anchor
// or heading of its target (BENCHMARKS.md's row anchors included), every
// docs page is linked from the README, and the README's first screen keeps
// the two set-up commands.
//
// The package has no code of its own: run it with go test ./internal/doclinks.
package doclinks
