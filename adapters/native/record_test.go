package native

import (
	"strings"
	"testing"
)

func TestDecodeRecord(t *testing.T) {
	r, err := decodeRecord("3,17,5,1000,,12|4:boom2:{}1:np|a:y")
	if err != nil {
		t.Fatal(err)
	}
	if r.attempts != 3 || r.tok != "17" || r.max != 5 || r.created != 1000 || r.finished != 0 || r.ftok != "12" ||
		r.err != "boom" || r.meta != "{}" || r.name != "n" || string(r.payload) != "p|a:y" {
		t.Fatalf("decoded %+v", r)
	}
	for _, c := range []struct{ in, want string }{
		{"3,17,5,1000,|0:0:0:", "header has 5 fields, want 6"},
		{"3,17,5,1000,,12,9|0:0:0:", "header has 7 fields, want 6"},
		{"3,17,5,1000,,12", "no '|'"},
		{"3,17,5,1000,,12|9:x", "bad string length"},
	} {
		if _, err := decodeRecord(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("decodeRecord(%q) = %v, want an error saying %q", c.in, err, c.want)
		}
	}
}
