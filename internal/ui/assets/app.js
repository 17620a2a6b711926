// rebound ui: the page's behaviour, hand-written, no dependencies. Every
// number shown comes from the server's JSON (rebound's Go core); this file
// only asks, draws and lays out. Axis tick labels are the one thing it
// formats itself.
"use strict";

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const TOKEN = $('meta[name="rebound-token"]').content;

  // ---- element helpers ----

  const { h, s, num } = window.reboundDOM;

  // ---- durations ----

  const NS = { ns: 1, us: 1e3, "µs": 1e3, "μs": 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

  // parseDur reads Go's duration syntax into nanoseconds (NaN if it is not
  // one). It only positions sliders; the server decides what is valid.
  function parseDur(text) {
    const str = String(text).trim();
    if (str === "0") return 0;
    let i = 0;
    let sign = 1;
    if (str[0] === "-" || str[0] === "+") { sign = str[0] === "-" ? -1 : 1; i = 1; }
    if (i >= str.length) return NaN;
    const re = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
    re.lastIndex = i;
    let total = 0;
    while (re.lastIndex < str.length) {
      const m = re.exec(str);
      if (!m) return NaN;
      total += parseFloat(m[1]) * NS[m[2]];
    }
    return sign * total;
  }

  const MS = 1e6;
  const SEC = 1e9;
  const LADDER = [
    [1 * MS, "1ms"], [2 * MS, "2ms"], [5 * MS, "5ms"], [10 * MS, "10ms"], [20 * MS, "20ms"], [25 * MS, "25ms"],
    [50 * MS, "50ms"], [75 * MS, "75ms"], [100 * MS, "100ms"], [150 * MS, "150ms"], [200 * MS, "200ms"],
    [250 * MS, "250ms"], [300 * MS, "300ms"], [400 * MS, "400ms"], [500 * MS, "500ms"], [750 * MS, "750ms"],
    [1 * SEC, "1s"], [1.5 * SEC, "1.5s"], [2 * SEC, "2s"], [3 * SEC, "3s"], [5 * SEC, "5s"], [10 * SEC, "10s"],
    [15 * SEC, "15s"], [20 * SEC, "20s"], [30 * SEC, "30s"], [45 * SEC, "45s"], [60 * SEC, "1m"], [120 * SEC, "2m"],
    [300 * SEC, "5m"], [600 * SEC, "10m"], [900 * SEC, "15m"], [1800 * SEC, "30m"], [3600 * SEC, "1h"],
    [7200 * SEC, "2h"], [21600 * SEC, "6h"], [43200 * SEC, "12h"], [86400 * SEC, "24h"],
  ];
  const LADDER_STEP = [[0, "0s"], ...LADDER];

  // nearest returns the ladder index closest to ns on a log scale.
  function nearest(ladder, ns) {
    if (!(ns > 0)) return 0;
    let best = 0;
    let bestD = Infinity;
    ladder.forEach(([v], i) => {
      const d = v > 0 ? Math.abs(Math.log(v) - Math.log(ns)) : Infinity;
      if (d < bestD) { bestD = d; best = i; }
    });
    return best;
  }

  // Axis ticks: round steps of time, in milliseconds.
  const TICK_STEPS = (() => {
    const out = [];
    for (let e = -6; e <= 2; e++) for (const m of [1, 2, 2.5, 5]) out.push(m * 10 ** e);
    out.push(1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 900000, 1800000,
      3600000, 7200000, 10800000, 21600000, 43200000);
    for (let e = 0; e <= 6; e++) for (const m of [1, 2, 5]) out.push(m * 10 ** e * 86400000);
    return out;
  })();

  function ticks(maxMs, count) {
    if (!(maxMs > 0)) return { step: 1, top: 1 };
    const raw = maxMs / count;
    const step = TICK_STEPS.find((t) => t >= raw) || raw;
    return { step, top: Math.ceil(maxMs / step - 1e-9) * step };
  }

  function countTicks(max, count) {
    if (max <= 0) return { step: 1, top: 1 };
    const raw = max / count;
    const p = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((t) => t >= raw);
    const rounded = Math.max(1, step >= 1 ? Math.round(step) : step);
    return { step: rounded, top: Math.ceil(max / rounded) * rounded };
  }

  function axisLabel(ms) {
    if (ms === 0) return "0";
    const p = (x) => String(+x.toPrecision(3));
    if (ms < 1) return p(ms * 1000) + "µs";
    if (ms < 1000) return p(ms) + "ms";
    const sec = ms / 1000;
    if (sec < 60) return p(sec) + "s";
    if (sec < 3600) return p(sec / 60) + "m";
    if (sec < 172800) return p(sec / 3600) + "h";
    return p(sec / 86400) + "d";
  }

  // ---- state ----

  const params = new URLSearchParams(location.search);
  const state = {
    curve: "exponential",
    jitter: "full",
    fraction: "0.2",
    base: "100ms",
    step: "100ms",
    cap: "2s",
    attempts: 6,
    key: "job-42",
    herdAttempt: 3,
    use: "go",
  };
  let policyText = "";
  let last = null; // the last good answer
  const FROM = rfc3339(new Date());

  function rfc3339(d) {
    const pad = (n, w = 2) => String(Math.abs(n)).padStart(w, "0");
    const off = -d.getTimezoneOffset();
    const zone = off === 0 ? "Z" : (off > 0 ? "+" : "-") + pad(Math.trunc(off / 60)) + ":" + pad(off % 60);
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}${zone}`;
  }

  function textFromControls() {
    let leaf;
    switch (state.curve) {
      case "fixed": leaf = `fixed(${state.base})`; break;
      case "linear": leaf = `linear(${state.base}, ${state.step}, ${state.cap})`; break;
      default: leaf = `${state.curve}(${state.base}, ${state.cap})`;
    }
    switch (state.jitter) {
      case "full": return `jitter(${leaf})`;
      case "equal": return `equal(${leaf})`;
      case "proportional": return `proportional(${state.fraction}, ${leaf})`;
      default: return leaf;
    }
  }

  // ---- controls ----

  const durFields = {
    base: { range: $("#base-range"), text: $("#base-text"), ladder: LADDER },
    step: { range: $("#step-range"), text: $("#step-text"), ladder: LADDER_STEP },
    cap: { range: $("#cap-range"), text: $("#cap-text"), ladder: LADDER },
  };
  const attemptsRange = $("#attempts-range");
  const attemptsText = $("#attempts-text");
  const fractionRange = $("#fraction-range");
  const fractionText = $("#fraction-text");
  const keyInput = $("#key");
  const policyInput = $("#policy");
  const herdAttemptInput = $("#herd-attempt");

  function paintRange(r) {
    const lo = +r.min || 0;
    const hi = +r.max || 100;
    r.style.setProperty("--fill", `${((+r.value - lo) / (hi - lo || 1)) * 100}%`);
  }

  function setDurField(name, text) {
    const f = durFields[name];
    const idx = nearest(f.ladder, parseDur(text));
    f.range.value = String(idx);
    f.range.setAttribute("aria-valuetext", text);
    if (document.activeElement !== f.text) f.text.value = text;
    paintRange(f.range);
  }

  function syncControls() {
    $(`#curve-${state.curve}`).checked = true;
    $(`#jitter-${state.jitter}`).checked = true;
    for (const name of Object.keys(durFields)) setDurField(name, state[name]);
    $("#field-step").hidden = state.curve !== "linear";
    $("#field-cap").hidden = state.curve === "fixed";
    $("#field-fraction").hidden = state.jitter !== "proportional";
    $("#base-label").textContent = state.curve === "fixed" ? "Delay" : "Base";
    $("#base-hint").textContent = state.curve === "fixed" ? "every retry waits this" :
      state.curve === "decorrelated" ? "the shortest wait" : "the first retry waits this";
    fractionRange.value = String(Math.min(20, Math.max(1, Math.round(parseFloat(state.fraction) * 20) || 4)));
    fractionRange.setAttribute("aria-valuetext", state.fraction);
    if (document.activeElement !== fractionText) fractionText.value = state.fraction;
    paintRange(fractionRange);
    attemptsRange.value = String(Math.min(20, state.attempts));
    attemptsRange.setAttribute("aria-valuetext", String(state.attempts));
    if (document.activeElement !== attemptsText) attemptsText.value = String(state.attempts);
    paintRange(attemptsRange);
    if (document.activeElement !== keyInput) keyInput.value = state.key;
    if (document.activeElement !== herdAttemptInput) herdAttemptInput.value = String(state.herdAttempt);
    $("#formula").textContent = {
      fixed: "delay(n) = delay",
      exponential: "delay(n) = min(base × 2^(n−1), cap)",
      linear: "delay(n) = min(base + step × (n−1), cap)",
      decorrelated: "delay(n) = min(cap, uniform(base, 3 × previous))",
    }[state.curve] + {
      none: "",
      full: ", then uniform in [0, delay]",
      equal: ", then delay/2 + uniform[0, delay/2]",
      proportional: `, then ± ${state.fraction}`,
    }[state.jitter];
  }

  // fromControls recomputes after a control moved.
  function fromControls() {
    syncControls();
    policyText = textFromControls();
    if (document.activeElement !== policyInput) policyInput.value = policyText;
    compute();
  }

  for (const [name, f] of Object.entries(durFields)) {
    f.range.min = "0";
    f.range.max = String(f.ladder.length - 1);
    f.range.step = "1";
    f.range.addEventListener("input", () => {
      const [ns, text] = f.ladder[+f.range.value];
      state[name] = text;
      // Keep the curve valid while sliding: the cap never below the base.
      if (name === "base" && parseDur(state.cap) < ns) state.cap = text;
      if (name === "cap" && parseDur(state.base) > ns) state.base = text;
      fromControls();
    });
    f.text.addEventListener("input", () => {
      state[name] = f.text.value.trim() || "0s";
      fromControls();
    });
    f.text.addEventListener("blur", () => syncControls());
  }
  $$('input[name="curve"]').forEach((r) => r.addEventListener("change", () => { state.curve = r.value; fromControls(); }));
  $$('input[name="jitter"]').forEach((r) => r.addEventListener("change", () => { state.jitter = r.value; fromControls(); }));
  fractionRange.addEventListener("input", () => {
    state.fraction = String(+fractionRange.value / 20);
    fromControls();
  });
  fractionText.addEventListener("input", () => { state.fraction = fractionText.value.trim() || "0"; fromControls(); });
  attemptsRange.addEventListener("input", () => { state.attempts = +attemptsRange.value; fromControls(); });
  // validNumber marks a number box invalid, and returns its value when it
  // lies in [lo, hi].
  function validNumber(input, lo, hi) {
    const n = Number(input.value);
    const ok = Number.isInteger(n) && n >= lo && n <= hi;
    if (ok) input.removeAttribute("aria-invalid");
    else input.setAttribute("aria-invalid", "true");
    return ok ? n : null;
  }
  attemptsText.addEventListener("input", () => {
    const n = validNumber(attemptsText, 1, 1001);
    if (n !== null) { state.attempts = n; syncControls(); compute(); }
  });
  keyInput.addEventListener("input", () => { state.key = keyInput.value; compute(); });
  herdAttemptInput.addEventListener("input", () => {
    const n = validNumber(herdAttemptInput, 1, 2147483647);
    if (n !== null) { state.herdAttempt = n; compute(); }
  });
  policyInput.addEventListener("input", () => { policyText = policyInput.value; compute(); });
  policyInput.addEventListener("blur", () => { if (last && !policyErrorShown) policyInput.value = last.text; });
  $("#controls").addEventListener("submit", (e) => e.preventDefault());

  // ---- talking to the server ----

  let seq = 0;
  let inflight = null;
  let policyErrorShown = false;

  async function compute() {
    const my = ++seq;
    if (inflight) inflight.abort();
    inflight = new AbortController();
    const q = new URLSearchParams({
      policy: policyText,
      attempts: String(state.attempts),
      key: state.key,
      from: FROM,
      herdAttempt: String(state.herdAttempt),
    });
    let res;
    let body;
    try {
      res = await fetch("/api/curve?" + q, { signal: inflight.signal, headers: { Accept: "application/json" } });
      body = await res.json();
    } catch (err) {
      if (err.name === "AbortError") return;
      if (my === seq) showProblem("The server does not answer: " + err.message + ". Is rebound ui still running?");
      return;
    }
    if (my !== seq) return;
    if (res.status === 422 && body.policyError) {
      showPolicyError(body.policyError);
      return;
    }
    if (!res.ok) {
      showProblem(body.error || `the server answered ${res.status}`);
      return;
    }
    clearPolicyError();
    render(body);
  }

  function showPolicyError(pe) {
    policyErrorShown = true;
    const box = $("#policy-error");
    box.replaceChildren(h("span", { class: "msg", text: pe.message }), pe.caret.replace(/^ {4}/gm, ""));
    box.dataset.input = pe.input;
    box.dataset.offset = String(pe.offset);
    box.dataset.column = String(pe.column);
    box.hidden = false;
    policyInput.setAttribute("aria-invalid", "true");
    document.body.classList.add("stale");
  }

  function showProblem(msg) {
    policyErrorShown = true;
    const box = $("#policy-error");
    box.replaceChildren(h("span", { class: "msg", text: msg }));
    delete box.dataset.offset;
    delete box.dataset.input;
    box.hidden = false;
  }

  function clearPolicyError() {
    policyErrorShown = false;
    const box = $("#policy-error");
    box.hidden = true;
    box.replaceChildren();
    policyInput.removeAttribute("aria-invalid");
    document.body.classList.remove("stale");
  }

  // ---- rendering ----

  function render(ans) {
    last = ans;
    if (document.activeElement !== policyInput) policyInput.value = ans.text;
    const note = $("#form-note");
    if (ans.form) {
      const f = ans.form;
      state.curve = f.curve;
      state.jitter = f.jitter;
      if (f.jitter === "proportional") state.fraction = String(f.fraction);
      for (const name of ["base", "step", "cap"]) {
        const d = f[name];
        if (d && parseDur(state[name]) !== +d.ns) state[name] = d.text;
      }
      note.hidden = true;
    } else {
      note.textContent = "This policy nests wrappers the controls cannot show: the charts follow the text. Moving a control replaces it.";
      note.hidden = false;
    }
    syncControls();
    renderUse(ans);
    renderReadout(ans);
    renderTimeline(ans);
    renderTable(ans);
    renderBars(ans);
    renderHerd(ans);
    computeClamp();
    const url = new URLSearchParams({ policy: ans.text, attempts: String(state.attempts), key: state.key, herdAttempt: String(state.herdAttempt) });
    history.replaceState(null, "", "?" + url + location.hash);
  }

  function goString(str) { return JSON.stringify(str); }
  function shQuote(str) { return "'" + str.replace(/'/g, `'\\''`) + "'"; }

  function renderUse(ans) {
    const code = {
      go: `policy := backoff.Must(backoff.Parse(${goString(ans.text)}))\nrule := backoff.Must(backoff.NewRule(policy, ${ans.maxAttempts}))`,
      flag: `-retry-policy=${shQuote(ans.text)}`,
      env: `RETRY_POLICY=${shQuote(ans.text)}`,
    }[state.use];
    const note = {
      go: ans.maxAttempts === 1 ? "MaxAttempts 1: one run and no retry. Hand the rule to an adapter." :
        `MaxAttempts ${ans.maxAttempts}: one run and up to ${ans.maxAttempts - 1} ${ans.maxAttempts === 2 ? "retry" : "retries"}. Hand the rule to an adapter.`,
      flag: 'A backoff.Spec is a flag.Value: var p backoff.Spec; flag.Var(&p, "retry-policy", "retry policy").',
      env: 'Read it with backoff.Parse(os.Getenv("RETRY_POLICY")); a backoff.Spec also unmarshals from JSON.',
    }[state.use];
    $("#use-code").textContent = code;
    $("#use-note").textContent = note;
  }

  $$(".tabs [role=tab]").forEach((tab, i, tabs) => {
    tab.addEventListener("click", () => selectTab(tab, tabs));
    tab.addEventListener("keydown", (e) => {
      const d = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      if (!d) return;
      e.preventDefault();
      const next = tabs[(i + d + tabs.length) % tabs.length];
      next.focus();
      selectTab(next, tabs);
    });
  });
  function selectTab(tab, tabs) {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
    }
    $("#use-box").setAttribute("aria-labelledby", tab.id);
    state.use = tab.dataset.use;
    if (last) renderUse(last);
  }

  function plural(n, one, many) { return `${n} ${n === 1 ? one : many}`; }

  function renderReadout(ans, focus) {
    const plan = ans.plan;
    const dl = $("#readout");
    const item = (dt, dd, small) => h("div", {}, h("dt", { text: dt }), h("dd", {}, dd, small ? h("small", { text: " " + small }) : null));
    if (!plan.length) {
      dl.replaceChildren(item("retries", "none", "MaxAttempts 1 never retries"));
      $("#timeline-sub").textContent = "";
      return;
    }
    const sel = focus || plan[0];
    const lastStep = plan[plan.length - 1];
    dl.replaceChildren(
      item("retries", String(plan.length), `of MaxAttempts ${ans.maxAttempts}`),
      item(focus ? `retry ${sel.attempt} fires at` : "first retry fires at", "+" + sel.total.text,
        sel.attempt === 1 ? "" : `after waiting ${sel.delay.text}`),
      item("last retry fires at", "+" + lastStep.total.text, "total wall-clock"),
      item("longest possible delay", ans.max.text, "never exceeded, jitter included"),
    );
    $("#timeline-sub").textContent = ans.random ?
      (ans.key ? `jitter keyed by job "${ans.key}": the schedule this job follows on every engine` :
        "no job key: fresh randomness on every change") :
      "no jitter: every job follows this schedule";
  }

  // highlight marks retry n in the timeline, the bars and the table.
  function highlight(n) {
    for (const el of $$("[data-attempt]")) el.classList.toggle("hl", +el.dataset.attempt === n);
    if (last) renderReadout(last, n ? last.plan[n - 1] : null);
  }

  function hoverable(el, n) {
    el.addEventListener("pointerenter", () => highlight(n));
    el.addEventListener("pointerleave", () => highlight(0));
    return el;
  }

  function width(el) { return Math.max(300, Math.floor(el.getBoundingClientRect().width)); }

  function renderTimeline(ans) {
    const box = $("#timeline");
    const plan = ans.plan;
    if (!plan.length) {
      box.replaceChildren(h("p", { class: "note", text: "With MaxAttempts 1 the first failure is final: there is nothing to plot." }));
      return;
    }
    const W = width(box);
    const H = 250;
    const m = { l: 52, r: 24, t: 30, b: 34 };
    const iw = W - m.l - m.r;
    const ih = H - m.t - m.b;
    const lastStep = plan[plan.length - 1];
    const xt = ticks(lastStep.total.ms, Math.max(3, Math.floor(iw / 110)));
    const tallest = Math.max(...plan.map((p) => p.delay.ms));
    const showCap = ans.max.ms > 0 && ans.max.ms <= tallest * 1.6;
    const yt = ticks(Math.max(tallest, showCap ? ans.max.ms : 0), 4);
    const x = (ms) => m.l + (xt.top ? (ms / xt.top) * iw : 0);
    const y = (ms) => m.t + ih - (yt.top ? (ms / yt.top) * ih : 0);
    const g = s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
      "aria-label": `Timeline: ${plan.length} retries after a failure at t = 0, the last at +${lastStep.total.text}` });

    for (let v = 0; v <= yt.top + 1e-9; v += yt.step) {
      g.append(s("line", { class: v === 0 ? "axis" : "grid", x1: m.l, x2: W - m.r, y1: num(y(v)), y2: num(y(v)) }),
        s("text", { x: m.l - 8, y: num(y(v) + 4), "text-anchor": "end", text: axisLabel(v) }));
    }
    for (let v = 0; v <= xt.top + 1e-9; v += xt.step) {
      g.append(s("line", { class: "axis", x1: num(x(v)), x2: num(x(v)), y1: m.t + ih, y2: m.t + ih + 5 }),
        s("text", { x: num(x(v)), y: H - m.b + 20, "text-anchor": "middle", text: v === 0 ? "t = 0" : "+" + axisLabel(v) }));
    }
    g.append(s("text", { x: 12, y: m.t - 14, text: "delay" }));
    if (showCap) {
      g.append(s("line", { class: "cap", x1: m.l, x2: W - m.r, y1: num(y(ans.max.ms)), y2: num(y(ans.max.ms)) }),
        s("text", { class: "cap-label", x: W - m.r, y: num(y(ans.max.ms) - 5), "text-anchor": "end", text: `cap ${ans.max.text}` }));
    }

    let prev = 0;
    let lastLabel = -Infinity;
    plan.forEach((p, i) => {
      const x0 = x(prev);
      const x1 = x(p.total.ms);
      const y1 = y(p.delay.ms);
      const step = s("g", { class: "step", "data-attempt": p.attempt, "data-fire-ns": p.total.ns, "data-delay-ns": p.delay.ns },
        s("title", { text: `attempt ${p.attempt} failed → retry waits ${p.delay.text}, fires at +${p.total.text} (${p.firesAt})` }),
        s("rect", { class: "wait", x: num(x0 + 0.5), y: num(y1), width: num(Math.max(0, x1 - x0 - 1)), height: num(m.t + ih - y1) }),
        s("line", { class: "wait-top", x1: num(x0 + 0.5), x2: num(Math.max(x0 + 0.5, x1 - 0.5)), y1: num(y1), y2: num(y1) }),
        s("line", { class: "fire-stem", x1: num(x1), x2: num(x1), y1: num(y1), y2: m.t + ih }),
        s("circle", { class: "fire", cx: num(x1), cy: m.t + ih, r: 4.5 }));
      if (x1 - lastLabel >= 22 || i === plan.length - 1) {
        step.append(s("text", { class: "fire-label", x: num(x1), y: num(y1 - 7), "text-anchor": i === plan.length - 1 && x1 > W - m.r - 20 ? "end" : "middle", text: String(p.attempt) }));
        lastLabel = x1;
      }
      g.append(hoverable(step, p.attempt));
      prev = p.total.ms;
    });
    g.append(s("circle", { class: "fail", cx: m.l, cy: m.t + ih, r: 5.5 }, s("title", { text: "run 1 fails at t = 0" })));
    box.replaceChildren(g);
  }

  function renderTable(ans) {
    const body = $("#plan-table tbody");
    body.replaceChildren(...ans.plan.map((p) => hoverable(
      h("tr", { "data-attempt": p.attempt },
        h("td", { class: "n", text: String(p.attempt) }),
        h("td", { text: p.delay.text }),
        h("td", { text: p.total.text }),
        h("td", { class: "fires", text: p.firesAt })), p.attempt)));
    if (!ans.plan.length) body.append(h("tr", {}, h("td", { colspan: 4, class: "n", text: "no retries: MaxAttempts 1" })));
    $("#schedule-sub").textContent = `first failure at ${ans.from}`;
    $("#plan-cmd").textContent = ans.commands.plan || "(MaxAttempts 1: nothing to plan)";
  }

  function renderBars(ans) {
    const box = $("#bars");
    const plan = ans.plan;
    if (!plan.length) { box.replaceChildren(); $("#bars-legend").replaceChildren(); return; }
    const W = width(box);
    const H = 210;
    const m = { l: 48, r: 10, t: 14, b: 28 };
    const iw = W - m.l - m.r;
    const ih = H - m.t - m.b;
    const steady = ans.steady;
    const linear = ans.contrast ? ans.contrast.plan : null;
    const tallest = Math.max(...plan.map((p) => p.delay.ms), ...(steady || []).map((p) => p.delay.ms), ...(linear || []).map((p) => p.delay.ms));
    const showCap = ans.max.ms > 0 && ans.max.ms <= tallest * 1.6;
    const yt = ticks(Math.max(tallest, showCap ? ans.max.ms : 0), 4);
    const y = (ms) => m.t + ih - (ms / yt.top) * ih;
    const band = iw / plan.length;
    const bw = Math.max(1, Math.min(36, band * 0.64));
    const g = s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "Delay by attempt" });
    for (let v = 0; v <= yt.top + 1e-9; v += yt.step) {
      g.append(s("line", { class: v === 0 ? "axis" : "grid", x1: m.l, x2: W - m.r, y1: num(y(v)), y2: num(y(v)) }),
        s("text", { x: m.l - 6, y: num(y(v) + 4), "text-anchor": "end", text: axisLabel(v) }));
    }
    if (showCap) g.append(s("line", { class: "cap", x1: m.l, x2: W - m.r, y1: num(y(ans.max.ms)), y2: num(y(ans.max.ms)) }));
    const every = Math.ceil(plan.length / Math.max(1, Math.floor(iw / 26)));
    plan.forEach((p, i) => {
      const cx = m.l + band * (i + 0.5);
      const grp = s("g", { "data-attempt": p.attempt },
        s("title", { text: `attempt ${p.attempt}: ${p.delay.text}` + (steady ? ` (without jitter ${steady[i].delay.text})` : "") +
          (linear ? `; linear ${linear[i].delay.text}` : "") }),
        s("rect", { class: "hit", x: num(cx - band / 2), y: m.t, width: num(band), height: ih, fill: "transparent" }),
        s("rect", { class: "bar", x: num(cx - bw / 2), y: num(y(p.delay.ms)), width: num(bw), height: num(m.t + ih - y(p.delay.ms)), rx: bw > 6 ? 2 : 0 }));
      if (steady) {
        grp.append(s("rect", { class: "ghost", x: num(cx - bw / 2 - 0.5), y: num(y(steady[i].delay.ms)), width: num(bw + 1), height: num(m.t + ih - y(steady[i].delay.ms)) }));
      }
      if (i % every === 0) grp.append(s("text", { x: num(cx), y: H - m.b + 17, "text-anchor": "middle", text: String(p.attempt) }));
      grp.addEventListener("click", () => chooseClampAttempt(p.attempt));
      g.append(hoverable(grp, p.attempt));
    });
    // The linear schedule of the same base, dashed, for contrast: it
    // grows by a fixed step where the exponential doubles.
    if (linear) {
      const pts = linear.map((p, i) => `${num(m.l + band * (i + 0.5))},${num(y(p.delay.ms))}`).join(" ");
      const line = s("g", { class: "contrast", "data-policy": ans.contrast.text },
        s("title", { text: `${ans.contrast.text}: ${linear.map((p) => p.delay.text).join(", ")}` }),
        s("polyline", { class: "linear", points: pts }));
      linear.forEach((p, i) => line.append(s("circle", { class: "linear-dot", "data-attempt": p.attempt, "data-delay-ns": p.delay.ns, cx: num(m.l + band * (i + 0.5)), cy: num(y(p.delay.ms)), r: 2.5 })));
      g.append(line);
    }
    box.replaceChildren(g);
    const legend = [h("span", {}, h("i", { class: "swatch accent" }), ans.random && ans.key ? `job "${ans.key}"` : "delay")];
    if (steady) legend.push(h("span", {}, h("i", { class: "swatch ghost" }), "without jitter"));
    if (linear) {
      legend.push(h("span", { "data-legend": "linear" }, h("i", { class: "swatch linear" }), `${ans.contrast.text}: linear, the same base, for contrast`));
      if (ans.contrast.verdict) legend.push(h("span", { "data-legend": "verdict" }, ans.contrast.verdict));
    }
    if (showCap) legend.push(h("span", {}, h("i", { class: "swatch cap" }), `cap ${ans.max.text}`));
    $("#bars-legend").replaceChildren(...legend);
  }

  function renderHerd(ans) {
    const herd = ans.herd;
    $("#herd-heading").textContent = `${herd.jobs} jobs fail together`;
    const box = $("#herd-chart");
    const W = width(box);
    const panelH = 132;
    const gap = 30;
    const m = { l: 48, r: 84, t: 22, b: 26 };
    const n = herd.series.length;
    const H = m.t + n * panelH + (n - 1) * gap + m.b;
    const iw = W - m.l - m.r;
    const buckets = herd.edges.length - 1;
    const peak = Math.max(...herd.series.map((se) => se.peak));
    const yt = countTicks(peak, 3);
    const g = s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
      "aria-label": `Where ${herd.jobs} retries land` });
    const bw = iw / buckets;
    herd.series.forEach((se, k) => {
      const top = m.t + k * (panelH + gap);
      const y = (v) => top + panelH - (v / yt.top) * panelH;
      const cls = se.role === "without jitter" ? "spike" : "spread";
      g.append(s("text", { class: "panel-title", x: m.l, y: top - 8, text: `${se.role} · ${se.policy}` }));
      for (let v = 0; v <= yt.top + 1e-9; v += yt.step) {
        g.append(s("line", { class: v === 0 ? "axis" : "grid", x1: m.l, x2: W - m.r, y1: num(y(v)), y2: num(y(v)) }),
          s("text", { x: m.l - 6, y: num(y(v) + 4), "text-anchor": "end", text: String(v) }));
      }
      const panel = s("g", { class: "herd-panel", "data-role": se.role, "data-peak": se.peak });
      se.counts.forEach((c, b) => {
        if (!c) return;
        panel.append(s("rect", { class: cls, "data-bucket": b, "data-count": c, x: num(m.l + b * bw + 0.5), y: num(y(c)), width: num(Math.max(1, bw - 1)), height: num(top + panelH - y(c)) },
          s("title", { text: `${herd.edges[b]}–${herd.edges[b + 1]}: ${c}` })));
      });
      g.append(panel);
      const my = y(herd.mean);
      g.append(s("line", { class: "mean", x1: m.l, x2: W - m.r, y1: num(my), y2: num(my) }),
        s("text", { class: "mean-label", x: W - m.r + 6, y: num(my + 4), text: `even ${herd.meanText}` }));
    });
    const every = Math.ceil(buckets / Math.max(1, Math.floor(iw / 64)));
    for (let b = 0; b <= buckets; b += every) {
      g.append(s("text", { x: num(m.l + b * bw), y: H - m.b + 18, "text-anchor": b === 0 ? "start" : "middle", text: herd.edges[b] }));
    }
    box.replaceChildren(g, h("p", { class: "note axis-note", text: `Where the retries land: time after the cohort failed, in buckets of ${herd.bucket.text}. The dashed line is an even spread, ${herd.meanText} per bucket.` }));

    const stats = herd.series.map((se) => h("div", { class: "stat", "data-role": se.role },
      h("h3", {}, h("i", { class: "swatch " + (se.role === "without jitter" ? "spike" : "accent") }), se.role),
      h("dl", {},
        h("dt", { text: "peak" }), h("dd", { text: `${se.peak} at ${se.peakWindow}` }),
        h("dt", { text: "peak / even" }), h("dd", { text: se.peakFactor }),
        h("dt", { text: "spread" }), h("dd", { text: `${se.first.text} – ${se.last.text}` }))));
    const out = [];
    if (herd.verdict) out.push(h("p", { class: "verdict", text: herd.verdict }));
    out.push(...stats);
    if (herd.note) out.push(h("p", { class: "note", text: herd.note }));
    out.push(h("p", { class: "note", text: `jobs keyed "${herd.firstKey}" … "${herd.lastKey}", as the adapters key them` }));
    $("#herd-stats").replaceChildren(...out);
    $("#herd-cmd").textContent = ans.commands.herd;
  }

  // ---- the clamp ----

  // The chosen attempt's raw value and clamped delay, as the server's Go
  // core computes them: exactly, a big number past int64, or its length
  // in binary digits for attempts whose raw value is too long to write.
  const clampInput = $("#clamp-attempt");
  let clampSeq = 0;
  function chooseClampAttempt(n) {
    clampInput.value = String(n);
    computeClamp();
  }
  async function computeClamp() {
    const out = $("#clamp-out");
    const note = $("#clamp-note");
    if (!last) return;
    const attempt = clampInput.value.trim();
    if (!/^[0-9]+$/.test(attempt)) {
      clampInput.setAttribute("aria-invalid", "true");
      note.textContent = "The attempt is a whole number, 1 or more.";
      return;
    }
    const my = ++clampSeq;
    const res = await fetch("/api/clamp?" + new URLSearchParams({ policy: last.text, attempt, key: state.key }));
    const body = await res.json().catch(() => ({}));
    if (my !== clampSeq) return;
    if (!res.ok) {
      if (res.status === 400) clampInput.setAttribute("aria-invalid", "true");
      out.replaceChildren();
      out.dataset.state = "none";
      note.textContent = body.error || (body.policyError && body.policyError.message) || `the server answered ${res.status}`;
      return;
    }
    clampInput.removeAttribute("aria-invalid");
    const item = (k, field, v, small) => [h("dt", { text: k }), h("dd", { "data-clamp": field }, v, small ? h("small", { text: " " + small }) : null)];
    const rows = [
      ...item("raw", "raw", body.raw.text, `= ${body.formula}`),
      ...item("clamped", "clamped", `${body.clampedMS} ms`, body.atCap ? `the cap, ${body.cap.text}: clamped from the raw value` : "below the cap: the raw value itself"),
    ];
    if (body.firstAtCap) rows.push(...item("at the cap from", "firstAtCap", `attempt ${body.firstAtCap}`));
    if (body.linear) rows.push(...item("linear, same base", "linear", body.linear.delay.text, `${body.linear.text}; the exponential is ${body.linear.ratio} it`));
    if (body.jittered) rows.push(...item("with jitter", "jittered", body.jittered.text, body.key ? `drawn for job "${body.key}"` : "drawn unkeyed: fresh each time"));
    out.replaceChildren(...rows);
    out.dataset.state = body.atCap ? "clamped" : "raw";
    note.textContent = `${body.policy} at attempt ${body.attempt}: delay = min(${body.formula}, ${body.cap.text}). Click a bar to choose its attempt.`;
  }
  clampInput.addEventListener("input", computeClamp);
  $("#clamp-form").addEventListener("submit", (e) => { e.preventDefault(); computeClamp(); });

  // ---- copying ----

  async function copyText(str) {
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(str);
        return true;
      }
    } catch (_) { /* fall back below */ }
    const ta = h("textarea", { readonly: true, class: "visually-hidden" });
    ta.value = str;
    document.body.append(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
    ta.remove();
    return ok;
  }

  document.addEventListener("click", async (e) => {
    const btn = e.target.closest("button[data-copy]");
    if (!btn) return;
    const src = document.getElementById(btn.dataset.copy);
    const text = "value" in src && src.tagName === "INPUT" ? src.value : src.textContent;
    const ok = await copyText(text);
    btn.dataset.copied = String(ok);
    const was = btn.textContent;
    btn.textContent = ok ? "Copied" : "Select and copy";
    setTimeout(() => { btn.textContent = was; delete btn.dataset.copied; }, 1400);
  });

  // ---- toast and confirmation ----

  let toastTimer = 0;
  function toast(msg) {
    const t = $("#toast");
    t.textContent = msg;
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, 3200);
  }

  // confirmAction asks before an action. The answer is taken from the
  // dialog's own submit and cancel events, which fire with the click or the
  // Escape key, not from its close event, which comes a task later and
  // could be taken for the next question's answer.
  const confirmDialog = $("#confirm");
  let answer = null;
  function settle(ok) {
    const r = answer;
    answer = null;
    if (r) r(ok);
  }
  $("form", confirmDialog).addEventListener("submit", (e) => settle(e.submitter?.value === "ok"));
  confirmDialog.addEventListener("cancel", () => settle(false));

  function confirmAction(title, text, ok) {
    settle(false);
    $("#confirm-title").textContent = title;
    $("#confirm-text").textContent = text;
    $("#confirm-ok").textContent = ok;
    return new Promise((resolve) => {
      answer = resolve;
      confirmDialog.showModal();
      $("#confirm-ok").focus();
    });
  }

  // ---- queues ----

  const STATES = ["waiting", "active", "delayed", "completed", "failed"];
  let skew = 0; // server clock minus this clock, ms

  function ago(ms) {
    const d = Math.round((Date.now() + skew - ms) / 1000);
    if (d < -1) return "in " + span(-d);
    if (d <= 1) return "now";
    return span(d) + " ago";
  }
  function span(sec) {
    if (sec < 60) return sec + "s";
    if (sec < 3600) return Math.floor(sec / 60) + "m " + (sec % 60) + "s";
    if (sec < 86400) return Math.floor(sec / 3600) + "h " + Math.floor((sec % 3600) / 60) + "m";
    return Math.floor(sec / 86400) + "d " + Math.floor((sec % 86400) / 3600) + "h";
  }
  function clock(ms) { return new Date(ms).toLocaleString(); }

  // Queues and jobs are named to the server by their keys: their exact
  // bytes in base64url (keys.js).
  const { keyOf, unescaped, typedKeys, jobHref } = window.reboundKeys;

  async function post(body) {
    const res = await fetch("/api/action", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Rebound-Token": TOKEN },
      body: JSON.stringify(body),
    });
    const out = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(out.error || `the server answered ${res.status}`);
    return out;
  }

  const ACTIONS = {
    retry: { label: "Retry", title: "Retry this job?", text: (id) => `Job ${id} goes back to the wait list and runs again with its attempts counted afresh.`, done: "sent back to run" },
    run: { label: "Run now", title: "Run this job now?", text: (id) => `Job ${id} skips the rest of its delay and becomes due at once.`, done: "due now" },
    delete: { label: "Delete", title: "Delete this job?", text: (id) => `Job ${id} and its record are removed from the queue. This cannot be undone.`, done: "deleted", danger: true },
  };

  // focusMark notes where the focus is, when it is in scope (a job list,
  // or the box that shows a looked-up job), so that restoreFocus can put
  // it back after scope was redrawn: on the same element if it is still
  // there, else on the same action of the row that took the place of its
  // own, else on scope itself. It only takes the focus back from the
  // page's body, where the browser leaves it when the focused element
  // goes: never from wherever the user moved it meanwhile.
  function focusMark(scope, el = document.activeElement) {
    if (!el || !scope || !scope.contains(el) || el === scope) return null;
    const row = el.closest("li");
    const rows = [...scope.children];
    return { scope, el, action: el.dataset.action, index: row ? rows.indexOf(row) : 0 };
  }
  function restoreFocus(mark) {
    if (!mark) return;
    const active = document.activeElement;
    if (active && active !== document.body && active !== mark.el) return;
    if (mark.el.isConnected) {
      if (active !== mark.el) mark.el.focus({ preventScroll: true });
      return;
    }
    const rows = [...mark.scope.children];
    const row = rows[Math.min(mark.index, rows.length - 1)];
    const target = (row && (row.querySelector(`button[data-action="${mark.action}"]`) || row.querySelector("button"))) || mark.scope;
    target.focus({ preventScroll: true });
  }

  async function act(queue, action, job, after) {
    const from = document.activeElement;
    const mark = focusMark(from && from.closest && from.closest("ul.joblist, .lookup-result"), from);
    const a = ACTIONS[action];
    const id = job.idText;
    if (!(await confirmAction(a.title, a.text(id), a.label))) return;
    try {
      await post({ queueKey: queue.key, action, idKey: job.key });
      toast(`${queue.text}: job ${id} ${a.done}`);
    } catch (err) {
      toast(`${a.label} failed: ${err.message}`);
    }
    if (after) await after();
    restoreFocus(mark);
  }

  // jobPageHref is the address of a job's page, its times ahead drawn
  // with the rule the curve view shows.
  function jobPageHref(queue, key) {
    return jobHref(queue.key, key, last ? last.text : policyText, state.attempts);
  }

  function actionButtons(queue, job, after) {
    const allowed = { failed: ["retry", "delete"], delayed: ["run", "delete"], waiting: ["delete"], completed: ["delete"] }[job.state] || [];
    return allowed.filter((a) => queue.features.includes(a)).map((a) => h("button", {
      type: "button", class: "small" + (ACTIONS[a].danger ? " danger" : ""), "data-action": a,
      onclick: () => act(queue, a, job, after), text: ACTIONS[a].label,
    }));
  }

  function jobCard(queue, job, after) {
    const rows = [];
    const add = (k, v) => { if (v !== undefined && v !== null && v !== "") rows.push(h("dt", { text: k }), h("dd", {}, v)); };
    add("attempts", job.maxAttempts ? `${job.attempts} of ${job.maxAttempts}` : `${job.attempts} (the worker's rule caps them)`);
    if (job.nextFireAt) add("fires", `${ago(job.nextFireAt)} · ${clock(job.nextFireAt)}`);
    if (job.leaseDeadline) add("lease until", clock(job.leaseDeadline));
    if (job.lastError) add("last error", h("pre", { class: "err", text: job.lastError }));
    if (job.createdAt) add("enqueued", `${clock(job.createdAt)} (${ago(job.createdAt)})`);
    if (job.finishedAt) add("finished", `${clock(job.finishedAt)} (${ago(job.finishedAt)})`);
    add("payload", job.payloadBinary ? `${job.payloadSize} bytes, binary` :
      job.payloadSize ? h("pre", { text: job.payload + (job.payload.length < job.payloadSize ? " …" : "") }) : "empty");
    const meta = Object.entries(job.metadata || {});
    if (meta.length) add("metadata", meta.map(([k, v]) => `${k}=${v}`).join("  "));
    const buttons = actionButtons(queue, job, after);
    return h("div", { class: "job", "data-job": job.id, "data-key": job.key },
      h("div", { class: "job-head" }, h("code", { text: job.idText }), h("span", { class: `state s-${job.state}`, text: job.state }),
        job.name ? h("span", { class: "muted", text: job.name }) : null,
        h("a", { class: "open-job", "data-open": "job", href: jobPageHref(queue, job.key), text: "Open the job's page →" })),
      h("dl", {}, rows),
      buttons.length ? h("div", { class: "actions" }, buttons) : null);
  }

  // ---- failure groups and bulk actions ----

  const BULK = {
    retry: { label: "Retry", doing: "Retrying", done: "retried", text: "go back to the wait list and run again with their attempts counted afresh." },
    delete: { label: "Delete", doing: "Deleting", done: "deleted", text: "and their records are removed from the queue. This cannot be undone.", danger: true },
    cancel: { label: "Cancel", doing: "Cancelling", done: "cancelled", text: "end for good, failed and marked cancelled; running ones have their handlers cancelled.", danger: true },
  };
  const jobsN = (n) => `${n.toLocaleString()} job${n === 1 ? "" : "s"}`;

  // bulkRun acts on every job the filter params pick (a state and the
  // filter, as /api/count takes them): it counts them first, a bounded
  // request at a time, asks with the count, then takes the action a
  // bounded step at a time, showing its progress in box. It returns
  // whether anything was acted on.
  async function bulkRun(queue, action, params, what, box) {
    const a = BULK[action];
    const text = h("span", { class: "bulk-text" });
    const bar = h("progress", { max: "1", value: "0" });
    box.hidden = false;
    box.dataset.phase = "counting";
    box.replaceChildren(text, bar);
    const fail = (msg) => { box.dataset.phase = "failed"; text.textContent = msg; bar.remove(); };
    let cursor = "", matched = 0, scanned = 0;
    for (;;) {
      const res = await fetch("/api/count?" + new URLSearchParams({ ...params, cursor }));
      const body = await res.json().catch(() => ({}));
      if (!res.ok) { fail(body.error || `the server answered ${res.status}`); return false; }
      matched += body.matched;
      scanned += body.scanned;
      text.textContent = `Counting ${what}: ${matched.toLocaleString()} so far, ${scanned.toLocaleString()} of ${body.total.toLocaleString()} read…`;
      if (!(cursor = body.next)) break;
    }
    if (!matched) { box.dataset.phase = "done"; text.textContent = `No ${what}: nothing to ${action}.`; bar.remove(); return false; }
    const ok = await confirmAction(`${a.label} ${jobsN(matched)}?`, `The ${jobsN(matched)} (${what}) ${a.text} Jobs that move on meanwhile are left as they are.`, `${a.label} ${jobsN(matched)}`);
    if (!ok) { box.dataset.phase = "done"; text.textContent = `${a.label} not confirmed: nothing changed.`; bar.remove(); return false; }
    box.dataset.phase = "acting";
    bar.max = matched;
    let done = 0, skipped = 0;
    cursor = "";
    for (;;) {
      const res = await fetch("/api/bulk?" + new URLSearchParams(params), {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Rebound-Token": TOKEN },
        body: JSON.stringify({ action, cursor }),
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) { fail(`${a.label} stopped: ${body.error || `the server answered ${res.status}`}; ${jobsN(done)} ${a.done} before it.`); return done > 0; }
      done += body.done;
      skipped += body.skipped;
      bar.value = Math.min(matched, done + skipped);
      text.textContent = `${a.doing} ${what}: ${done.toLocaleString()} of ${matched.toLocaleString()} ${a.done}…`;
      if (!(cursor = body.next)) break;
    }
    box.dataset.phase = "done";
    bar.value = bar.max;
    text.textContent = `${jobsN(done)} ${a.done}, ${skipped.toLocaleString()} skipped (moved on since the count).`;
    toast(`${queue.text}: ${jobsN(done)} ${a.done}`);
    return true;
  }

  // redrivePanel is the queue's redrive: failed jobs sent back, oldest
  // failure first, at a rate, holding while their dependency's breaker is
  // open. The ui's process drives it, so that it goes on when this page
  // goes away; the panel reads its state once a second. pick(params,
  // what) sets the filter a start sends (a group's, from its row).
  function redrivePanel(queue, refreshLists) {
    let params = {}, what = "all failed jobs";
    const whatEl = h("code", { "data-redrive": "filter", text: what });
    const rateF = h("input", { type: "number", min: "0.1", max: "10000", step: "any", value: "50", "data-redrive": "rate", "aria-label": "Rate, jobs a second" });
    const depF = h("input", { type: "text", placeholder: "none", "data-redrive": "dependency", "aria-label": "Dependency whose breaker holds it" });
    const status = h("p", { class: "redrive-status", "data-redrive": "status", role: "status", "aria-live": "polite", text: "No redrive yet." });
    const bar = h("progress", { max: "1", value: "0", hidden: true });
    const send = async (body, query = {}) => {
      const res = await fetch("/api/redrive?" + new URLSearchParams({ queueKey: queue.key, ...query }), {
        method: "POST", headers: { "Content-Type": "application/json", "X-Rebound-Token": TOKEN }, body: JSON.stringify(body),
      });
      const out = await res.json().catch(() => ({}));
      if (!res.ok) { toast(`Redrive: ${out.error || `the server answered ${res.status}`}`); return null; }
      draw(out);
      return out;
    };
    const startBtn = h("button", { type: "button", "data-redrive": "start", text: "Start redrive", onclick: async () => {
      const rate = Number(rateF.value);
      if (!(rate > 0 && rate <= 10000)) { toast("Redrive: the rate is jobs a second, over 0 and at most 10000"); rateF.focus(); return; }
      const dep = depF.value.trim();
      const ok = await confirmAction(`Redrive ${what}?`,
        `The ${what} go back to the wait list, the oldest failure first, at ${rate} a second${dep ? `, holding while the breaker of ${dep} is open` : ""}. Each keeps a record of this redrive in its metadata. It goes on when this page closes; pause or cancel it here or with rebound queue redrive.`,
        "Start redrive");
      if (ok && await send({ action: "start", rate, dependency: dep }, params)) toast(`${queue.text}: redrive started`);
    } });
    const ctl = (action, label, danger) => h("button", { type: "button", class: "small" + (danger ? " danger" : ""), "data-redrive": action, hidden: true, text: label,
      onclick: async () => { if (await send({ action })) { toast(`${queue.text}: redrive ${action === "pause" ? "paused" : action === "resume" ? "resumed" : "cancelled"}`); refreshLists(); } } });
    const pauseBtn = ctl("pause", "Pause"), resumeBtn = ctl("resume", "Resume"), cancelBtn = ctl("cancel", "Cancel", true);
    let last = "";
    const draw = (st) => {
      const live = st.state === "running" || st.state === "paused";
      pauseBtn.hidden = st.state !== "running";
      resumeBtn.hidden = st.state !== "paused" && !(st.state === "running" && !st.live);
      cancelBtn.hidden = !live;
      startBtn.disabled = live;
      if (st.none) { status.textContent = "No redrive yet."; bar.hidden = true; return; }
      bar.hidden = false;
      bar.max = Math.max(st.total, 1);
      bar.value = st.total < 0 ? 0 : Math.min(st.total, st.sent + st.skipped);
      status.dataset.state = st.state;
      status.dataset.held = st.held ? "true" : "false";
      const held = st.state === "running" && st.held && st.held !== "counting" ? ` Holding: ${st.held}.` : "";
      const driver = live && !st.live ? " No process drives it (its lease ended): Resume goes on from where it stopped." : "";
      const text = `Redrive ${st.id} (${st.filter}) at ${st.rate}/s: ${st.state}; ` +
        (st.total < 0 ? "counting the jobs (none is sent before the count)" : `${st.sent.toLocaleString()} sent, ${st.left.toLocaleString()} left of ${st.total.toLocaleString()}`) +
        (st.skipped ? `, ${st.skipped.toLocaleString()} skipped` : "") + `.${held}${driver}`;
      if (text !== status.textContent) status.textContent = text;
      if (last === "running" && st.state === "done") refreshLists();
      last = st.state;
    };
    const panel = h("div", { class: "list-panel redrive-panel", "data-panel": "redrive" },
      h("h4", { text: "Redrive: failed jobs back at a rate" }),
      h("p", { class: "muted", text: "Oldest failure first, at the rate you set, holding while the breaker of the jobs' dependency is open; one per queue, resumable. Pick a group's Redrive to send that group." }),
      h("div", { class: "redrive-form" },
        h("span", {}, "Jobs: ", whatEl),
        h("label", {}, "Rate (jobs/s) ", rateF),
        h("label", {}, "Dependency ", depF),
        startBtn),
      status, bar, h("div", { class: "pager" }, pauseBtn, resumeBtn, cancelBtn));
    const tick = async () => {
      if (!panel.isConnected) return;
      const res = await fetch("/api/redrive?" + new URLSearchParams({ queueKey: queue.key })).catch(() => null);
      if (res && res.ok) draw(await res.json());
    };
    // Read once a second while the panel is on the page (it is put there
    // as this returns; once it has left, the reads stop).
    let shown = false;
    const timer = setInterval(() => {
      if (panel.isConnected) { shown = true; tick(); } else if (shown) clearInterval(timer);
    }, 1000);
    setTimeout(tick, 0);
    panel.pick = (p, w) => {
      params = p; what = w;
      whatEl.textContent = w;
      rateF.focus();
      panel.scrollIntoView({ block: "nearest" });
    };
    return panel;
  }

  // groupsPanel is the failed jobs grouped by their error's fingerprint:
  // it asks for the groups a bounded request at a time, merging each
  // answer in, until the whole failed set is read (or Stop), and offers
  // each group's bulk actions.
  function groupsPanel(queue, refreshLists, redrive) {
    const status = h("p", { class: "groups-status", role: "status" });
    const list = h("ul", { class: "grouplist", "data-list": "groups", tabindex: "-1", "aria-label": `Failure groups of ${queue.text}` });
    const box = h("div", { class: "bulk-progress", "data-bulk": "groups", role: "status", "aria-live": "polite", hidden: true });
    const scanBtn = h("button", { type: "button", "data-groups": "scan", text: "Group the failed jobs" });
    const stopBtn = h("button", { type: "button", class: "small", "data-groups": "stop", text: "Stop", hidden: true });
    const SHOWN = 100;
    let run = 0;
    const draw = (groups) => {
      list.replaceChildren(...groups.slice(0, SHOWN).map((g) => {
        const buttons = queue.features.includes("bulk") ? ["retry", "delete"].map((action) => h("button", {
          type: "button", class: "small" + (BULK[action].danger ? " danger" : ""), "data-action": action,
          onclick: async () => {
            const what = `failed, of group ${g.id}: ${g.fingerprint}`;
            if (await bulkRun(queue, action, { queueKey: queue.key, state: "failed", group: g.id }, what, box)) {
              await refreshLists();
              scan();
            }
          },
          text: `${BULK[action].label} group`,
        })) : [];
        if (redrive) buttons.push(h("button", { type: "button", class: "small", "data-action": "redrive", text: "Redrive group",
          onclick: () => redrive.pick({ group: g.id }, `failed jobs of group ${g.id}: ${g.fingerprint}`) }));
        return h("li", { "data-group": g.id },
          h("span", { class: "group-count", text: g.count.toLocaleString() }),
          h("span", { class: "group-body" },
            h("code", { class: "fp", text: g.fingerprint }),
            h("span", { class: "meta", text: `first seen ${ago(g.firstSeen)} · last seen ${ago(g.lastSeen)} · group ${g.id}` }),
            h("span", { class: "meta err", title: g.exampleError, text: `e.g. ${g.exampleIdText}: ${g.exampleError}` })),
          h("span", { class: "row-actions" }, buttons));
      }));
      if (!groups.length) list.append(h("li", { class: "empty", text: "no failed jobs" }));
      if (groups.length > SHOWN) list.append(h("li", { class: "empty", text: `${(groups.length - SHOWN).toLocaleString()} smaller groups not shown` }));
    };
    const scan = async () => {
      const mine = ++run;
      const byId = new Map();
      let cursor = "", scanned = 0, requests = 0;
      stopBtn.hidden = false;
      status.dataset.done = "false";
      for (;;) {
        const res = await fetch("/api/groups?" + new URLSearchParams({ queueKey: queue.key, cursor }));
        const body = await res.json().catch(() => ({}));
        if (mine !== run) return;
        if (!res.ok) { status.textContent = body.error || `the server answered ${res.status}`; stopBtn.hidden = true; return; }
        requests++;
        scanned += body.scanned;
        for (const g of body.groups) {
          const have = byId.get(g.id);
          if (!have) { byId.set(g.id, g); continue; }
          have.count += g.count;
          have.firstSeen = Math.min(have.firstSeen, g.firstSeen);
          if (g.lastSeen > have.lastSeen) Object.assign(have, { lastSeen: g.lastSeen, exampleKey: g.exampleKey, exampleIdText: g.exampleIdText, exampleError: g.exampleError });
        }
        const groups = [...byId.values()].sort((x, y) => y.count - x.count || y.lastSeen - x.lastSeen || (x.fingerprint < y.fingerprint ? -1 : 1));
        draw(groups);
        cursor = body.next;
        const of = `${scanned.toLocaleString()} of ${body.total.toLocaleString()} failed jobs read`;
        status.textContent = cursor ?
          `${of}, ${byId.size.toLocaleString()} groups so far (each request reads a bounded number${body.reached ? `, back to failures ${ago(body.reached)}` : ""})…` :
          `${of} in ${requests.toLocaleString()} request${requests === 1 ? "" : "s"}: ${byId.size.toLocaleString()} group${byId.size === 1 ? "" : "s"}.`;
        if (!cursor) break;
      }
      status.dataset.done = "true";
      stopBtn.hidden = true;
    };
    scanBtn.addEventListener("click", scan);
    stopBtn.addEventListener("click", () => {
      run++;
      stopBtn.hidden = true;
      status.textContent += " Stopped.";
      status.dataset.done = "true";
    });
    return h("div", { class: "list-panel groups-panel", "data-panel": "groups" },
      h("h4", { text: "Failure groups, by error fingerprint" }),
      h("p", { class: "muted", text: "Errors with their numbers, IDs, addresses and quoted values folded (<n>, <id>, <addr>, <q>): one group per cause." }),
      h("div", { class: "pager" }, scanBtn, stopBtn), status, box, list);
  }

  function queueCard(queue) {
    const tiles = {};
    const mix = {};
    const counts = h("dl", { class: "counts" }, STATES.map((st) => {
      tiles[st] = h("dd", { "data-count": st, text: "–" });
      return h("div", { class: `count s-${st}` }, h("dt", {}, h("i", { class: "dot" }), st), tiles[st]);
    }));
    const mixBar = h("div", { class: "mix", "aria-hidden": "true" }, STATES.map((st) => (mix[st] = h("span", { class: `s-${st}` }))));
    const live = h("span", { class: "live", "data-state": "connecting", text: "connecting" });
    const paused = h("span", { class: "pill paused", hidden: true, text: "paused" });
    const err = h("p", { class: "queue-error", role: "status", hidden: true });
    const result = h("div", { class: "lookup-result", "aria-live": "polite", tabindex: "-1" });
    const idInput = h("input", { type: "text", placeholder: "job ID", "aria-label": `Job ID in queue ${queue.text}`, spellcheck: "false" });
    const lookupForm = h("form", { class: "lookup", role: "search" }, idInput, h("button", { type: "submit", text: "Look up" }));
    // lookup finds the job typed in: as typed, trimmed, then with the
    // escapes the page shows for bytes an input cannot hold (a CR or LF,
    // a byte that is not UTF-8) read as those bytes.
    const lookup = async () => {
      const typed = idInput.value;
      const keys = typedKeys(typed);
      if (!typed.trim()) return;
      const res = await fetch("/api/job?" + new URLSearchParams([["queueKey", queue.key], ...keys.map((k) => ["idKey", k])]));
      const body = await res.json().catch(() => ({}));
      const mark = focusMark(result);
      result.replaceChildren(res.ok ? jobCard(queue, body, lookup) : h("p", { class: "queue-error", text: body.error || `the server answered ${res.status}` }));
      restoreFocus(mark);
    };
    lookupForm.addEventListener("submit", (e) => { e.preventDefault(); lookup(); });

    const head = h("div", { class: "queue-head" }, h("h3", { text: queue.text }), live, paused);
    let pauseBtn = null;
    if (queue.features.includes("pause")) {
      pauseBtn = h("button", { type: "button", class: "small right", "data-pause": true, text: "Pause" });
      pauseBtn.style.marginLeft = "auto";
      pauseBtn.addEventListener("click", async () => {
        const resume = pauseBtn.dataset.paused === "true";
        const ok = await confirmAction(resume ? `Resume ${queue.text}?` : `Pause ${queue.text}?`,
          resume ? "Workers take jobs from the queue again." : "Workers take no new jobs from the queue until you resume it; running jobs finish.",
          resume ? "Resume" : "Pause");
        if (!ok) return;
        try {
          await post({ queueKey: queue.key, action: resume ? "resume" : "pause" });
          toast(`${queue.text} ${resume ? "resumed" : "paused"}`);
        } catch (e) { toast(e.message); }
      });
      head.append(pauseBtn);
    }

    let lists = null;
    let refreshLists = () => Promise.resolve();
    let refreshState = () => {};
    const listOf = {};
    if (queue.features.includes("jobs")) {
      const paged = queue.features.includes("pages");
      const TITLES = {
        delayed: "Next retries and delayed jobs", failed: "Failed for good, latest first",
        waiting: "Waiting, next to run first", active: "Running, lease ending first", completed: "Completed, latest first",
      };
      const EMPTY = { delayed: "nothing scheduled", failed: "no failed jobs", waiting: "nothing waiting", active: "nothing running", completed: "nothing completed" };
      const order = ["delayed", "failed", "waiting", "active", "completed"];
      const panels = order.map((st) => {
        const ul = h("ul", { class: "joblist", "data-list": st, tabindex: "-1", "aria-label": `${TITLES[st]}, ${queue.text}` });
        const total = h("span", { class: "total", "data-total": st, text: "" });
        const where = h("span", { class: "where", "data-where": st });
        const prev = h("button", { type: "button", class: "small", "data-page": "prev", text: "← Previous", disabled: true });
        const next = h("button", { type: "button", class: "small", "data-page": "next", text: "Next →", disabled: true });
        const l = { st, ul, total, where, prev, next, cursors: [""], nextCursor: "" };
        prev.addEventListener("click", () => { if (l.cursors.length > 1) { l.cursors.pop(); fill(l); } });
        next.addEventListener("click", () => { if (l.nextCursor) { l.cursors.push(l.nextCursor); fill(l); } });
        listOf[st] = l;
        return h("div", { class: "list-panel", "data-panel": st },
          h("h4", {}, TITLES[st], " ", total),
          ul,
          paged ? h("div", { class: "pager" }, prev, where, next) : null);
      });
      lists = h("div", { class: "lists" }, panels);
      const PAGE = 50;
      // fill redraws a list in place: a job's row is kept (keyed by the
      // job's key) and only its text and buttons change, rows move
      // around the focused one, and when the focused row leaves the list
      // the focus goes to the row that takes its place, so a keyboard
      // user keeps their place while the list follows the queue. A list
      // shows the page its cursor names; a cursor whose place is gone
      // sends it back to the first page.
      const fill = async (l) => {
        const { ul, st } = l;
        const q = { queueKey: queue.key, state: st, limit: String(PAGE) };
        if (paged) q.cursor = l.cursors[l.cursors.length - 1];
        const res = await fetch("/api/jobs?" + new URLSearchParams(q));
        const body = await res.json().catch(() => ({}));
        if (res.status === 410 && l.cursors.length > 1) { l.cursors = [""]; return fill(l); }
        const mark = focusMark(ul);
        if (res.ok && body.total >= 0) l.total.textContent = `· ${body.total.toLocaleString()}`;
        l.nextCursor = res.ok ? body.next || "" : "";
        l.prev.disabled = l.cursors.length <= 1;
        l.next.disabled = !l.nextCursor;
        const first = (l.cursors.length - 1) * PAGE;
        l.where.textContent = res.ok && body.jobs.length ? `${(first + 1).toLocaleString()}–${(first + body.jobs.length).toLocaleString()}` : "";
        if (!res.ok || !body.jobs.length) {
          const text = !res.ok ? body.error || "cannot list" : EMPTY[st];
          const empty = ul.querySelector("li.empty");
          if (empty && ul.children.length === 1) empty.textContent = text;
          else ul.replaceChildren(h("li", { class: "empty", text }));
          restoreFocus(mark);
          return;
        }
        const rows = body.jobs.map((j) => jobRow(ul, st, j));
        const keep = new Set(rows);
        for (const li of [...ul.children]) if (!keep.has(li)) li.remove();
        rows.forEach((li, i) => { if (ul.children[i] !== li) ul.insertBefore(li, ul.children[i] || null); });
        restoreFocus(mark);
      };
      // jobRow returns job j's row of ul, its text brought up to date, or
      // a new one.
      const jobRow = (ul, st, j, after = refreshLists) => {
        const idText = j.idText + (j.name ? ` · ${j.name}` : "");
        const tries = j.attempts ? ` · ${j.attempts} attempt${j.attempts === 1 ? "" : "s"} so far` : "";
        const meta = {
          delayed: () => `fires ${ago(j.nextFireAt)} · attempt ${j.attempts + 1}${j.lastError ? " · last: " + j.lastError : ""}`,
          failed: () => `${j.lastError || "no error recorded"} · ${ago(j.finishedAt)}`,
          waiting: () => `enqueued ${j.createdAt ? ago(j.createdAt) : "–"}${tries}`,
          active: () => `attempt ${j.attempts + 1} · lease until ${j.leaseDeadline ? clock(j.leaseDeadline) : "–"}`,
          completed: () => `finished ${j.finishedAt ? ago(j.finishedAt) : "–"}${tries}`,
        }[st]();
        const actions = actionButtons(queue, j, () => after(j));
        const names = actions.map((b) => b.dataset.action).join(" ");
        let li = [...ul.children].find((el) => el.dataset.key === j.key);
        if (!li) {
          li = h("li", { "data-job": j.id, "data-key": j.key },
            h("a", { class: "id", "data-open": "job" }), h("span", { class: st === "failed" ? "meta err" : "meta" }), h("span", { class: "row-actions" }));
        }
        const [idEl, metaEl, actionsEl] = li.children;
        if (idEl.textContent !== idText) { idEl.textContent = idText; idEl.title = `${j.idText}: open the job's page`; }
        const href = jobPageHref(queue, j.key);
        if (idEl.getAttribute("href") !== href) idEl.setAttribute("href", href);
        if (metaEl.textContent !== meta) metaEl.textContent = meta;
        if (st === "failed") metaEl.title = j.lastError || "";
        if (li.dataset.actions !== names) {
          actionsEl.replaceChildren(...actions);
          li.dataset.actions = names;
        }
        return li;
      };
      refreshLists = () => Promise.all(order.map((st) => fill(listOf[st])));
      refreshState = (st) => fill(listOf[st]);

      // Find: one state's jobs by ID prefix, name, error text and time
      // range. The server reads at most a few thousand jobs a request and
      // says when it stopped short; Continue goes on from there.
      if (paged) {
        const stateSel = h("select", { "aria-label": "State to search", name: "state" },
          order.map((st) => h("option", { value: st, text: st === "active" ? "running" : st, selected: st === "failed" })));
        const field = (name, label, attrs = {}) => h("label", { class: "find-field" }, h("span", { text: label }),
          h("input", { type: "text", name, spellcheck: "false", ...attrs }));
        const idF = field("id", "ID starts with");
        const nameF = field("name", "name has");
        const errF = field("error", "error has");
        const fromF = field("from", "from", { type: "datetime-local", step: "1" });
        const toF = field("to", "to", { type: "datetime-local", step: "1" });
        const findBtn = h("button", { type: "submit", text: "Find" });
        const more = h("button", { type: "button", class: "small", "data-find": "more", text: "Continue", hidden: true });
        const status = h("p", { class: "find-status", role: "status" });
        const found = h("ul", { class: "joblist", "data-list": "found", tabindex: "-1", "aria-label": `Found jobs of ${queue.text}` });
        const form = h("form", { class: "find", role: "search", "aria-label": `Find jobs in ${queue.text}` },
          h("label", { class: "find-field" }, h("span", { text: "state" }), stateSel), idF, nameF, errF, fromF, toF, findBtn);
        let search = null;
        const val = (f) => f.querySelector("input").value;
        const run = async (cont) => {
          if (!cont) {
            const q = { queueKey: queue.key, state: stateSel.value, idKey: keyOf(unescaped(val(idF))), name: val(nameF), error: val(errF) };
            for (const [k, f] of [["from", fromF], ["to", toF]]) if (val(f)) q[k] = String(new Date(val(f)).getTime());
            search = { q, cursor: "", seen: 0, matches: 0 };
            found.replaceChildren();
          }
          const q = new URLSearchParams({ ...search.q, cursor: search.cursor });
          const res = await fetch("/api/find?" + q);
          const body = await res.json().catch(() => ({}));
          if (!res.ok) { status.textContent = body.error || `the server answered ${res.status}`; more.hidden = true; return; }
          search.seen += body.scanned;
          search.matches += body.jobs.length;
          search.cursor = body.next;
          const mark = focusMark(found);
          if (body.jobs.length) found.querySelector("li.empty")?.remove();
          // A found job acted on leaves the results: it is no longer
          // where the search found it.
          const acted = async (j) => {
            await refreshLists();
            [...found.children].find((li) => li.dataset.key === j.key)?.remove();
          };
          for (const j of body.jobs) found.append(jobRow(found, search.q.state, j, acted));
          if (!found.children.length) found.append(h("li", { class: "empty", text: "no job matches" }));
          const of = body.total >= 0 ? ` of ${body.total.toLocaleString()}` : "";
          status.textContent = body.cut ?
            `${search.matches.toLocaleString()} found so far, ${search.seen.toLocaleString()}${of} jobs read: the search stopped short (each request reads a bounded number). Continue goes on.` :
            `${search.matches.toLocaleString()} found, ${search.seen.toLocaleString()}${of} jobs read: searched to the end.`;
          status.dataset.cut = String(!!body.cut);
          more.hidden = !body.cut;
          restoreFocus(mark);
        };
        form.addEventListener("submit", (e) => { e.preventDefault(); run(false); });
        more.addEventListener("click", () => run(true));
        // Everything the search's filter picks, acted on in bulk.
        const bulkBox = h("div", { class: "bulk-progress", "data-bulk": "find", role: "status", "aria-live": "polite", hidden: true });
        const bulkBtns = queue.features.includes("bulk") ? ["retry", "delete", "cancel"].map((action) => h("button", {
          type: "button", class: "small" + (BULK[action].danger ? " danger" : ""), "data-bulk-action": action,
          onclick: async () => {
            const st = stateSel.value;
            const q = { queueKey: queue.key, state: st, idKey: keyOf(unescaped(val(idF))), name: val(nameF), error: val(errF) };
            for (const [k, f] of [["from", fromF], ["to", toF]]) if (val(f)) q[k] = String(new Date(val(f)).getTime());
            const parts = [st === "active" ? "running" : st];
            if (val(idF)) parts.push(`ID starting ${val(idF)}`);
            if (val(nameF)) parts.push(`name holding ${val(nameF)}`);
            if (val(errF)) parts.push(`error holding ${val(errF)}`);
            if (val(fromF) || val(toF)) parts.push(`${val(fromF) || "…"} to ${val(toF) || "…"}`);
            if (await bulkRun(queue, action, q, parts.join(", "), bulkBox)) await refreshLists();
          },
          text: `${BULK[action].label} all matching`,
        })) : [];
        lists.append(h("div", { class: "list-panel find-panel", "data-panel": "find" },
          h("h4", { text: "Find" }), form, status, found, h("div", { class: "pager" }, more),
          bulkBtns.length ? h("div", { class: "pager bulk-actions" }, bulkBtns) : null, bulkBox));
        const redrive = queue.features.includes("redrive") ? redrivePanel(queue, () => refreshLists()) : null;
        if (queue.features.includes("groups")) lists.append(groupsPanel(queue, () => refreshLists(), redrive));
        if (redrive) lists.append(redrive);
      }
    }

    const card = h("div", { class: "card queue", "data-queue": queue.name }, head, counts, mixBar, err, lists, lookupForm, result);
    let prev = null;
    let listTimer = 0;
    const pendingStates = new Set();
    return {
      el: card,
      update(sample, at) {
        live.dataset.state = sample.error ? "error" : "live";
        live.textContent = sample.error ? "Redis error" : `live · ${new Date(at).toLocaleTimeString()}`;
        err.hidden = !sample.error;
        err.textContent = sample.error || "";
        if (sample.paused !== undefined) {
          paused.hidden = !sample.paused;
          if (pauseBtn) { pauseBtn.dataset.paused = String(sample.paused); pauseBtn.textContent = sample.paused ? "Resume" : "Pause"; }
        }
        if (!sample.counts) return;
        const total = STATES.reduce((t, st) => t + sample.counts[st], 0);
        for (const st of STATES) {
          const v = sample.counts[st];
          if (prev && prev[st] !== v) {
            tiles[st].classList.add("changed");
            setTimeout(() => tiles[st].classList.remove("changed"), 50);
          }
          tiles[st].textContent = v.toLocaleString();
          mix[st].style.flexGrow = String(total ? v : 0);
        }
        const changed = STATES.filter((st) => !prev || prev[st] !== sample.counts[st]);
        prev = sample.counts;
        if (lists) {
          for (const st of changed) {
            pendingStates.add(st);
            listOf[st].total.textContent = `· ${sample.counts[st].toLocaleString()}`;
          }
          if (pendingStates.size) {
            clearTimeout(listTimer);
            listTimer = setTimeout(() => { const sts = [...pendingStates]; pendingStates.clear(); sts.forEach(refreshState); }, 150);
          }
        }
      },
      offline() { live.dataset.state = "connecting"; live.textContent = "reconnecting…"; },
    };
  }

  async function startQueues() {
    const list = $("#queue-list");
    if (!list) return;
    const res = await fetch("/api/queues");
    const queues = await res.json();
    const cards = new Map();
    for (const q of queues) {
      const c = queueCard(q);
      cards.set(q.key, c);
      list.append(c.el);
    }
    const es = new EventSource("/api/queues/events");
    es.addEventListener("counts", (e) => {
      const snap = JSON.parse(e.data);
      skew = snap.at - Date.now();
      for (const sample of snap.queues) cards.get(sample.key)?.update(sample, snap.at);
    });
    es.addEventListener("error", () => { for (const c of cards.values()) c.offline(); });
  }

  // ---- start ----

  if (params.has("attempts")) {
    const n = parseInt(params.get("attempts"), 10);
    if (n >= 1 && n <= 1001) state.attempts = n;
  }
  if (params.has("key")) state.key = params.get("key");
  if (params.has("herdAttempt")) {
    const n = parseInt(params.get("herdAttempt"), 10);
    if (n >= 1) state.herdAttempt = n;
  }
  syncControls();
  policyText = params.get("policy") || textFromControls();
  policyInput.value = policyText;
  compute();
  startQueues();

  // Charts are drawn at their box's width in pixels, so text stays crisp;
  // they are redrawn when the width changes.
  let resizeFrame = 0;
  let drawnWidth = 0;
  new ResizeObserver((entries) => {
    const w = Math.round(entries[0].contentRect.width);
    if (w === drawnWidth) return;
    drawnWidth = w;
    cancelAnimationFrame(resizeFrame);
    resizeFrame = requestAnimationFrame(() => {
      if (!last) return;
      renderTimeline(last);
      renderBars(last);
      renderHerd(last);
    });
  }).observe($("main"));
})();
