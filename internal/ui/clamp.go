package ui

import (
	"fmt"
	"math"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// The curve view's two contrasts, as the design notes draw them: beside an
// exponential curve, the linear schedule of the same base (step = base,
// the same cap), dashed; and for one chosen attempt, the raw value of the
// curve's formula next to the delay the cap clamps it to. Every number is
// computed here, in integers: the raw value exactly (a big number where it
// passes int64), or, for attempts whose raw value would take more memory
// than it is worth to write out, its exact length in binary digits.

// contrastOf returns the linear policy of f's base and cap, in text form,
// when f is an exponential curve, else "".
func contrastOf(f *Form) string {
	if f == nil || f.Curve != "exponential" || f.Base == nil || f.Cap == nil {
		return ""
	}
	return "linear(" + f.Base.Text + ", " + f.Base.Text + ", " + f.Cap.Text + ")"
}

// contrastJSON is the linear schedule drawn beside an exponential curve.
type contrastJSON struct {
	// Text is the linear policy's text form.
	Text string `json:"text"`
	// Plan is its schedule, attempts 1..Retries, as the curve's Plan.
	Plan []Step `json:"plan"`
	// Verdict compares the two at the last attempt tabled, e.g. "by
	// attempt 5 the exponential waits 1.6s, 3.2x the linear's 500ms",
	// the exponential without its jitter.
	Verdict string `json:"verdict"`
}

// contrast returns the linear contrast of c's curve for q, or nil.
func (s *Server) contrast(c Curve, q Query) *contrastJSON {
	text := contrastOf(formOf(c.Policy))
	if text == "" || q.Retries < 1 {
		return nil
	}
	lc, err := s.model.Curve(Query{Policy: text, Retries: q.Retries, From: q.From, HerdJobs: 1, HerdAttempt: 1, HerdBuckets: 1})
	if err != nil {
		return nil
	}
	if len(lc.Plan) == 0 {
		return &contrastJSON{Text: lc.Text, Plan: []Step{}}
	}
	exp := c.Plan
	if c.Steady != nil {
		exp = c.Steady
	}
	out := &contrastJSON{Text: lc.Text, Plan: lc.Plan}
	if len(exp) == len(lc.Plan) {
		e, l := exp[len(exp)-1], lc.Plan[len(lc.Plan)-1]
		en, _ := strconv.ParseInt(e.Delay.NS, 10, 64)
		ln, _ := strconv.ParseInt(l.Delay.NS, 10, 64)
		if ln > 0 {
			out.Verdict = fmt.Sprintf("by attempt %d the exponential waits %s, %sx the linear's %s", e.Attempt, e.Delay.Text, strconv.FormatFloat(float64(en)/float64(ln), 'g', 3, 64), l.Delay.Text)
		}
	}
	return out
}

// maxExactShift is the largest doubling the clamp view writes out in
// full: base × 2^4096 has some 1,250 digits. Beyond it the view gives the
// raw value's exact length in binary digits.
const maxExactShift = 4096

// rawValue is a curve's raw value at one attempt, before the cap.
type rawValue struct {
	// NS is the value in nanoseconds, exact, in decimal; "" when it is
	// too long to write out (then Bits says how long it is).
	NS string `json:"ns"`
	// MS is the value in milliseconds, exact (a decimal fraction where
	// it is not whole), digits grouped in threes; "" with NS.
	MS string `json:"ms"`
	// FitsInt64 reports whether the value in nanoseconds fits an int64,
	// the range of a time.Duration.
	FitsInt64 bool `json:"fitsInt64"`
	// Bits is the value's length in binary digits, in decimal.
	Bits string `json:"bits"`
	// Text reads the value, e.g. "52,428,800 ms" or "overflows int64:
	// a number of 4,103 binary digits".
	Text string `json:"text"`
}

// clampAnswer is the body of GET /api/clamp.
type clampAnswer struct {
	Policy string `json:"policy"`
	// Curve is the curve under the jitter wrapper, "exponential" or
	// "linear", and Formula its raw value at the attempt, e.g.
	// "100ms × 2^19".
	Curve   string `json:"curve"`
	Formula string `json:"formula"`
	// Attempt is the chosen attempt, in decimal (it may pass 2^53, which
	// a JSON number does not hold exactly).
	Attempt string   `json:"attempt"`
	Raw     rawValue `json:"raw"`
	// Cap is the curve's cap, Clamped the delay the core returns for the
	// attempt (backoff.Delay of the curve), ClampedMS that delay in exact
	// milliseconds, grouped.
	Cap       Duration `json:"cap"`
	Clamped   Duration `json:"clamped"`
	ClampedMS string   `json:"clampedMS"`
	// AtCap reports that the raw value reaches the cap: the delay is
	// the cap.
	AtCap bool `json:"atCap"`
	// FirstAtCap is the first attempt whose delay is the cap, in
	// decimal, "" for a curve that never reaches its cap.
	FirstAtCap string `json:"firstAtCap"`
	// Jittered is the delay the whole policy draws for the attempt, keyed
	// by Key, when the policy jitters the curve.
	Jittered *Duration `json:"jittered,omitempty"`
	Key      string    `json:"key"`
	// Linear is the contrast's delay at the attempt, for an exponential
	// curve, and Ratio the exponential's over it, e.g. "3.2x".
	Linear *struct {
		Text  string   `json:"text"`
		Delay Duration `json:"delay"`
		Ratio string   `json:"ratio"`
	} `json:"linear,omitempty"`
}

// clamp answers GET /api/clamp?policy=P&attempt=N&key=K: the raw and the
// clamped delay of policy P's curve at attempt N, 1..math.MaxInt.
func (s *Server) clamp(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	policy := v.Get("policy")
	if strings.TrimSpace(policy) == "" {
		writeError(w, http.StatusBadRequest, "missing policy, want one such as exponential(100ms, 10s)")
		return
	}
	attempt, err := strconv.Atoi(v.Get("attempt"))
	if err != nil || attempt < 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("attempt %q is not an attempt, want a whole number 1..%d", v.Get("attempt"), math.MaxInt))
		return
	}
	c, err := s.model.Curve(Query{Policy: policy, From: time.Now(), HerdJobs: 1, HerdAttempt: 1, HerdBuckets: 1})
	if writeCurveError(w, err) {
		return
	}
	f, inner := formOf(c.Policy), curveOf(c.Policy)
	if f == nil || (f.Curve != "exponential" && f.Curve != "linear") {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("%s has no cap to clamp a raw value to: the clamp view is for exponential and linear curves (optionally in one jitter wrapper)", c.Text))
		return
	}
	base, capNS := mustNS(f.Base), mustNS(f.Cap)
	clamped := backoff.Delay(inner, attempt, backoff.Source{})
	ans := clampAnswer{
		Policy: c.Text, Curve: f.Curve, Attempt: strconv.Itoa(attempt), Key: v.Get("key"),
		Cap:     *f.Cap,
		Clamped: NewDuration(clamped, clamped.String()), ClampedMS: msText(big.NewInt(int64(clamped))),
	}
	var raw *big.Int // nil: too long to write out
	var bits string
	switch f.Curve {
	case "exponential":
		ans.Formula = fmt.Sprintf("%s × 2^%d", f.Base.Text, uint(attempt)-1)
		shift := uint(attempt) - 1
		if shift <= maxExactShift {
			raw = new(big.Int).Lsh(big.NewInt(base), shift)
		} else {
			// base × 2^shift has base's binary digits and shift more:
			// counted in uint64, which holds any int's shift and 63.
			bits = strconv.FormatUint(uint64(bitLen(base))+uint64(shift), 10)
		}
		// The first attempt whose doubling reaches the cap: at most 63
		// doublings of a positive base.
		first, b := 1, big.NewInt(base)
		for b.Cmp(big.NewInt(capNS)) < 0 {
			b.Lsh(b, 1)
			first++
		}
		ans.FirstAtCap = strconv.Itoa(first)
		lin := backoff.Must(backoff.Parse(contrastOf(f)))
		ld := backoff.Delay(lin, attempt, backoff.Source{})
		ans.Linear = &struct {
			Text  string   `json:"text"`
			Delay Duration `json:"delay"`
			Ratio string   `json:"ratio"`
		}{lin.String(), NewDuration(ld, ld.String()), strconv.FormatFloat(float64(clamped)/float64(ld), 'g', 3, 64) + "x"}
	case "linear":
		step := mustNS(f.Step)
		ans.Formula = fmt.Sprintf("%s + %s × %d", f.Base.Text, f.Step.Text, uint(attempt)-1)
		raw = new(big.Int).Mul(big.NewInt(step), new(big.Int).SetUint64(uint64(attempt)-1))
		raw.Add(raw, big.NewInt(base))
		switch {
		case capNS <= base:
			ans.FirstAtCap = "1"
		case step > 0:
			// The first n with base + step*(n-1) >= cap.
			ans.FirstAtCap = strconv.FormatInt((capNS-base+step-1)/step+1, 10)
		}
	}
	ans.Raw = rawOf(raw, bits)
	ans.AtCap = raw == nil || raw.Cmp(big.NewInt(capNS)) >= 0
	if f.Jitter != "none" {
		jd := backoff.Delay(c.Policy, attempt, keyed(ans.Key))
		d := NewDuration(jd, jd.String())
		ans.Jittered = &d
	}
	writeJSON(w, http.StatusOK, ans)
}

// keyed is the jitter source of a job key, "" for unkeyed.
func keyed(key string) backoff.Source {
	if key == "" {
		return backoff.Source{}
	}
	return backoff.Key(key)
}

// rawOf describes a raw value: raw exactly, or, when raw is nil, a number
// of bits binary digits.
func rawOf(raw *big.Int, bits string) rawValue {
	if raw == nil {
		return rawValue{Bits: bits, Text: "overflows int64: a number of " + group(bits) + " binary digits (too long to write out)"}
	}
	rv := rawValue{NS: raw.String(), MS: msText(raw), FitsInt64: raw.IsInt64(), Bits: strconv.Itoa(raw.BitLen())}
	rv.Text = rv.MS + " ms"
	if !rv.FitsInt64 {
		rv.Text += " (overflows int64: " + group(rv.Bits) + " binary digits)"
	}
	return rv
}

// msText writes ns nanoseconds as exact milliseconds, grouped:
// "52,428,800", "0.5".
func msText(ns *big.Int) string {
	q, r := new(big.Int).QuoRem(ns, big.NewInt(int64(time.Millisecond)), new(big.Int))
	out := group(q.String())
	if r.Sign() != 0 {
		out += "." + strings.TrimRight(fmt.Sprintf("%06d", r.Int64()), "0")
	}
	return out
}

// group puts a comma between each three digits of a decimal number.
func group(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	head := len(digits) % 3
	if head == 0 {
		head = 3
	}
	b.WriteString(digits[:head])
	for i := head; i < len(digits); i += 3 {
		b.WriteByte(',')
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}

// bitLen is the length of a positive n in binary digits.
func bitLen(n int64) int { return big.NewInt(n).BitLen() }

// mustNS reads a Form's duration in nanoseconds (0 for nil).
func mustNS(d *Duration) int64 {
	if d == nil {
		return 0
	}
	ns, _ := strconv.ParseInt(d.NS, 10, 64)
	return ns
}
