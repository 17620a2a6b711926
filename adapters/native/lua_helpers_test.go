package native

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The record helpers of the hot scripts, run on every backend's Lua: num
// prints every integer a script formats exactly (up to 2^53, negative ones
// too); rec_head reads a record's head and the position of its '|' in one
// match, payloads holding ',' and '|' included, and refuses a malformed
// head; rec_ended takes the new error as the record holds it (led by its
// length, packed once per batch by fail) and rebuilds each case in one
// piece. (rec_ended took the raw text before, so the packed cases failed.)
func TestRecordHelpersInLua(t *testing.T) {
	src := mustRead("lua/lib/num.lua") + "\n" + mustRead("lua/lib/rec_head.lua") + "\n" + mustRead("lua/lib/rec_ended.lua") + `
local out = {num(9007199254740991), num(-1), num(2199023255551 * 4096 + 4095), num(1733150000000)}
local s = ARGV[1]
local bar, attempts, tok, max, created, finished, ftok = rec_head(s, 'j')
out[#out + 1] = bar .. ' ' .. attempts .. ' ' .. tok .. ' ' .. max .. ' ' .. created .. ' [' .. finished .. '] ' .. ftok
out[#out + 1] = rec_ended(s, bar, attempts, max, created, '2000', '17', nil, '-')
out[#out + 1] = rec_ended(s, bar, attempts, max, created, '2000', '17', '9:went, bad', '-')
out[#out + 1] = rec_ended(s, bar, attempts, max, created, '2000', '17', nil, '{"k":1}')
out[#out + 1] = rec_ended(s, bar, attempts, max, created, '2000', '17', '0:', '')
if not pcall(rec_head, '3,17,5,1000,|0:0:0:', 'j') and not pcall(rec_head, '3,17,5,1000,,12,9|0:0:0:', 'j') and not pcall(rec_head, '3,17,5,1000,,12', 'j') then
  out[#out + 1] = 'refused'
end
return out
`
	rec := "3,17,5,1000,,12|4:boom2:{}1:np|a:,y"
	want := []string{
		"9007199254740991", "-1", "9007199254740991", "1733150000000",
		"16 3 17 5 1000 [] 12",
		"3,,5,1000,2000,17|4:boom2:{}1:np|a:,y",
		"3,,5,1000,2000,17|9:went, bad2:{}1:np|a:,y",
		`3,,5,1000,2000,17|4:boom7:{"k":1}1:np|a:,y`,
		"3,,5,1000,2000,17|0:0:1:np|a:,y",
		"refused",
	}
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, _ string) {
		got, err := rdb.Eval(context.Background(), src, nil, rec).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("helpers returned\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, r := range got[5:9] {
			if _, err := decodeRecord(r); err != nil {
				t.Errorf("rebuilt record %q does not decode: %v", r, err)
			}
		}
	})
}
