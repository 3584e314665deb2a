// The page `hc serve --http` shows: a host of the engine over /ws (the
// protocol unchanged, one JSON object a frame). The host draws the frame —
// sessions, the conversation, the trace, processes, programs — and
// webview programs draw themselves in tiles (sandboxed iframes).

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  for (const child of children) node.append(child ?? "");
  return node;
};

// ---- the socket: requests by id, events to handlers ----------------------

const engine = (() => {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws`);
  const pending = new Map();
  const subs = new Map();
  const listeners = [];
  let next = 1;
  const opened = new Promise((ok) => (ws.onopen = ok));
  ws.onopen = () => { $("#connection").textContent = "live"; };
  opened.then(() => ($("#connection").textContent = "live"));
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

const api = async (path, body) => {
  const res = await fetch(path, body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) { let e = await res.text(); try { e = JSON.parse(e).error; } catch {} throw new Error(e); }
  return res.headers.get("content-type")?.includes("json") ? res.json() : res.text();
};

// ---- what a chunk is ------------------------------------------------------

const TYPES = ["prompt", "answer", "tool-call", "tool-result", "permission-request", "permission-decision",
  "user-question", "user-answer", "interrupt", "todo", "context", "compaction", "engine/process", "hook-callback", "hook-answer",
  "llm-call", "block-save", "plan"];
const typeOf = (c) => TYPES.find((t) => c.placements.some((p) => p.scope === t && p.type === "instance"));
const bodyOf = (c) => c.body || {};
const short = (s, n = 100) => { s = String(s ?? ""); const line = s.split("\n")[0]; return line.length > n ? line.slice(0, n) + "…" : line; };
const summary = (program, input = {}) => {
  const name = program.toLowerCase();
  if (["read", "write", "edit"].includes(name)) return input.file_path;
  if (["glob", "grep"].includes(name)) return input.pattern + (input.path ? ` in ${input.path}` : "");
  if (["shell", "bash"].includes(name)) return input.command;
  if (name === "web-fetch") return input.url;
  if (name === "agent" || name === "task") return input.description || input.text;
  return JSON.stringify(input);
};

// ---- sessions -------------------------------------------------------------

const state = { session: null, running: new Map(), rendered: new Set(), streams: new Map(), calls: new Map(), sessionSub: null, tiles: new Map() };

async function loadSessions() {
  const read = await engine.scope(["session"], { type: "instance", limit: 100000 });
  const list = $("#sessions");
  const frag = document.createDocumentFragment();
  for (const c of [...read.chunks].reverse()) {
    const b = bodyOf(c);
    frag.append(el("li", { "data-session": c.id, title: c.id, class: c.id === state.session ? "selected" : "", onclick: () => openSession(c.id) }, b.title || c.name || c.id));
  }
  list.replaceChildren(frag);
  markRunning();
}

async function loadRunning() {
  const read = await engine.scope(["engine/process"], { match_: "running OR pending", limit: 100000 });
  state.running.clear();
  for (const c of read.chunks) {
    const b = bodyOf(c);
    if (b.status !== "running" && b.status !== "pending") continue;
    const on = c.placements.find((p) => p.type === "instance" && p.scope.startsWith("s_"));
    state.running.set(c.id, { session: on && on.scope, program: c.name, body: b });
    if (b.webview && !state.tiles.has(c.id)) mountTile(c.id, c.name);
  }
  markRunning();
  renderProcesses();
}

function markRunning() {
  const live = new Set([...state.running.values()].map((r) => r.session).filter(Boolean));
  for (const li of document.querySelectorAll("#sessions li")) {
    li.classList.toggle("running", live.has(li.dataset.session));
    li.classList.toggle("selected", li.dataset.session === state.session);
  }
  const mine = [...state.running.entries()].find(([, r]) => r.session === state.session && r.program === "agent");
  $("#interrupt").disabled = !mine;
  $("#cancel").disabled = !mine;
}

// ---- the conversation -----------------------------------------------------

async function openSession(id) {
  if (state.sessionSub) { engine.unsubscribe(state.sessionSub); state.sessionSub = null; }
  state.session = id;
  state.rendered.clear(); state.streams.clear(); state.calls.clear();
  $("#conversation").replaceChildren();
  showView("session");
  markRunning();
  if (!id) { $("#session-title").textContent = "a new session starts with your message"; $("#status").textContent = ""; return; }
  const li = document.querySelector(`#sessions li[data-session="${id}"]`);
  $("#session-title").textContent = li ? li.textContent : id;
  state.sessionSub = await engine.subscribe([id], { deep: true }, (event) => onSessionEvent(event));
  const read = await engine.scope([id], { limit: 100000 });
  for (const c of read.chunks) render(c, id);
}

async function onSessionEvent(event) {
  if (event.event === "lagged") return openSession(state.session);
  if (event.event !== "scope_changed") return;
  const c = event.commit;
  const ids = [...new Set([...c.created, ...c.chunks_modified])];
  for (const id of ids) {
    try {
      const read = await engine.scope([id], { limit: 1 });
      const chunk = read.scopes[0];
      if (chunk) render(chunk, state.session);
    } catch { /* removed, or out of reach */ }
  }
}

function containerFor(chunk, session) {
  const on = chunk.placements.find((p) => p.type === "instance" && (p.scope === session || p.scope.startsWith("p_")));
  if (!on || on.scope === session) return $("#conversation");
  const nested = document.querySelector(`[data-child-session="${on.scope}"] .children`);
  return nested || null;
}

function render(chunk, session) {
  const type = typeOf(chunk);
  const b = bodyOf(chunk);
  if (type === "engine/process") return renderRun(chunk, b);
  if (state.rendered.has(chunk.id) && type !== "answer") return;
  const box = containerFor(chunk, session);
  if (!box) return;
  state.rendered.add(chunk.id);
  switch (type) {
    case "prompt":
      box.append(el("div", { class: "item prompt", "data-id": chunk.id }, b.text));
      break;
    case "answer": {
      // a reply of tool calls alone has no text: nothing to show, and the
      // text streaming now is a later reply's
      if (!b.text) break;
      const streamed = state.streams.get(b.process);
      if (streamed) { streamed.querySelector(".text").textContent = b.text; state.streams.delete(b.process); streamed.dataset.id = chunk.id; }
      else if (!document.querySelector(`[data-id="${chunk.id}"]`) && b.text) box.append(el("div", { class: "item answer", "data-id": chunk.id }, el("div", { class: "text" }, b.text)));
      break;
    }
    case "tool-call": renderCall(box, chunk, b); break;
    case "tool-result": renderResult(b); break;
    case "permission-request": renderPermission(box, chunk, b); break;
    case "permission-decision": settle(b.request, `→ ${b.decision}${answeredBy(b)}`); break;
    case "user-question": renderQuestion(box, chunk, b); break;
    case "plan": renderPlan(box, chunk, b); break;
    case "user-answer": settle(b.request, `→ ${b.text}${answeredBy(b)}`); break;
    case "interrupt": box.append(el("div", { class: "item status" }, "✗ interrupted")); break;
    case "todo": box.append(el("div", { class: "item status" }, `☐ plan: ${b.text || ""}`)); break;
    case "compaction": box.append(el("div", { class: "item status" }, "⟳ compacted")); break;
    case "hook-callback": box.append(el("div", { class: "item status", "data-id": chunk.id }, `⚑ ${b.event} hook`)); break;
    case "llm-call": box.append(el("div", { class: "item status", "data-id": chunk.id },
      b.purpose === "compression" ? `◆ compressed ${b.block} ${b.path}: ${short(b.text || b.error || "", 120)}` : `◆ call_llm (${b.model}): ${short(b.text || b.error || "", 120)}`)); break;
    case "block-save": box.append(el("div", { class: "item status", "data-id": chunk.id }, `▤ ${b.block} ${b.path} ← saved`)); break;
    default: break;
  }
  scrollDown();
}

function renderCall(box, chunk, b) {
  const node = el("div", { class: "item tool", "data-tool-use-id": b.tool_use_id, "data-id": chunk.id, "data-process": b.process },
    el("span", { class: "name" }, b.program), " ", el("span", { class: "summary" }, short(summary(b.program, b.input), 120)),
    el("div", { class: "progress" }), el("div", { class: "result" }));
  if (b.program === "edit" && b.input && b.input.old_string !== undefined) {
    node.append(el("div", { class: "diff" }, ...String(b.input.old_string).split("\n").map((l) => el("div", { class: "del" }, "- " + l)),
      ...String(b.input.new_string).split("\n").map((l) => el("div", { class: "add" }, "+ " + l))));
  }
  if (b.program === "agent" && b.process) {
    const details = el("details", { "data-child-session": b.process, open: "" }, el("summary", {}, "sub-agent"), el("div", { class: "children" }));
    node.append(details);
  }
  state.calls.set(b.tool_use_id, node);
  box.append(node);
}

function renderResult(b) {
  const node = state.calls.get(b.tool_use_id);
  if (!node) return;
  node.classList.add(b.is_error ? "failed" : "done");
  node.querySelector(".progress").textContent = "";
  node.querySelector(".result").textContent = (b.denied ? "denied: " : "") + short(b.text, 2000);
}

function renderPermission(box, chunk, b) {
  const where = chunk.placements.find((p) => p.type === "instance" && p.scope !== "permission-request").scope;
  const answer = (decision) => engine.commit({ chunks: [{ body: { request: chunk.id, decision, rule: b.rule, by: "the page" }, placements: [{ scope: where, type: "instance" }, { scope: "permission-decision", type: "instance" }] }] });
  box.append(el("div", { class: "item permission", "data-request": chunk.id },
    `Allow ${b.program} ${short(summary(b.program, b.input), 200)}? (${b.reason}) `,
    el("button", { "data-choice": "allow", onclick: () => answer("allow") }, "Allow"),
    el("button", { "data-choice": "always", onclick: () => answer("always") }, `Always (${b.rule})`),
    el("button", { "data-choice": "deny", onclick: () => answer("deny") }, "Deny")));
}

function renderQuestion(box, chunk, b) {
  const where = chunk.placements.find((p) => p.type === "instance" && p.scope !== "user-question").scope;
  const input = el("input", { placeholder: (b.options || []).join(" / ") });
  const send = () => engine.commit({ chunks: [{ body: { request: chunk.id, text: input.value, by: "the page" }, placements: [{ scope: where, type: "instance" }, { scope: "user-answer", type: "instance" }] }] });
  box.append(el("div", { class: "item question", "data-request": chunk.id }, `? ${b.text} `, input, el("button", { onclick: send }, "Answer")));
}

// A plan mode run's plan: shown; when the agent waits, approved (in the
// mode chosen) or answered with what to change.
function renderPlan(box, chunk, b) {
  const where = chunk.placements.find((p) => p.type === "instance" && p.scope !== "plan").scope;
  const node = el("div", { class: "item question plan", "data-request": chunk.id }, el("div", { class: "text" }, b.text));
  if (b.ask) {
    const send = (text) => engine.commit({ chunks: [{ body: { request: chunk.id, text, by: "the page" }, placements: [{ scope: where, type: "instance" }, { scope: "user-answer", type: "instance" }] }] });
    const input = el("input", { placeholder: "or say what to change" });
    node.append(el("button", { "data-choice": "default", onclick: () => send("default") }, "Approve"),
      el("button", { "data-choice": "accept-edits", onclick: () => send("accept-edits") }, "Approve, accept edits"),
      input, el("button", { onclick: () => send(input.value) }, "Send"));
  }
  box.append(node);
}

// Who answered, when it was not this page: one answer per question,
// whichever host gave it.
function answeredBy(b) {
  return b.by && b.by !== "the page" ? ` (answered by ${b.by})` : "";
}

function settle(request, said) {
  const asked = document.querySelector(`[data-request="${request}"]`);
  if (!asked || asked.classList.contains("answered")) return;
  asked.classList.add("answered");
  for (const button of asked.querySelectorAll("button, input")) button.disabled = true;
  asked.append(el("span", { class: "status" }, ` ${said}`));
}

function renderRun(chunk, b) {
  if (b.status === "running" || b.status === "pending") {
    const on = chunk.placements.find((p) => p.type === "instance" && p.scope.startsWith("s_"));
    state.running.set(chunk.id, { session: on && on.scope, program: chunk.name, body: b });
  } else {
    state.running.delete(chunk.id);
    const t = b.totals || b;
    if (chunk.name === "agent" && t.turns !== undefined) {
      const usage = t.usage || {};
      $("#status").textContent = `${t.turns} turn${t.turns === 1 ? "" : "s"} · ${(usage.input_tokens || 0) + (usage.cache_read_input_tokens || 0)} in / ${usage.output_tokens || 0} out · $${(t.cost_usd || 0).toFixed(4)}`;
    }
  }
  markRunning();
}

// text and progress as the agent streams them, painted as they come
engine.onNotification((m) => {
  const d = m.data || {};
  if (d.kind === "text_delta") {
    let node = state.streams.get(m.process);
    if (!node) {
      node = el("div", { class: "item answer streaming" }, el("div", { class: "text" }));
      state.streams.set(m.process, node);
      const nested = document.querySelector(`[data-child-session="${m.process}"] .children`);
      (nested || $("#conversation")).append(node);
    }
    const arrived = performance.now();
    node.querySelector(".text").textContent += d.text;
    scrollDown();
    // measured (the bench sets it): from a delta's arrival to the frame that paints it
    if (window.__hc_paint) requestAnimationFrame(() => window.__hc_paint.push(performance.now() - arrived));
  } else if (d.kind === "progress" || d.kind === "output") {
    const node = [...state.calls.values()].find((n) => n.dataset.process === m.process);
    if (node) node.querySelector(".progress").textContent = short(d.text || d.message || "", 120);
  } else if (d.kind === "tool_start") {
    const node = state.calls.get(d.tool_use_id);
    if (node) node.querySelector(".progress").textContent = "running…";
  }
});

function scrollDown() { const c = $("#conversation"); c.scrollTop = c.scrollHeight; }

async function send(event) {
  event && event.preventDefault();
  const prompt = $("#prompt").value;
  if (!prompt.trim()) return;
  $("#prompt").value = "";
  try {
    const started = await api("/api/run", { session: state.session, prompt, agent: $("#agent").value || undefined });
    if (started.session !== state.session) { await loadSessions(); await openSession(started.session); }
    state.running.set(started.process, { session: started.session, program: "agent" });
    markRunning();
  } catch (e) { $("#conversation").append(el("div", { class: "item status" }, `hc: ${e.message}`)); }
}

async function interrupt() {
  if (!state.session) return;
  await engine.commit({ chunks: [{ body: { text: "interrupted by the person" }, placements: [{ scope: state.session, type: "instance" }, { scope: "interrupt", type: "instance" }] }] });
}

async function cancelRun() {
  for (const [id, r] of state.running) if (r.session === state.session) await engine.cancel(id).catch(() => {});
}

// ---- trace ------------------------------------------------------------------

async function showTrace() {
  showView("trace");
  const box = $("#trace");
  if (!state.session) { box.replaceChildren(el("p", { class: "dim" }, "Open a session to see its trace.")); return; }
  const tree = await api(`/api/trace/${state.session}`);
  const rows = [];
  const walk = (items, depth) => {
    for (const n of items) {
      const pad = "  ".repeat(depth);
      if (n.type === "answer") rows.push(el("div", { class: "node" }, `${pad}◆ answer `, n.call ? el("button", { class: "request", "data-n": n.call, onclick: () => showRequest(n.call) }, `request #${n.call}`) : "", ` ${short(n.text, 80)}`));
      else if (n.type === "tool-call") { rows.push(el("div", { class: "node" }, `${pad}→ ${n.program} ${short(summary(n.program, n.input), 80)}`)); if (n.children) walk(n.children, depth + 1); }
      else if (n.type === "prompt") rows.push(el("div", { class: "node" }, `${pad}› ${short(n.text, 100)}`));
      else rows.push(el("div", { class: "node dim" }, `${pad}${n.type}`));
    }
  };
  walk(tree.items, 0);
  box.replaceChildren(...rows);
}

async function showRequest(n) {
  const body = await api(`/api/request/${state.session}/${n}`);
  $("#request-view").textContent = JSON.stringify(body, null, 2);
  $("#request-view").dataset.n = n;
  $("#diff-view").textContent = n > 1 ? await api(`/api/diff/${state.session}/${n}`) : "(the first call: nothing to diff against)";
}

// ---- processes and programs ---------------------------------------------------

function renderProcesses() {
  const rows = [...state.running.entries()].map(([id, r]) => el("tr", { "data-process": id },
    el("td", {}, id), el("td", {}, r.program || ""), el("td", {}, r.body ? r.body.status : "running"),
    el("td", {}, el("button", { onclick: () => engine.cancel(id) }, "Cancel"))));
  $("#processes").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { class: "dim" }, "no process is running"))]));
}

async function showPrograms() {
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

// ---- tiles ----------------------------------------------------------------

async function mountTile(process, name) {
  if (state.tiles.has(process)) return;
  state.tiles.set(process, null);
  try {
    const mounted = await api(`/api/tile/${process}`, {});
    const frame = el("iframe", { sandbox: "allow-scripts", src: mounted.url, title: name || process });
    const tile = el("div", { class: "tile", "data-process": process },
      el("div", { class: "bar" }, el("span", {}, `${name || "tile"} · ${process}`),
        el("button", { class: "close", onclick: () => closeTile(process) }, "✕")), frame);
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

// ---- search, palette, views --------------------------------------------------

function showView(name) {
  for (const v of document.querySelectorAll(".view")) v.classList.toggle("active", v.id === `view-${name}`);
  for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t.dataset.view === name);
}

async function search(query) {
  showView("search");
  const read = await engine.scope([], { match_: query, limit: 50 });
  $("#results").replaceChildren(...read.chunks.map((c) => {
    const session = c.placements.find((p) => p.type === "instance" && p.scope.startsWith("s_"));
    return el("li", { onclick: () => session ? openSession(session.scope) : null },
      el("strong", {}, typeOf(c) || c.name || c.id), " ", short(bodyOf(c).text || bodyOf(c).title || JSON.stringify(c.body), 140));
  }));
}

function palette() {
  const box = $("#palette");
  const input = $("#palette-input");
  const actions = () => [
    { label: "New session", run: () => openSession(null) },
    { label: "Trace of this session", run: showTrace },
    { label: "Processes", run: () => showView("processes") },
    { label: "Programs", run: showPrograms },
    ...[...document.querySelectorAll("#sessions li")].slice(0, 200).map((li) => ({ label: `Session: ${li.textContent}`, run: () => openSession(li.dataset.session) })),
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

// ---- wiring -------------------------------------------------------------------

document.addEventListener("keydown", (e) => {
  if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "k") { e.preventDefault(); palette(); }
  else if (e.key === "/" && !["INPUT", "TEXTAREA"].includes(document.activeElement.tagName)) { e.preventDefault(); $("#search").focus(); }
});
$("#search").addEventListener("keydown", (e) => { if (e.key === "Enter" && e.target.value.trim()) search(e.target.value.trim()); });
$("#composer").addEventListener("submit", send);
$("#prompt").addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) send(e); });
$("#interrupt").addEventListener("click", interrupt);
$("#cancel").addEventListener("click", cancelRun);
$("#new-session").addEventListener("click", () => openSession(null));
$("#tab-session").addEventListener("click", () => showView("session"));
$("#tab-trace").addEventListener("click", showTrace);
$("#tab-processes").addEventListener("click", () => showView("processes"));
$("#tab-programs").addEventListener("click", showPrograms);

(async () => {
  await Promise.all([loadSessions(), loadRunning()]);
  document.body.dataset.ready = "sessions";
  window.__hc_ready = performance.now();
  // live: new sessions, processes starting and ending (this engine's or another's)
  await engine.subscribe(["session"], {}, () => loadSessions());
  let again = null;
  await engine.subscribe(["engine/process"], {}, () => { clearTimeout(again); again = setTimeout(loadRunning, 30); });
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
  if (wanted) openSession(wanted);
})();
