package doclinks

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A snippet is one ```go block of a Markdown file, with the glue declared
// for it.
//
// The glue is what a fragment needs to compile and the reader does not
// need to see: the variables it takes as given, the imports it leaves out.
// It sits in the Markdown source right above the block, in an HTML comment
// that opens with "<!-- glue" (a rendered page hides it; an editor sees it
// next to the code it serves):
//
//	<!-- glue
//	import "github.com/hibiken/asynq"
//	var rule backoff.Rule
//	-->
//	```go
//	retry, err := reboundasynq.New(rule)
//	```
//
// The test builds each block as a program: the imports of the glue and of
// the block (import lines at the top of a block are hoisted), the glue's
// other lines at file level, and the block itself in func main, or at file
// level when it is declarations (it starts with func or type). Variables
// and imports a fragment leaves unused are fine; every other compile error
// fails, named by the Markdown file and line. A block with an
// "// Output:" comment is run too, and must print what the comment says,
// as a Go example must.
type snippet struct {
	file       string // slash-separated, relative to the module root
	line       int    // line of the block's first code line
	body       []string
	glue       []string
	glueLine   int // line of the glue's first line
	output     []string
	wantOutput bool
}

// glueOpen starts a glue comment.
const glueOpen = "<!-- glue"

// snippets returns the ```go blocks of the Markdown src of file, each with
// the glue declared right above it.
func snippets(file, src string) ([]snippet, error) {
	lines := strings.Split(src, "\n")
	var out []snippet
	var glue []string
	glueLine, glueEnd := 0, -1 // glueEnd: index of the glue's closing line
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(strings.TrimSpace(line), glueOpen) {
			first := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), glueOpen))
			glue, glueLine = nil, i+2
			if first != "" {
				return nil, fmt.Errorf("%s:%d: put the glue's code on the lines after %q, not on its line", file, i+1, glueOpen)
			}
			j := i + 1
			for ; j < len(lines) && strings.TrimSpace(lines[j]) != "-->"; j++ {
				glue = append(glue, lines[j])
			}
			if j == len(lines) {
				return nil, fmt.Errorf("%s:%d: the glue comment is never closed: want a line of its own reading -->", file, i+1)
			}
			i, glueEnd = j, j
			continue
		}
		fence, ok := fenceOf(line)
		if !ok {
			continue
		}
		info := strings.Fields(strings.TrimLeft(strings.TrimSpace(line), fence[:1]))
		start := i
		var body []string
		for i++; i < len(lines); i++ {
			if fc, ok := fenceOf(lines[i]); ok && strings.HasPrefix(fc, fence) && strings.TrimSpace(strings.Trim(strings.TrimSpace(lines[i]), fence[:1])) == "" {
				break
			}
			body = append(body, lines[i])
		}
		if len(info) == 0 || info[0] != "go" {
			if glueEnd == start-1 {
				return nil, fmt.Errorf("%s:%d: a glue comment stands above a block that is not ```go", file, start+1)
			}
			continue
		}
		s := snippet{file: file, line: start + 2, body: body}
		if glueEnd == start-1 {
			s.glue, s.glueLine = glue, glueLine
		}
		s.output, s.wantOutput = expectedOutput(body)
		out = append(out, s)
	}
	return out, nil
}

// expectedOutput returns the lines after a "// Output:" comment of body.
func expectedOutput(body []string) ([]string, bool) {
	for i, l := range body {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "// Output:") {
			continue
		}
		var want []string
		if rest := strings.TrimSpace(strings.TrimPrefix(t, "// Output:")); rest != "" {
			want = append(want, rest)
		}
		for _, l := range body[i+1:] {
			l = strings.TrimSpace(l)
			if !strings.HasPrefix(l, "//") {
				break
			}
			want = append(want, strings.TrimSpace(strings.TrimPrefix(l, "//")))
		}
		return want, true
	}
	return nil, false
}

var (
	importLine  = regexp.MustCompile(`^import\s+((?:[A-Za-z_][A-Za-z0-9_]*|\.|_)\s+)?"[^"]+"\s*(//.*)?$`)
	importSpec  = regexp.MustCompile(`^\s*((?:[A-Za-z_][A-Za-z0-9_]*|\.|_)\s+)?"[^"]+"\s*(//.*)?$`)
	declStart   = regexp.MustCompile(`^(func|type)\s`)
	lineComment = regexp.MustCompile(`^\s*(//.*)?$`)
)

// splitImports returns the import specs at the top of lines (single
// import lines and import blocks), and lines with those lines blanked.
func splitImports(lines []string) (specs []string, rest []string) {
	rest = append([]string(nil), lines...)
	inBlock := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case inBlock && t == ")":
			inBlock = false
		case inBlock && importSpec.MatchString(l):
			specs = append(specs, stripComment(t))
		case inBlock && lineComment.MatchString(l):
		case !inBlock && (t == "import (" || t == "import("):
			inBlock = true
		case !inBlock && importLine.MatchString(t):
			specs = append(specs, stripComment(strings.TrimSpace(strings.TrimPrefix(t, "import"))))
		case !inBlock && lineComment.MatchString(l):
			continue // blank lines and comments before and between imports
		default:
			return specs, rest
		}
		rest[i] = ""
	}
	return specs, rest
}

func stripComment(spec string) string {
	if i := strings.Index(spec, "//"); i >= 0 && strings.Count(spec[:i], `"`) == 2 {
		return strings.TrimSpace(spec[:i])
	}
	return spec
}

// program returns the Go source that compiles s, with //line directives
// so that the compiler names the Markdown file and line.
func (s snippet) program() string {
	glueImports, glue := splitImports(s.glue)
	bodyImports, body := splitImports(s.body)
	var b strings.Builder
	b.WriteString("package main\n\n")
	seen := map[string]bool{}
	if len(glueImports)+len(bodyImports) > 0 {
		b.WriteString("import (\n")
		for _, spec := range append(glueImports, bodyImports...) {
			if !seen[spec] {
				seen[spec] = true
				b.WriteString("\t" + spec + "\n")
			}
		}
		b.WriteString(")\n")
	}
	if len(glue) > 0 {
		fmt.Fprintf(&b, "\n//line %s:%d:1\n%s\n", s.file, s.glueLine, strings.Join(glue, "\n"))
	}
	first := ""
	for _, l := range body {
		if !lineComment.MatchString(l) {
			first = l
			break
		}
	}
	if declStart.MatchString(first) {
		fmt.Fprintf(&b, "\n//line %s:%d:1\n%s\n", s.file, s.line, strings.Join(body, "\n"))
		if !regexp.MustCompile(`(?m)^func main\(\)`).MatchString(strings.Join(body, "\n")) {
			b.WriteString("\n//line snippet-glue:1\nfunc main() {}\n")
		}
		return b.String()
	}
	fmt.Fprintf(&b, "\n//line snippet-glue:1\nfunc main() {\n//line %s:%d:1\n%s\n}\n", s.file, s.line, strings.Join(body, "\n"))
	return b.String()
}

// tolerated are the compile errors a fragment may have: what it declares
// or imports for show and does not use.
var tolerated = regexp.MustCompile(`declared and not used|imported and not used`)

// compileError is a compiler message about a snippet, at file:line:col.
var compileError = regexp.MustCompile(`^(\S+\.md):(\d+):(\d+): (.*)$`)

// snippetProblems builds every snippet as a program of its own, in a
// directory under pkgDir (an overlay: nothing is written to the module),
// and returns what is wrong with each, as "file:line: message" lines.
func snippetProblems(t *testing.T, root string, snips []snippet) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH (%v); the snippet test builds every Go block of the docs with it", err)
	}
	tmp := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	for i, s := range snips {
		dir := filepath.Join(root, "internal", "doclinks", "testdata", "snippets", fmt.Sprintf("s%03d", i))
		src := filepath.Join(tmp, fmt.Sprintf("s%03d.go", i))
		if err := os.WriteFile(src, []byte(s.program()), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(dir, "main.go")] = src
		pkgs = append(pkgs, "./"+filepath.ToSlash(must(filepath.Rel(root, dir))))
	}
	ov, _ := json.Marshal(map[string]any{"Replace": overlay})
	ovFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovFile, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = root
		return cmd.CombinedOutput()
	}
	base := []string{"-overlay=" + ovFile}
	if raceEnabled {
		base = append(base, "-race") // share the build cache of the -race run
	}
	out, buildErr := run(append(append([]string{"build", "-gcflags=-e", "-o", os.DevNull}, base...), pkgs...)...)
	var problems []string
	failed := map[string]bool{} // file:line of the snippets with real errors
	for _, l := range strings.Split(string(out), "\n") {
		m := compileError.FindStringSubmatch(l)
		if m == nil || tolerated.MatchString(m[4]) {
			continue
		}
		s := owner(snips, m[1], atoi(m[2]))
		where := m[1] + ":" + m[2]
		code := ""
		if s != nil {
			failed[fmt.Sprintf("%s:%d", s.file, s.line)] = true
			if k := atoi(m[2]) - s.line; k >= 0 && k < len(s.body) {
				code = "\n\t\t" + strings.TrimSpace(s.body[k])
			} else if k := atoi(m[2]) - s.glueLine; s.glue != nil && k >= 0 && k < len(s.glue) {
				code = "\n\t\t" + strings.TrimSpace(s.glue[k]) + "   (in the glue)"
			}
		}
		problems = append(problems, fmt.Sprintf("%s:%s: %s%s", where, m[3], m[4], code))
	}
	if buildErr != nil && len(problems) == 0 && !onlyTolerated(string(out)) {
		problems = append(problems, fmt.Sprintf("building the snippets failed for a reason the test cannot place (%v):\n%s", buildErr, out))
	}
	for i, s := range snips {
		if !s.wantOutput || failed[fmt.Sprintf("%s:%d", s.file, s.line)] {
			continue
		}
		bin := filepath.Join(tmp, fmt.Sprintf("s%03d.bin", i))
		if out, err := run(append(append([]string{"build", "-o", bin}, base...), pkgs[i])...); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: the block shows output, so it must compile with nothing unused, and it does not:\n%s", s.file, s.line, out))
			continue
		}
		got, err := exec.Command(bin).CombinedOutput()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: the block ran and failed (%v):\n%s", s.file, s.line, err, got))
			continue
		}
		if g, w := strings.TrimSpace(normalize(string(got))), strings.Join(s.output, "\n"); g != w {
			problems = append(problems, fmt.Sprintf("%s:%d: the block printed\n%s\nwant, as its // Output: comment says,\n%s", s.file, s.line, g, w))
		}
	}
	return problems
}

// normalize trims every line of s, as the output of a Go example is
// compared.
func normalize(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}

// onlyTolerated reports whether every compiler message in out is one a
// fragment may have.
func onlyTolerated(out string) bool {
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, "# ") {
			continue
		}
		if m := compileError.FindStringSubmatch(l); m == nil || !tolerated.MatchString(m[4]) {
			return false
		}
	}
	return true
}

// owner returns the snippet of file whose block or glue holds line.
func owner(snips []snippet, file string, line int) *snippet {
	for i := range snips {
		s := &snips[i]
		if s.file != file {
			continue
		}
		if line >= s.line && line < s.line+len(s.body) || s.glue != nil && line >= s.glueLine && line < s.glueLine+len(s.glue) {
			return s
		}
	}
	return nil
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSnippetsCompile builds every ```go block of the module's Markdown
// files (README.md, docs/*.md, the examples' READMEs) with its glue, and
// runs those that show output.
func TestSnippetsCompile(t *testing.T) {
	root := moduleRoot(t)
	var all []snippet
	for _, f := range markdownFiles(t, root) {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		s, err := snippets(f, string(src))
		if err != nil {
			t.Error(err)
			continue
		}
		all = append(all, s...)
	}
	if len(all) == 0 {
		t.Fatal("found no ```go block in the Markdown files; the test is looking in the wrong place")
	}
	for _, p := range snippetProblems(t, root, all) {
		t.Error(p)
	}
	t.Logf("built %d Go blocks of the docs", len(all))
	if t.Failed() {
		t.Logf("a Go block must compile as shown, with the glue declared above it in a %q comment (see snippets_test.go); unused variables and imports are fine", glueOpen+" ... -->")
	}
}

// TestSnippetCheckerCatches runs the checker on blocks with known faults:
// each must be reported at its Markdown line with the compiler's message,
// and a clean block with output must pass.
func TestSnippetCheckerCatches(t *testing.T) {
	md := strings.Join([]string{
		"# x",                 // 1
		"",                    // 2
		"<!-- glue",           // 3
		`import "fmt"`,        // 4
		"var n = 2",           // 5
		"-->",                 // 6
		"```go",               // 7
		"fmt.Println(n * 21)", // 8
		"// Output: 42",       // 9
		"```",                 // 10
		"",                    // 11
		"```go",               // 12
		"x := 1",              // 13
		"x := 2",              // 14
		"```",                 // 15
		"",                    // 16
		"```go",               // 17
		`import "strings"`,    // 18
		"",                    // 19
		"unused := strings.ToUpper(undefinedName)", // 20
		"```",               // 21
		"```go",             // 22
		`import "fmt"`,      // 23
		`fmt.Println("no")`, // 24
		"// Output: yes",    // 25
		"```",               // 26
		"```go",             // 27
		"time.Second{}",     // 28
		"```",               // 29
	}, "\n")
	snips, err := snippets("docs/x.md", md)
	if err != nil {
		t.Fatal(err)
	}
	if len(snips) != 5 {
		t.Fatalf("found %d blocks, want 5", len(snips))
	}
	got := strings.Join(snippetProblems(t, moduleRoot(t), snips), "\n")
	for _, want := range []string{
		"docs/x.md:14:3: no new variables on left side of :=",
		"docs/x.md:20:",
		"undefined: undefinedName",
		"docs/x.md:23: the block printed\nno\nwant, as its // Output: comment says,\nyes",
		"docs/x.md:28:1: undefined: time",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("want a problem containing %q, got:\n%s", want, got)
		}
	}
	if strings.Contains(got, "docs/x.md:8") || strings.Contains(got, "docs/x.md:13") || strings.Contains(got, "declared and not used") {
		t.Errorf("the good block (or a tolerated unused variable) was reported:\n%s", got)
	}
	for _, bad := range []string{"<!-- glue\nvar x int\n", "<!-- glue var x int\n-->\n", "<!-- glue\n-->\n```sh\nls\n```\n"} {
		if _, err := snippets("docs/y.md", bad); err == nil {
			t.Errorf("snippets(%q) = nil error, want the malformed glue reported", bad)
		}
	}
}
