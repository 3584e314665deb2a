// What every part of the page shares: making elements, the socket to the
// engine (requests by id, events to handlers), the HTTP API, what a chunk
// is, and numbers in the words `hc trace` uses.

export const $ = (sel) => document.querySelector(sel);
export const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v);
  }
  for (const child of children) node.append(child ?? "");
  return node;
};

// ---- the socket: requests by id, events to handlers ----------------------

export const engine = (() => {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws`);
  const pending = new Map();
  const subs = new Map();
  const listeners = [];
  let next = 1;
  ws.onopen = () => { $("#connection").textContent = "live"; };
  ws.onclose = () => { $("#connection").textContent = "disconnected — reload"; };
  ws.onmessage = (frame) => {
    const m = JSON.parse(frame.data);
    if (m.event) {
      if (m.event === "notification") { for (const l of listeners) l(m); return; }
      for (const id of m.subscriptionIds || [m.subscriptionId]) { const cb = subs.get(id); if (cb) cb(m); }
      return;
    }
    const w = pending.get(m.id);
    if (!w) return;
    pending.delete(m.id);
    if (m.error) w.fail(Object.assign(new Error(m.error.message), { code: m.error.code })); else w.ok(m.result);
  };
  const request = async (op, fields) => {
    if (ws.readyState !== WebSocket.OPEN) await new Promise((ok) => ws.addEventListener("open", ok, { once: true }));
    const id = next++;
    const answer = new Promise((ok, fail) => pending.set(id, { ok, fail }));
    ws.send(JSON.stringify({ id, op, ...fields }));
    return answer;
  };
  return {
    scope: (scopes, opts = {}) => request("scope", { scopes, opts }),
    commit: (declaration) => request("commit", { declaration }),
    cancel: (process) => request("cancel", { process }),
    await: (processes) => request("await", { processes }),
    async subscribe(scopes, opts, cb) { const r = await request("subscribe", { scopes, opts }); subs.set(r.subscriptionId, cb); return r.subscriptionId; },
    async unsubscribe(id) { subs.delete(id); return request("unsubscribe", { subscriptionId: id }); },
    onNotification: (cb) => listeners.push(cb),
  };
})();

export const api = async (path, body) => {
  const res = await fetch(path, body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) { let e = await res.text(); try { e = JSON.parse(e).error; } catch {} throw new Error(e); }
  return res.headers.get("content-type")?.includes("json") ? res.json() : res.text();
};

// ---- what a chunk is ------------------------------------------------------

const TYPES = ["prompt", "answer", "tool-call", "tool-result", "permission-request", "permission-decision",
  "user-question", "user-answer", "interrupt", "todo", "context", "compaction", "engine/process", "hook-callback", "hook-answer",
  "llm-call", "block-save", "plan"];
export const typeOf = (c) => TYPES.find((t) => c.placements.some((p) => p.scope === t && p.type === "instance"));
export const bodyOf = (c) => c.body || {};
// the scope a chunk is an instance on that starts with `prefix` (s_, p_)
export const placedOn = (c, prefix) => (c.placements.find((p) => p.type === "instance" && p.scope.startsWith(prefix)) || {}).scope;
export const short = (s, n = 100) => { s = String(s ?? ""); const line = s.split("\n")[0]; return line.length > n ? line.slice(0, n) + "…" : line; };
// What an edit or a write would change, as lines to read: an edit's old
// and new text, a write's content (its first 40 lines); none for others.
export function changeOf(program, input) {
  if (!input) return null;
  const lines = (text, cls, mark) => String(text).split("\n").map((l) => el("div", { class: cls }, mark + l));
  if (program === "edit" && input.old_string !== undefined) {
    return el("div", { class: "diff" }, ...lines(input.old_string, "del", "- "), ...lines(input.new_string, "add", "+ "));
  }
  if (program === "write" && typeof input.content === "string") {
    const all = input.content.split("\n");
    const shown = lines(all.slice(0, 40).join("\n"), "add", "+ ");
    if (all.length > 40) shown.push(el("div", { class: "dim" }, `… ${all.length - 40} more lines`));
    return el("div", { class: "diff" }, ...shown);
  }
  return null;
}

export const summary = (program, input = {}) => {
  const name = String(program).toLowerCase();
  if (["read", "write", "edit"].includes(name)) return input.file_path;
  if (["glob", "grep"].includes(name)) return input.pattern + (input.path ? ` in ${input.path}` : "");
  if (["shell", "bash"].includes(name)) return input.command;
  if (name === "web-fetch") return input.url;
  if (name === "agent" || name === "task") return input.description || input.text;
  if (name === "skill") return input.name;
  if (name === "call_llm") return input.prompt;
  return JSON.stringify(input);
};

// ---- numbers as `hc trace` says them ---------------------------------------

// every input token: fresh, cache writes and cache reads
export const inputTokens = (u = {}) => (u.input_tokens || 0) + (u.cache_creation_input_tokens || 0) + (u.cache_read_input_tokens || 0);
export const tokens = (u = {}) => `${inputTokens(u)} in / ${u.output_tokens || 0} out`;
export const cost = (usd) => (usd === undefined || usd === null ? "" : `$${Number(usd).toFixed(4)}`);
export const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
export const millis = (started, ended) => {
  const a = Date.parse(started || ""), b = Date.parse(ended || "");
  return Number.isNaN(a) || Number.isNaN(b) ? null : Math.max(0, b - a);
};
export const seconds = (ms) => (ms === null ? "" : `${(ms / 1000).toFixed(1)} s`);
// a time as the sidebar says it: the hour today, the day before
export const when = (iso) => {
  const t = new Date(iso || "");
  if (Number.isNaN(t.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  const today = new Date().toDateString() === t.toDateString();
  return today ? `${pad(t.getHours())}:${pad(t.getMinutes())}` : `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())}`;
};

// ---- long texts, folded ----------------------------------------------------

const FOLD_LINES = 6;
const FOLD_CHARS = 800;

// `text` whole, shown to its first few lines with a control to unfold it
// (and fold it again) when it is longer.
export function folded(text, cls = "out") {
  text = String(text ?? "");
  const lines = text.replace(/\n$/, "").split("\n");
  const long = lines.length > FOLD_LINES || text.length > FOLD_CHARS;
  const pre = el("pre", { class: cls }, text);
  if (!long) return el("div", { class: "fold" }, pre);
  const head = lines.slice(0, FOLD_LINES).join("\n").slice(0, FOLD_CHARS);
  const more = lines.length > FOLD_LINES ? `${plural(lines.length, "line")}` : `${text.length} characters`;
  const button = el("button", { class: "unfold", type: "button" });
  const box = el("div", { class: "fold folded" }, pre, button);
  const show = (open) => {
    box.classList.toggle("folded", !open);
    pre.textContent = open ? text : head + "…";
    button.textContent = open ? "▴ fold" : `▸ show all ${more}`;
  };
  button.addEventListener("click", () => show(box.classList.contains("folded")));
  show(false);
  return box;
}

// `node` at the end of `box`, but before a reply still streaming there:
// what is recorded meanwhile came before that reply.
export function place(box, node) {
  const streaming = box.querySelector(":scope > .answer.streaming");
  if (streaming) box.insertBefore(node, streaming); else box.append(node);
  return node;
}

// ---- views --------------------------------------------------------------------

export function showView(name) {
  for (const v of document.querySelectorAll(".view")) v.classList.toggle("active", v.id === `view-${name}`);
  for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t.dataset.view === name);
}

// What the page holds of the session shown and of the engine.
export const state = {
  session: null, running: new Map(), rendered: new Set(), streams: new Map(), calls: new Map(),
  results: new Map(), runs: new Map(), asked: new Map(), ended: new Set(), sessionSub: null, tiles: new Map(), rows: new Map(),
};
