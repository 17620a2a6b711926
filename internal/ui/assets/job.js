// rebound ui: a job's page. It asks the server for everything the queue
// stores about one job and for the job's time bar (the attempts so far,
// as far as the store knows them, and the next fire times of a rule, from
// rebound's Go core), and draws them. It computes no time itself: the
// bar's positions are the server's Unix milliseconds; its axis labels are
// the one thing it formats.
"use strict";

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const { typedKeys, jobHref } = window.reboundKeys;

  const { h, s, num } = window.reboundDOM;

  function span(ms) {
    const p = (x) => String(+x.toPrecision(3));
    const a = Math.abs(ms);
    if (a < 1000) return p(a) + "ms";
    if (a < 60e3) return p(a / 1e3) + "s";
    if (a < 3600e3) return p(a / 60e3) + "m";
    if (a < 172800e3) return p(a / 3600e3) + "h";
    if (a < 730 * 86400e3) return p(a / 86400e3) + "d";
    return p(a / (365.25 * 86400e3)) + "y";
  }

  const params = new URLSearchParams(location.search);
  const queueSel = $("#job-queue");
  const idInput = $("#job-id");
  const policyInput = $("#job-policy");
  const attemptsInput = $("#job-attempts");
  const errBox = $("#job-error");
  policyInput.value = params.get("policy") || "";
  attemptsInput.value = params.get("attempts") || "";

  function problem(msg) {
    errBox.textContent = msg;
    errBox.hidden = !msg;
  }

  async function start() {
    const res = await fetch("/api/queues");
    const queues = res.ok ? await res.json() : [];
    queueSel.replaceChildren(...queues.map((q) => h("option", { value: q.key, text: q.text })));
    const qk = params.get("queueKey");
    if (qk) queueSel.value = qk;
    else if (params.get("queue")) {
      const q = queues.find((x) => x.name === params.get("queue"));
      if (q) queueSel.value = q.key;
    }
    if (!queues.length) { problem("This server shows no queues: start rebound ui with -redis URL -queue NAME."); return; }
    if (params.has("idKey") || params.has("id")) load();
  }

  let shown = null; // the answer drawn

  // load asks for the job the address names and draws it.
  async function load() {
    const q = new URLSearchParams();
    q.set("queueKey", params.get("queueKey") || queueSel.value);
    if (params.has("idKey")) for (const k of params.getAll("idKey")) q.append("idKey", k);
    else q.set("id", params.get("id") || "");
    if (policyInput.value.trim()) q.set("policy", policyInput.value.trim());
    if (attemptsInput.value) q.set("attempts", attemptsInput.value);
    const res = await fetch("/api/jobpage?" + q);
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      problem(body.error || `the server answered ${res.status}`);
      $("#job-bar-card").hidden = true;
      $("#job-details").hidden = true;
      return;
    }
    problem(body.policyError ? `The rule's policy does not parse: ${body.policyError.message}. The bar shows the stored times only.` : "");
    if (document.activeElement !== idInput) idInput.value = body.job.idText;
    if (body.rule && !attemptsInput.value) attemptsInput.value = String(body.rule.maxAttempts);
    document.title = `rebound · job ${body.job.idText}`;
    shown = body;
    renderDetails(body);
    renderBar(body);
  }

  function renderDetails(ans) {
    const j = ans.job;
    $("#job-details").hidden = false;
    $("#job-details").dataset.key = j.key;
    $("#job-title").textContent = j.idText;
    const st = $("#job-state");
    st.textContent = j.cancelled ? "failed · cancelled" : j.state;
    st.className = `state s-${j.state}`;
    const rows = [];
    const add = (k, v, field) => rows.push(h("dt", { text: k }), h("dd", { "data-field": field }, v));
    const text = (t, what) => {
      const kids = [h("pre", { text: t.text })];
      const notes = [];
      if (t.binary) notes.push("not UTF-8: bytes shown as \\xNN");
      if (t.cut) notes.push(`cut: the first part of the ${t.size.toLocaleString()} bytes stored`);
      if (notes.length) kids.push(h("small", { class: "muted", text: notes.join("; ") }));
      return t.size ? kids : `no ${what}`;
    };
    add("queue", j.queue, "queue");
    add("name", j.name || "none", "name");
    add("state", j.cancelled ? `${j.state}, cancelled by an operator` : j.state, "state");
    add("attempts", j.maxAttempts ? `${j.attempts} started, of at most ${j.maxAttempts} (the job's own cap)` :
      `${j.attempts} started (the worker's rule caps them)`, "attempts");
    add("cancelled", j.cancelled ? "yes" : "no", "cancelled");
    add("created", j.createdText || "not stored", "created");
    add("updated", j.updated, "updated");
    if (j.finishedText) add("finished", j.finishedText, "finished");
    if (j.nextFireText) add("next fire", j.nextFireText, "nextFire");
    if (j.leaseDeadlineText) add("lease until", `${j.leaseDeadlineText} (running; renewed while the handler runs)`, "lease");
    add("last error", text(j.lastError, "error"), "lastError");
    add("payload", text(j.payload, "payload"), "payload");
    const meta = j.metadata.length ? h("table", { class: "meta-table" }, h("tbody", {}, j.metadata.map((m) =>
      h("tr", {}, h("th", { scope: "row", text: m.key.text }), h("td", { text: m.value.text + (m.value.cut ? ` … (${m.value.size.toLocaleString()} bytes)` : "") }))))) : "none";
    add("metadata", j.metadataCount > j.metadata.length ? [meta, h("small", { class: "muted", text: `${j.metadata.length} of ${j.metadataCount} entries shown` })] : meta, "metadata");
    $("#job-fields").replaceChildren(...rows);
  }

  const KIND = {
    enqueued: "enqueued", runs: "ran", failed: "failed", completed: "completed", running: "running",
    lease: "lease ends", due: "due", fire: "fires",
  };

  function renderBar(ans) {
    $("#job-bar-card").hidden = false;
    const box = $("#job-bar");
    const evs = ans.events;
    const now = ans.at;
    const rule = ans.rule;
    $("#bar-sub").textContent = rule ?
      `the times ahead are the rule ${rule.policy} x ${rule.maxAttempts}'s${rule.fromJob ? " (the job's own cap)" : ""}` :
      "no rule given: the stored times only";
    const W = Math.max(360, Math.floor(box.getBoundingClientRect().width));
    const H = 150;
    const m = { l: 24, r: 34, t: 46, b: 40 };
    const iw = W - m.l - m.r;
    const axisY = m.t + 30;
    const times = evs.flatMap((e) => (e.end ? [e.at, e.end] : [e.at]));
    const t0 = Math.min(now, ...times);
    const t1 = Math.max(now, ...times);
    // Past and future each get their own linear scale, joined at now: the
    // past is a share of the bar however short it is beside the future.
    const past = now - t0;
    const future = t1 - now;
    const split = past > 0 && future > 0 ? 0.3 : past > 0 ? 1 : 0;
    const xNow = m.l + iw * split;
    const x = (t) => t <= now ? (past > 0 ? m.l + ((t - t0) / past) * (xNow - m.l) : xNow) :
      xNow + ((t - now) / future) * (m.l + iw - xNow);
    const g = s("svg", { class: "chart job-bar", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
      "aria-label": `Time bar of job ${ans.job.idText}: ${evs.length} marks` });
    g.append(s("line", { class: "axis", x1: m.l, x2: W - m.r, y1: axisY, y2: axisY }));
    if (past > 0 && future > 0) g.append(s("line", { class: "split", x1: num(xNow), x2: num(xNow), y1: m.t - 18, y2: axisY + 14 }));
    const tick = (t, label) => g.append(s("line", { class: "axis", x1: num(x(t)), x2: num(x(t)), y1: axisY, y2: axisY + 5 }),
      s("text", { x: num(x(t)), y: axisY + 18, "text-anchor": "middle", text: label }));
    tick(now, "now");
    if (past > 0) {
      tick(t0, "−" + span(past));
      if (xNow - m.l > 160) tick(t0 + past / 2, "−" + span(past / 2));
    }
    if (future > 0) {
      const n = Math.max(1, Math.floor((m.l + iw - xNow) / 120));
      for (let i = 1; i <= n; i++) tick(now + (future * i) / n, "+" + span((future * i) / n));
    }
    g.append(s("text", { x: m.l, y: H - 6, text: past > 0 ? "past: its own scale" : "" }),
      s("text", { x: W - m.r, y: H - 6, "text-anchor": "end", text: future > 0 ? "ahead: its own scale" : "" }));
    let lastLabel = -Infinity;
    for (const e of evs) {
      const cx = x(e.at);
      const title = s("title", { text: `${e.text} · ${e.atText} (${e.source})` });
      const mark = s("g", { class: `mark k-${e.kind} src-${e.source}`, "data-kind": e.kind, "data-source": e.source, "data-attempt": e.attempt || "" }, title);
      switch (e.kind) {
        case "runs":
          mark.append(s("rect", { class: "runs", x: num(cx), y: axisY - 9, width: num(Math.max(2, x(e.end) - cx)), height: 18, rx: 3 }));
          break;
        case "lease":
          mark.append(s("line", { class: "lease", x1: num(x(now)), x2: num(cx), y1: axisY - 14, y2: axisY - 14 }),
            s("line", { class: "lease", x1: num(cx), x2: num(cx), y1: axisY - 18, y2: axisY - 10 }));
          break;
        case "fire":
          mark.append(e.source === "stored" ?
            s("path", { class: "fire-stored", d: `M${num(cx)} ${axisY - 7} l7 7 l-7 7 l-7 -7 z` }) :
            s("circle", { class: "fire", cx: num(cx), cy: axisY, r: 5 }));
          break;
        default:
          mark.append(s("circle", { class: `dot ${e.kind}`, cx: num(cx), cy: axisY, r: e.kind === "enqueued" ? 4 : 5.5 }));
      }
      if (e.attempt && e.kind !== "runs" && e.kind !== "lease" && cx - lastLabel >= 16) {
        mark.append(s("text", { class: "fire-label", x: num(cx), y: axisY - 16, "text-anchor": "middle", text: String(e.attempt) }));
        lastLabel = cx;
      }
      g.append(mark);
    }
    g.append(s("text", { x: m.l, y: 14, text: "attempt" }));
    box.replaceChildren(g);

    $("#bar-table tbody").replaceChildren(...evs.map((e) => h("tr", { "data-kind": e.kind, "data-source": e.source, "data-attempt": e.attempt || "" },
      h("td", { class: "n", text: e.kind === "runs" ? (e.to > e.attempt ? `${e.attempt}–${e.to}` : String(e.attempt)) : e.attempt ? String(e.attempt) : "" }),
      h("td", { text: e.text }),
      h("td", { class: "fires", text: e.kind === "runs" ? `${e.atText} – ${e.endText}` : e.atText }),
      h("td", { text: e.source }))));
    $("#bar-notes").replaceChildren(...ans.notes.map((n) => h("li", { text: n })));
  }

  // Opening another job: its address names it by the keys of what was
  // typed, as the main page's lookup does.
  $("#job-open").addEventListener("submit", (e) => {
    e.preventDefault();
    if (!idInput.value.trim()) { problem("Type a job ID."); return; }
    location.assign(jobHref(queueSel.value, typedKeys(idInput.value), policyInput.value.trim(), attemptsInput.value));
  });

  // The bar is drawn at its box's width; it is redrawn when that changes.
  let redraw = 0;
  let drawn = 0;
  new ResizeObserver((entries) => {
    const w = Math.round(entries[0].contentRect.width);
    if (w === drawn) return;
    drawn = w;
    cancelAnimationFrame(redraw);
    redraw = requestAnimationFrame(() => { if (shown) renderBar(shown); });
  }).observe($("main"));
  start();
})();
