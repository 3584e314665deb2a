// The session shown: its conversation as the substrate holds it, live —
// prompts, replies (markdown, drawn safely), tool calls with their whole
// results in their place, sub-agents nested under their calls, what the
// run asks — and the header's totals over the session's runs, counted as
// `hc trace` counts them.

import { $, el, engine, api, typeOf, bodyOf, place, short, summary, changeOf, folded, plural, inputTokens, cost, showView, state } from "./core.js";
import { markdown } from "./markdown.js";
import { renderPermission, renderQuestion, renderPlan, answered, runEnded } from "./questions.js";
import { markRunning, loadSessions } from "./sidebar.js";
import { traceChanged } from "./trace.js";

export async function openSession(id) {
  if (state.sessionSub) { engine.unsubscribe(state.sessionSub); state.sessionSub = null; }
  state.session = id;
  for (const held of [state.rendered, state.streams, state.calls, state.results, state.runs, state.asked, state.ended]) held.clear();
  $("#conversation").replaceChildren();
  const head = $("#status");
  head.textContent = "";
  for (const k of Object.keys(head.dataset)) delete head.dataset[k];
  showView("session");
  markRunning();
  if (!id) { $("#session-title").textContent = "a new session starts with your message"; return; }
  history.replaceState(null, "", `#session=${id}`);
  const row = state.rows.get(id);
  $("#session-title").textContent = row ? row.title || id : id;
  const sub = await engine.subscribe([id], { deep: true }, (event) => inOrder(() => onSessionEvent(event, id)));
  if (state.session !== id) { engine.unsubscribe(sub); return; }
  state.sessionSub = sub;
  // what the session holds, then each change as it came: in order
  await inOrder(async () => {
    const read = await engine.scope([id], { limit: 100000 });
    if (state.session === id) for (const c of read.chunks) render(c, id);
  });
}

// One read and draw after another, as the changes came (each awaits reads:
// run side by side, a later commit's chunk could be drawn first).
let queue = Promise.resolve();
// (a step that fails is said, and the next still runs)
const inOrder = (step) => (queue = queue.then(step).catch((e) => console.error(e)));

async function onSessionEvent(event, session) {
  if (session !== state.session) return;
  // (not awaited: the new read queues behind this step)
  if (event.event === "lagged") { openSession(state.session); return; }
  if (event.event !== "scope_changed") return;
  traceChanged();
  const c = event.commit;
  const ids = [...new Set([...c.created, ...c.chunks_modified])];
  for (const id of ids) {
    try {
      const read = await engine.scope([id], { limit: 1 });
      const chunk = read.scopes[0];
      if (chunk && session === state.session) render(chunk, session);
    } catch { /* removed, or out of reach */ }
  }
}

// Where a chunk belongs: the session, or the sub-agent whose process it
// is on (`null`: not drawn here — a tool's own process, a sub-agent not
// drawn yet).
function homeOf(chunk, session) {
  const on = chunk.placements.filter((p) => p.type === "instance");
  if (on.some((p) => p.scope === session)) return session;
  const sub = on.find((p) => p.scope.startsWith("p_") && document.querySelector(`[data-child-session="${CSS.escape(p.scope)}"]`));
  return sub ? sub.scope : null;
}

function containerOf(home) {
  if (home === state.session) return $("#conversation");
  return document.querySelector(`[data-child-session="${CSS.escape(home)}"] > .children`);
}

export function render(chunk, session) {
  const type = typeOf(chunk);
  const b = bodyOf(chunk);
  if (type === "engine/process") return renderRun(chunk, b);
  if (state.rendered.has(chunk.id) && type !== "answer") return;
  const home = homeOf(chunk, session);
  const box = home && containerOf(home);
  if (!box) return;
  state.rendered.add(chunk.id);
  const line = (text) => place(box, el("div", { class: "item status", "data-id": chunk.id }, text));
  switch (type) {
    case "prompt": renderPrompt(box, home === session && !b.from, chunk, b, session); break;
    case "answer": renderAnswer(box, chunk, b); break;
    case "tool-call": renderCall(box, home, chunk, b); break;
    case "tool-result": renderResult(home, b); break;
    case "permission-request": renderPermission(box, chunk, b); break;
    case "user-question": renderQuestion(box, chunk, b); break;
    case "plan": renderPlan(box, chunk, b, markdown(b.text)); break;
    case "permission-decision": case "user-answer": answered(chunk); break;
    case "interrupt": line("✗ interrupted"); break;
    case "todo": line(`☐ plan: ${(b.items || []).filter((i) => i.status === "completed").length} of ${(b.items || []).length} done`); break;
    case "compaction": line("⟳ compacted"); break;
    case "hook-callback": line(`⚑ ${b.event} hook`); break;
    case "llm-call": line(b.purpose === "compression" ? `◆ compressed ${b.block} ${b.path}: ${short(b.text || b.error || "", 120)}` : `◆ call_llm (${b.model}): ${short(b.text || b.error || "", 120)}`); break;
    case "block-save": line(`▤ ${b.block} ${b.path} ← saved`); break;
    default: break;
  }
  scrollDown();
}

// A prompt; the person's own on the session carries a rewind: the files
// back as they were before it, the conversation forked there.
function renderPrompt(box, own, chunk, b, session) {
  const node = el("div", { class: "item prompt", "data-id": chunk.id }, b.text);
  if (own) node.append(el("button", { class: "rewind", title: "Put the files back as they were before this prompt, and go on from here in a fork of the conversation", onclick: () => rewindTo(session, chunk.id) }, "↶ rewind"));
  place(box, node);
}

async function rewindTo(session, prompt) {
  if (!confirm("Put the project's files back as they were before this prompt, and go on from here in a fork of the conversation?")) return;
  let done;
  try {
    done = await api("/api/rewind", { session, prompt });
  } catch (e) {
    if (!String(e.message).includes("changed since") || !confirm(`${e.message}\n\nOverwrite them?`)) { alert(e.message); return; }
    done = await api("/api/rewind", { session, prompt, force: true });
  }
  await loadSessions();
  if (done.session) await openSession(done.session);
  $("#status").textContent = done.text;
}

// A reply: the text streamed so far becomes the recorded text, drawn as
// markdown (a reply of tool calls alone has no text: nothing to show).
function renderAnswer(box, chunk, b) {
  if (!b.text) return;
  const streamed = state.streams.get(b.process);
  if (streamed) {
    state.streams.delete(b.process);
    streamed.classList.remove("streaming");
    streamed.dataset.id = chunk.id;
    streamed.querySelector(".text").replaceChildren(markdown(b.text));
  } else if (!document.querySelector(`[data-id="${CSS.escape(chunk.id)}"]`)) {
    place(box, el("div", { class: "item answer", "data-id": chunk.id }, el("div", { class: "text md" }, markdown(b.text))));
  }
}

function renderCall(box, home, chunk, b) {
  const node = el("div", { class: "item tool", "data-tool-use-id": b.tool_use_id, "data-id": chunk.id, "data-process": b.process },
    el("div", { class: "head" }, el("span", { class: "mark" }, "…"), " ", el("span", { class: "name" }, b.program), " ",
      el("span", { class: "summary" }, short(summary(b.program, b.input), 160))),
    el("div", { class: "progress" }), el("div", { class: "result" }));
  const change = b.program === "edit" ? changeOf(b.program, b.input) : null;
  if (change) node.append(change);
  const key = `${home}|${b.tool_use_id}`;
  state.calls.set(key, node);
  place(box, node);
  if (b.program === "agent" && b.process) {
    node.append(el("details", { "data-child-session": b.process, open: "" }, el("summary", {}, `sub-agent · ${b.process}`), el("div", { class: "children" })));
    loadChildren(b.process);
  }
  const early = state.results.get(key);
  if (early) { state.results.delete(key); drawResult(node, early); }
}

// A sub-agent's own conversation, under its call (after what is being
// drawn now).
function loadChildren(process) {
  const session = state.session;
  inOrder(async () => {
    const read = await engine.scope([process], { limit: 100000 }).catch(() => null);
    if (read && session === state.session) for (const c of read.chunks) render(c, session);
  });
}

function renderResult(home, b) {
  const key = `${home}|${b.tool_use_id}`;
  const node = state.calls.get(key);
  if (node) drawResult(node, b); else state.results.set(key, b);
}

// A call's result, whole (folded beyond a few lines), and how it went.
function drawResult(node, b) {
  const how = b.denied ? "denied" : b.is_error ? "failed" : "done";
  node.classList.add(how);
  node.querySelector(".mark").textContent = b.denied ? "⊘" : b.is_error ? "✗" : "✓";
  node.querySelector(".progress").textContent = "";
  node.querySelector(".result").replaceChildren(folded((b.denied ? "denied: " : "") + (b.text || "")));
}

// A run on the session: whether it goes on, and the header's totals.
function renderRun(chunk, b) {
  const live = b.status === "running" || b.status === "pending";
  if (live) {
    const on = chunk.placements.find((p) => p.type === "instance" && p.scope.startsWith("s_"));
    state.running.set(chunk.id, { session: on && on.scope, program: chunk.name, body: b });
  } else {
    state.running.delete(chunk.id);
    state.ended.add(chunk.id);
    runEnded(chunk.id);
  }
  if (chunk.placements.some((p) => p.type === "instance" && p.scope === state.session)) {
    state.runs.set(chunk.id, b);
    drawTotals();
  }
  markRunning();
}

// The session's turns, tokens and cost: over its runs (each run's totals
// count its sub-agents'), as `hc trace` and `hc sessions` add them.
function drawTotals() {
  let turns = 0, input = 0, output = 0, usd = null, toolMs = 0, added = 0, removed = 0;
  for (const b of state.runs.values()) {
    turns += b.turns || 0;
    input += inputTokens(b.usage);
    output += (b.usage || {}).output_tokens || 0;
    if (b.cost_usd !== undefined && b.cost_usd !== null) usd = (usd || 0) + b.cost_usd;
    toolMs += b.tool_ms || 0;
    added += b.lines_added || 0;
    removed += b.lines_removed || 0;
  }
  const head = $("#status");
  const tools = toolMs ? ` · tools ${(toolMs / 1000).toFixed(1)} s` : "";
  const lines = added + removed ? ` · +${added} −${removed} lines` : "";
  head.textContent = `${plural(turns, "turn")} · ${input} in / ${output} out${usd === null ? "" : ` · ${cost(usd)}`}${tools}${lines}`;
  Object.assign(head.dataset, { session: state.session, turns, input, output, cost: usd === null ? "" : usd, toolMs, linesAdded: added, linesRemoved: removed });
}

// text and progress as the agent streams them, painted as they come
engine.onNotification((m) => {
  const d = m.data || {};
  if (d.kind === "text_delta") {
    let node = state.streams.get(m.process);
    if (!node) {
      // a sub-agent's under its call; another session's run is not drawn here
      const nested = document.querySelector(`[data-child-session="${CSS.escape(m.process)}"] > .children`);
      const run = state.running.get(m.process);
      if (!nested && (!state.session || (run && run.session && run.session !== state.session))) return;
      const mine = nested || $("#conversation");
      node = el("div", { class: "item answer streaming" }, el("div", { class: "text" }));
      state.streams.set(m.process, node);
      mine.append(node);
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
    const node = [...state.calls.values()].find((n) => n.dataset.toolUseId === d.tool_use_id && !n.classList.contains("done"));
    if (node) node.querySelector(".progress").textContent = "running…";
  }
});

function scrollDown() { const c = $("#conversation"); c.scrollTop = c.scrollHeight; }

export async function send(event) {
  event && event.preventDefault();
  const prompt = $("#prompt").value;
  if (!prompt.trim()) return;
  $("#prompt").value = "";
  try {
    const background = $("#background").checked;
    const started = await api("/api/run", { session: background ? undefined : state.session, prompt, agent: $("#agent").value || undefined, background: background || undefined });
    if (background) {
      $("#background").checked = false;
      await loadSessions();
      await openSession(started.session);
      return;
    }
    state.running.set(started.process, { session: started.session, program: "agent" });
    if (started.session !== state.session) { await loadSessions(); await openSession(started.session); }
    markRunning();
  } catch (e) { $("#conversation").append(el("div", { class: "item status" }, `hc: ${e.message}`)); }
}

export async function interrupt() {
  if (!state.session) return;
  await engine.commit({ chunks: [{ body: { text: "interrupted by the person" }, placements: [{ scope: state.session, type: "instance" }, { scope: "interrupt", type: "instance" }] }] });
}

export async function cancelRun() {
  for (const [id, r] of state.running) if (r.session === state.session) await engine.cancel(id).catch(() => {});
}
