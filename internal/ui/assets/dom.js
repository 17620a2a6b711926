// rebound ui: how the pages build their elements, shared by the main page
// and a job's page. Text always goes in as text (textContent, or a text
// node), never as markup, so job data cannot become an element.
"use strict";

(() => {
  const SVGNS = "http://www.w3.org/2000/svg";
  // build makes an element with make, sets attrs (text: its text; onX: a
  // listener of event X; true: a bare attribute; undefined, null, false:
  // none) and appends kids (elements, or strings and numbers as text).
  function build(make, tag, attrs, kids) {
    const el = make(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids.flat()) {
      if (kid === undefined || kid === null || kid === false) continue;
      el.append(typeof kid === "string" || typeof kid === "number" ? String(kid) : kid);
    }
    return el;
  }
  window.reboundDOM = Object.freeze({
    SVGNS,
    h: (tag, attrs, ...kids) => build((t) => document.createElement(t), tag, attrs, kids),
    s: (tag, attrs, ...kids) => build((t) => document.createElementNS(SVGNS, t), tag, attrs, kids),
    // num writes a coordinate to two decimals.
    num: (x) => String(Math.round(x * 100) / 100),
  });
})();
