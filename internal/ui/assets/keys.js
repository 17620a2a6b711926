// rebound ui: how the pages name queues and jobs to the server, shared by
// the main page and a job's page. A name is sent as its key: its exact
// bytes in base64url, which survive JSON and URLs where names that are not
// UTF-8 (or hold CR/LF) do not.
"use strict";

(() => {
  // keyOf makes the key of bytes.
  function keyOf(bytes) {
    let bin = "";
    for (const b of bytes) bin += String.fromCharCode(b);
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  const utf8 = (str) => Array.from(new TextEncoder().encode(str));
  // unescaped reads typed text, with the escapes the page shows (\x0d,
  // \u202e, \\) as the bytes they stand for.
  function unescaped(str) {
    const out = [];
    for (let i = 0; i < str.length;) {
      const m = /^\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([nrt\\]))/.exec(str.slice(i, i + 10));
      if (m && !(m[3] && parseInt(m[3], 16) > 0x10ffff)) {
        if (m[1]) out.push(parseInt(m[1], 16));
        else if (m[2] || m[3]) out.push(...utf8(String.fromCodePoint(parseInt(m[2] || m[3], 16))));
        else out.push({ n: 10, r: 13, t: 9, "\\": 92 }[m[4]]);
        i += m[0].length;
        continue;
      }
      const cp = str.codePointAt(i);
      out.push(...utf8(String.fromCodePoint(cp)));
      i += cp > 0xffff ? 2 : 1;
    }
    return out;
  }
  // typedKeys are the keys a typed ID may stand for: as typed, trimmed,
  // and with its escapes read as bytes.
  function typedKeys(typed) {
    return [...new Set([keyOf(utf8(typed)), keyOf(utf8(typed.trim())), keyOf(unescaped(typed.trim()))])];
  }
  // jobHref is the address of a job's page: the job by its queue's and
  // its own key, drawn with the rule policy x attempts when given.
  function jobHref(queueKey, idKeys, policy, attempts) {
    const q = new URLSearchParams([["queueKey", queueKey], ...[].concat(idKeys).map((k) => ["idKey", k])]);
    if (policy) q.set("policy", policy);
    if (attempts) q.set("attempts", String(attempts));
    return "/job?" + q;
  }
  window.reboundKeys = Object.freeze({ keyOf, utf8, unescaped, typedKeys, jobHref });
})();
