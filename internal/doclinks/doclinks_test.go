package doclinks

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// firstScreen is how many lines of the README a reader sees before
// scrolling; the set-up commands must be among them.
const firstScreen = 40

// setUpCommands are the README's set-up commands, which CI and the checker
// look for verbatim.
var setUpCommands = []string{"go run ./examples/quickstart", "go test ./..."}

// TestLinks checks every relative link of every Markdown file in the
// module: the file or directory it names exists inside the module, and its
// fragment, if any, names an anchor of the target.
func TestLinks(t *testing.T) {
	root := moduleRoot(t)
	files := markdownFiles(t, root)
	for _, want := range []string{"README.md", "BENCHMARKS.md"} {
		if !slices.Contains(files, want) {
			t.Errorf("%s not found among the module's Markdown files %v", want, files)
		}
	}
	c := newChecker(root)
	checked := 0
	for _, f := range files {
		n, errs := c.check(f)
		checked += n
		for _, err := range errs {
			t.Error(err)
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found; the link parser is broken")
	}
	t.Logf("%d relative links in %d files", checked, len(files))
}

// TestDocsPagesLinkedFromReadme checks that no page under docs/ is an
// orphan: the README links to each one.
func TestDocsPagesLinkedFromReadme(t *testing.T) {
	root := moduleRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md page found")
	}
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range links(string(src)) {
		p, _, _ := strings.Cut(l.dest, "#")
		linked[path.Clean(p)] = true
	}
	for _, p := range pages {
		rel := "docs/" + filepath.Base(p)
		if !linked[rel] {
			t.Errorf("README.md does not link to %s; link every docs page from the README", rel)
		}
	}
}

// TestReadmeFirstScreen checks that the set-up commands stay verbatim in a
// code block on the README's first screen.
func TestReadmeFirstScreen(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkFirstScreen(string(src)); err != nil {
		t.Error(err)
	}
}

// checkFirstScreen reports a set-up command that is missing from the code
// blocks in the first firstScreen lines of a README.
func checkFirstScreen(readme string) error {
	var code []string
	walk(readme, func(line string, n int, inCode bool) {
		if inCode && n <= firstScreen {
			code = append(code, line)
		}
	})
	var missing []string
	for _, cmd := range setUpCommands {
		found := false
		for _, line := range code {
			if strings.HasPrefix(strings.TrimSpace(line), cmd+" ") || strings.TrimSpace(line) == cmd {
				found = true
			}
		}
		if !found {
			missing = append(missing, cmd)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("README.md: %q missing from the code blocks of its first %d lines; keep the set-up commands verbatim there", missing, firstScreen)
	}
	return nil
}

// moduleRoot returns the directory holding go.mod, above the test's
// working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's working directory")
		}
		dir = parent
	}
}

// markdownFiles returns the module's Markdown files, slash-separated and
// relative to root, skipping hidden directories and testdata.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checker checks the links of Markdown files under root, reading each
// target's anchors once.
type checker struct {
	root    string
	anchors map[string]map[string]bool // file (slash, relative to root) -> anchors
}

func newChecker(root string) *checker {
	return &checker{root: root, anchors: map[string]map[string]bool{}}
}

// check checks the relative links of file (slash-separated, relative to the
// root) and returns how many it checked and what is wrong with them.
func (c *checker) check(file string) (int, []error) {
	src, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(file)))
	if err != nil {
		return 0, []error{err}
	}
	var errs []error
	n := 0
	for _, l := range links(string(src)) {
		if hasScheme(l.dest) || strings.HasPrefix(l.dest, "//") {
			continue
		}
		n++
		if err := c.resolve(file, l.dest); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: link %q: %w", file, l.line, l.dest, err))
		}
	}
	return n, errs
}

// resolve checks one relative link dest found in file.
func (c *checker) resolve(file, dest string) error {
	p, frag, hasFrag := strings.Cut(dest, "#")
	p, err := url.PathUnescape(p)
	if err != nil {
		return fmt.Errorf("bad escape in path: %w", err)
	}
	target := file
	if p != "" {
		if strings.HasPrefix(p, "/") {
			return errors.New("absolute path; use a path relative to the file")
		}
		target = path.Join(path.Dir(file), p)
		if target == ".." || strings.HasPrefix(target, "../") {
			return errors.New("leaves the module")
		}
		if _, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(target))); err != nil {
			return fmt.Errorf("%s does not exist", target)
		}
	}
	if !hasFrag {
		return nil
	}
	if !strings.HasSuffix(target, ".md") {
		return fmt.Errorf("fragment on %s, which is not Markdown; its anchors cannot be checked", target)
	}
	frag, err = url.PathUnescape(frag)
	if err != nil {
		return fmt.Errorf("bad escape in fragment: %w", err)
	}
	anchors, err := c.anchorsOf(target)
	if err != nil {
		return err
	}
	if !anchors[frag] {
		return fmt.Errorf("%s has no anchor %q (neither an id/name attribute nor a heading)", target, frag)
	}
	return nil
}

// anchorsOf returns the anchors of the Markdown file target.
func (c *checker) anchorsOf(target string) (map[string]bool, error) {
	if a, ok := c.anchors[target]; ok {
		return a, nil
	}
	src, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(target)))
	if err != nil {
		return nil, err
	}
	a := anchors(string(src))
	c.anchors[target] = a
	return a, nil
}

// link is one link destination and the line it is on (1-based).
type link struct {
	dest string
	line int
}

var (
	// inlineLink matches the destination of [text](dest) and ![alt](dest),
	// with an optional "title".
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// htmlRef matches href and src attributes.
	htmlRef = regexp.MustCompile(`\b(?:href|src)\s*=\s*"([^"]*)"`)
	// htmlAnchor matches id and name attributes.
	htmlAnchor = regexp.MustCompile(`\b(?:id|name)\s*=\s*"([^"]*)"`)
	// codeSpan matches inline code.
	codeSpan = regexp.MustCompile("(`+)[^`]*?(`+)")
	scheme   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	heading  = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlTag  = regexp.MustCompile(`<[^>]*>`)
	// linkText matches a whole link or image, its text in the group.
	linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

func hasScheme(dest string) bool { return scheme.MatchString(dest) }

// fenceOf reports whether line opens or closes a fenced code block, and
// its fence.
func fenceOf(line string) (string, bool) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return "", false
	}
	for _, ch := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, ch))
		if n >= 3 {
			return strings.Repeat(ch, n), true
		}
	}
	return "", false
}

// walk calls f with every line of src but the fences themselves, its
// 1-based number, and whether it lies inside a fenced code block.
func walk(src string, f func(line string, n int, code bool)) {
	fence := ""
	for i, line := range strings.Split(src, "\n") {
		if fc, ok := fenceOf(line); ok {
			switch {
			case fence == "":
				fence = fc
				continue
			case strings.HasPrefix(fc, fence):
				fence = ""
				continue
			}
		}
		f(line, i+1, fence != "")
	}
}

// prose calls f with every line of src outside fenced code blocks and its
// 1-based number.
func prose(src string, f func(line string, n int)) {
	walk(src, func(line string, n int, code bool) {
		if !code {
			f(line, n)
		}
	})
}

// links returns the link destinations in Markdown src, outside code.
func links(src string) []link {
	var out []link
	prose(src, func(line string, n int) {
		line = codeSpan.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{inlineLink, htmlRef} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				out = append(out, link{dest: m[1], line: n})
			}
		}
	})
	return out
}

// anchors returns the anchors of Markdown src: id and name attributes, and
// the slugs GitHub gives its headings.
func anchors(src string) map[string]bool {
	a := map[string]bool{}
	seen := map[string]int{}
	prose(src, func(line string, _ int) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			a[m[1]] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if k := seen[s]; k > 0 {
				a[fmt.Sprintf("%s-%d", s, k)] = true
			} else {
				a[s] = true
			}
			seen[s]++
		}
	})
	return a
}

// slug is GitHub's anchor for a heading: the heading's text, links
// reduced to their text and HTML tags dropped, lowercased, with spaces
// turned into hyphens and every other character but letters, digits,
// hyphens and underscores removed.
func slug(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	text = strings.ReplaceAll(text, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestCheckerCatches shows the checker fails on each kind of broken link
// and passes the good ones, on a small tree of its own.
func TestCheckerCatches(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("BENCH.md", "# Bench\n\n## Where `rebound` is slower: a peer\n\n| <a id=\"row-1\"></a>x |\n\n## Twice\n\n## Twice\n")
	write("docs/page.md", "# Page\n\n## The [linked](x.md) heading\n")
	write("code.go", "package x\n")
	write("README.md", strings.Join([]string{
		"[ok file](docs/page.md)",
		"[ok dir](docs/)",
		"[ok anchor](BENCH.md#row-1)",
		"[ok heading](BENCH.md#where-rebound-is-slower-a-peer)",
		"[ok dup](BENCH.md#twice-1)",
		"[ok linked heading](docs/page.md#the-linked-heading)",
		"[ok self](#readme-heading)",
		`<img src="docs/page.md" alt="ok html">`,
		"[external](https://example.com/missing.md)",
		"`[in code](missing-inline.md)`",
		"```",
		"[in a block](missing-block.md)",
		"```",
		"## Readme heading",
		"[bad file](docs/missing.md)",
		"[bad anchor](BENCH.md#row-2)",
		"[bad dup](BENCH.md#twice-2)",
		"[bad self](#nowhere)",
		"[outside](../outside.md)",
		"[fragment on code](code.go#L1)",
		`<a href="gone.md">bad html</a>`,
	}, "\n"))
	n, errs := newChecker(root).check("README.md")
	var got []string
	for _, err := range errs {
		got = append(got, err.Error())
	}
	wantBad := []string{"docs/missing.md", "BENCH.md#row-2", "BENCH.md#twice-2", "#nowhere", "../outside.md", "code.go#L1", "gone.md"}
	if len(got) != len(wantBad) {
		t.Fatalf("got %d errors, want %d (one per bad link):\n%s", len(got), len(wantBad), strings.Join(got, "\n"))
	}
	for i, w := range wantBad {
		if !strings.Contains(got[i], fmt.Sprintf("link %q", w)) {
			t.Errorf("error %d = %q, want it about %q", i, got[i], w)
		}
	}
	if want := 15; n != want {
		t.Errorf("checked %d relative links, want %d (code and external links skipped)", n, want)
	}
}

// TestFirstScreenCatches shows checkFirstScreen fails when a set-up command
// leaves the first screen or its code block.
func TestFirstScreenCatches(t *testing.T) {
	good := "# x\n\n```sh\ngo run ./examples/quickstart   # a\ngo test ./...                  # b\n```\n"
	if err := checkFirstScreen(good); err != nil {
		t.Errorf("good README: %v", err)
	}
	for name, readme := range map[string]string{
		"not in code":  "# x\n\ngo run ./examples/quickstart\n\n```sh\ngo test ./...\n```\n",
		"too far down": strings.Repeat("line\n", firstScreen) + good,
		"altered":      strings.Replace(good, "./examples/quickstart", "./examples/quickstart/", 1),
	} {
		if err := checkFirstScreen(readme); err == nil {
			t.Errorf("%s: no error, want one", name)
		}
	}
}
