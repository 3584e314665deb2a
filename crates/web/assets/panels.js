// The other tabs and what floats over them: the processes that run, the
// programs (each with a form to run it), webview programs' tiles, search,
// and the command palette.

import { $, el, engine, api, typeOf, bodyOf, placedOn, short, summary, millis, seconds, showView, state } from "./core.js";
import { markRunning } from "./sidebar.js";
import { openSession } from "./conversation.js";
import { showTrace } from "./trace.js";

// ---- processes ------------------------------------------------------------------

export async function loadRunning() {
  const read = await engine.scope(["engine/process"], { match_: "running OR pending", limit: 100000 });
  state.running.clear();
  for (const c of read.chunks) {
    const b = bodyOf(c);
    if (b.status !== "running" && b.status !== "pending") continue;
    state.running.set(c.id, { session: placedOn(c, "s_"), program: c.name, body: b });
    if (b.webview && !state.tiles.has(c.id)) mountTile(c.id, c.name);
  }
  // a tile whose run ended (closed elsewhere, cancelled, done) goes
  for (const [process, tile] of state.tiles) {
    if (tile && !state.running.has(process)) { state.tiles.delete(process); tile.remove(); }
  }
  markRunning();
  renderProcesses();
}

const clock = (iso) => { const t = new Date(iso || ""); return Number.isNaN(t.getTime()) ? "" : t.toLocaleTimeString([], { hour12: false }); };

function renderProcesses() {
  const head = el("tr", {}, ...["Process", "Program", "Status", "Session", "Started", "Running for", ""].map((h) => el("th", {}, h)));
  const rows = [...state.running.entries()].map(([id, r]) => {
    const b = r.body || {};
    const session = r.session ? (state.rows.get(r.session) || {}).title || r.session : "—";
    return el("tr", { "data-process": id },
      el("td", { class: "mono" }, id), el("td", {}, r.program || ""), el("td", {}, b.status || "running"),
      el("td", { title: r.session || "" }, short(session, 40)), el("td", { class: "started" }, clock(b.started)),
      el("td", { class: "for", "data-started": b.started || "" }, seconds(millis(b.started, new Date().toISOString()))),
      el("td", {}, el("button", { onclick: () => engine.cancel(id) }, "Cancel")));
  });
  const none = el("tr", {}, el("td", { class: "dim", colspan: 7 }, "no process is running"));
  $("#processes").replaceChildren(el("thead", {}, head), el("tbody", {}, ...(rows.length ? rows : [none])));
}

// how long each process has run, kept current while the tab shows
setInterval(() => {
  if (!$("#view-processes").classList.contains("active")) return;
  for (const cell of document.querySelectorAll("#processes td.for")) cell.textContent = seconds(millis(cell.dataset.started, new Date().toISOString()));
}, 1000);

// ---- programs -------------------------------------------------------------------

export async function showPrograms() {
  showView("programs");
  const read = await engine.scope(["engine/program"], { type: "instance", limit: 100000 });
  $("#programs").replaceChildren(...read.chunks.map((c) => el("li", { "data-program": c.name, onclick: () => programForm(c) },
    el("strong", {}, c.name), " ", el("span", { class: "dim" }, short(bodyOf(c).text, 120)))));
}

async function programForm(chunk) {
  const b = bodyOf(chunk);
  let schema = { type: "object", properties: {} };
  if (b.input_type) { const read = await engine.scope([b.input_type], { limit: 1 }); schema = (read.scopes[0] && read.scopes[0].body.schema) || schema; }
  const form = $("#run-form");
  const fields = Object.entries(schema.properties || {}).map(([name, prop]) => {
    const kind = prop.type === "integer" || prop.type === "number" ? "number" : prop.type === "boolean" ? "checkbox" : "text";
    const input = prop.type === "object" || prop.type === "array" ? el("textarea", { name, rows: 3, placeholder: "JSON" }) : el("input", { name, type: kind });
    input.dataset.kind = prop.type || "string";
    return el("label", {}, `${name}${(schema.required || []).includes(name) ? " *" : ""} `, el("span", { class: "dim" }, prop.description || ""), input);
  });
  form.replaceChildren(el("h3", {}, chunk.name), ...fields, el("button", { type: "submit" }, "Run"));
  form.hidden = false;
  form.onsubmit = async (e) => {
    e.preventDefault();
    const input = {};
    for (const field of form.querySelectorAll("input, textarea")) {
      if (field.value === "" && field.type !== "checkbox") continue;
      const k = field.dataset.kind;
      input[field.name] = k === "integer" || k === "number" ? Number(field.value) : k === "boolean" ? field.checked : k === "object" || k === "array" ? JSON.parse(field.value) : field.value;
    }
    $("#run-result").textContent = "running…";
    try {
      const run = await api("/api/program-run", { program: chunk.name, input });
      if (run.webview) { mountTile(run.process, chunk.name); $("#run-result").textContent = `tile ${run.process}`; return; }
      const done = await engine.await([run.process]);
      const out = done[run.process].chunks.filter((c) => c.placements.some((p) => p.scope === "engine/output"));
      $("#run-result").textContent = out.map((c) => c.body.text).join("\n") || JSON.stringify(done[run.process].scopes[0].body, null, 2);
    } catch (err) { $("#run-result").textContent = `hc: ${err.message}`; }
  };
}

// ---- tiles ----------------------------------------------------------------------

export async function mountTile(process, name) {
  if (state.tiles.has(process)) return;
  state.tiles.set(process, null);
  try {
    const mounted = await api(`/api/tile/${process}`, {});
    if (!state.tiles.has(process)) return;
    const frame = el("iframe", { sandbox: "allow-scripts", src: mounted.url, title: name || process });
    const tile = el("div", { class: "tile", "data-process": process },
      el("div", { class: "bar" }, el("span", {}, `${name || "tile"} · ${process}`),
        el("button", { class: "close", title: "close the tile: its run completes", onclick: () => closeTile(process) }, "✕")), frame);
    state.tiles.set(process, tile);
    $("#tiles").append(tile);
  } catch (e) { state.tiles.delete(process); }
}

async function closeTile(process) {
  const tile = state.tiles.get(process);
  state.tiles.delete(process);
  if (tile) tile.remove();
  await api(`/api/tile/${process}/close`, {}).catch(() => {});
}

// ---- search ---------------------------------------------------------------------

// The words a query looks for (its operators and quotes left out).
const wordsOf = (query) => query.split(/\s+/).map((w) => w.replace(/["*()]/g, "")).filter((w) => w && !["AND", "OR", "NOT", "NEAR"].includes(w));

// A snippet of `text` around the first word found, every word marked.
function snippet(text, words) {
  const lower = text.toLowerCase();
  const at = Math.min(...words.map((w) => lower.indexOf(w.toLowerCase())).filter((i) => i >= 0), text.length);
  const from = Math.max(0, at - 60);
  const cut = (from > 0 ? "…" : "") + text.slice(from, from + 220).replace(/\s+/g, " ") + (from + 220 < text.length ? "…" : "");
  const pattern = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})`, "gi");
  return cut.split(pattern).map((part, i) => (i % 2 ? el("mark", {}, part) : part));
}

// What a session item says, for search.
function said(c) {
  const b = bodyOf(c);
  if (typeOf(c) === "tool-call") return `${b.program} ${summary(b.program, b.input)}`;
  return b.text || b.title || b.reason || "";
}

// The session a sub-agent's process works for (its parent's, up).
async function sessionOf(process, depth = 0) {
  if (!process || depth > 8) return null;
  const read = await engine.scope([process], { limit: 1 }).catch(() => null);
  const chunk = read && read.scopes[0];
  if (!chunk) return null;
  return placedOn(chunk, "s_") || sessionOf(placedOn(chunk, "p_"), depth + 1);
}

// What matched, by session: each item once, its type, a snippet with the
// words marked; the session's title to open it by.
export async function search(query) {
  showView("search");
  const read = await engine.scope([], { match_: query, limit: 500 });
  const words = wordsOf(query);
  const groups = new Map();
  const seen = new Set();
  for (const c of read.chunks) {
    const type = typeOf(c);
    const isSession = c.placements.some((p) => p.type === "instance" && p.scope === "session");
    // a tool's own process output repeats its result: only session items
    const session = isSession ? c.id : type ? placedOn(c, "s_") || await sessionOf(placedOn(c, "p_")) : null;
    const text = isSession ? (bodyOf(c).title || "") : said(c);
    if (!session || !text || seen.has(c.id) || seen.has(`${session}|${type}|${text}`)) continue;
    seen.add(c.id); seen.add(`${session}|${type}|${text}`);
    if (!groups.has(session)) groups.set(session, []);
    if (!isSession) groups.get(session).push(el("div", { class: "hit" }, el("span", { class: "kind" }, type), " ", ...snippet(text, words)));
  }
  const items = [...groups.entries()].map(([session, hits]) => {
    const row = state.rows.get(session) || {};
    return el("li", { "data-session": session, onclick: () => openSession(session) },
      el("div", { class: "where" }, el("strong", {}, row.title || session), el("span", { class: "dim" }, ` · ${session}`)), ...hits);
  });
  $("#results").replaceChildren(...(items.length ? items : [el("li", { class: "dim" }, `nothing in any session matches “${query}”`)]));
}

// ---- the palette ------------------------------------------------------------------

export function palette() {
  const box = $("#palette");
  const input = $("#palette-input");
  const actions = () => [
    { label: "New session", run: () => openSession(null) },
    { label: "Trace of this session", run: showTrace },
    { label: "Processes", run: () => showView("processes") },
    { label: "Programs", run: showPrograms },
    ...[...state.rows.values()].slice(0, 200).map((r) => ({ label: `Session: ${r.title || r.id}`, run: () => openSession(r.id) })),
  ];
  let shown = [];
  let at = 0;
  const draw = () => {
    const q = input.value.toLowerCase();
    shown = actions().filter((a) => a.label.toLowerCase().includes(q)).slice(0, 30);
    at = Math.min(at, Math.max(shown.length - 1, 0));
    $("#palette-list").replaceChildren(...shown.map((a, i) => el("li", { class: i === at ? "active" : "", onclick: () => pick(i) }, a.label)));
  };
  const pick = (i) => { box.hidden = true; if (shown[i]) shown[i].run(); };
  input.oninput = () => { at = 0; draw(); };
  input.onkeydown = (e) => {
    if (e.key === "ArrowDown") { at++; draw(); e.preventDefault(); }
    else if (e.key === "ArrowUp") { at = Math.max(0, at - 1); draw(); e.preventDefault(); }
    else if (e.key === "Enter") pick(at);
    else if (e.key === "Escape") box.hidden = true;
  };
  box.hidden = false;
  input.value = "";
  draw();
  input.focus();
}
