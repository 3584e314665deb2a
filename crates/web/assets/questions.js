// What a run asks a person — a permission, its question, a plan to
// approve — and the answer. One answer per question, whoever gives it:
// the substrate keeps the first and refuses any other, so the page shows
// an answer only once it is recorded (its own, or the one taken before
// it, and by whom), and drops the question the moment any host answers.

import { el, engine, place, short, summary, changeOf, state } from "./core.js";

// Who this page is, on what it answers (the terminal says "answered on
// the page").
const BY = "the page";

// The scope a question was asked on: its session, or a sub-agent's process.
const askedOn = (chunk, kind) => chunk.placements.find((p) => p.type === "instance" && p.scope !== kind).scope;

// A question drawn: its chunk, its node, its run; `mine` while this
// page's own answer is being recorded ("pending") and once it is (the
// answer's chunk id).
function asked(chunk, kind, node) {
  const b = chunk.body || {};
  state.asked.set(chunk.id, { id: chunk.id, kind, where: askedOn(chunk, kind), node, process: b.process, mine: null });
  if (state.ended.has(b.process)) unanswered(chunk.id);
  return node;
}

const answerKind = (kind) => (kind === "permission-request" ? "permission-decision" : "user-answer");

// This page's answer: recorded, or refused because another host answered
// first — then that answer is shown, never this one.
async function answer(request, body) {
  const q = state.asked.get(request);
  if (!q || q.node.classList.contains("answered") || q.mine) return;
  q.mine = "pending";
  q.node.classList.add("answering");
  const kind = answerKind(q.kind);
  const said = { ...body, request, by: BY };
  try {
    const done = await engine.commit({ chunks: [{ body: said, placements: [{ scope: q.where, type: "instance" }, { scope: kind, type: "instance" }] }] });
    q.mine = (done && done.created && done.created[0]) || "mine";
    settle(request, said, "here");
  } catch (e) {
    q.mine = null;
    const taken = await recorded(q.where, kind, request).catch(() => null);
    if (taken) settle(request, taken, "first");
    else { q.node.classList.remove("answering"); q.node.append(el("span", { class: "status refused" }, ` cannot answer: ${e.message}`)); }
  }
}

// The answer recorded for `request`, if any.
async function recorded(where, kind, request) {
  const read = await engine.scope([where, kind], { limit: 100000 });
  const found = read.chunks.find((c) => (c.body || {}).request === request);
  return found ? found.body : null;
}

// An answer read from the substrate (this page's or another host's).
export function answered(chunk) {
  const b = chunk.body || {};
  const q = state.asked.get(b.request);
  // this page's own answer being recorded: the commit's outcome settles it
  if (q && q.mine === "pending") return;
  settle(b.request, b, q && q.mine === chunk.id ? "here" : "elsewhere");
}

// Who answered, in words.
function who(by, how) {
  if (how === "here") return "answered here";
  const first = how === "first" ? " first" : "";
  if (!by) return `answered${first} by another host`;
  // (a team's page signs it: "alice (the page)")
  const signed = by.endsWith(` (${BY})`) ? ` by ${by.slice(0, -(BY.length + 3))}` : "";
  if (by === BY || signed) {
    return how === "first" ? `answered first on another page${signed}` : `answered on the page${signed}`;
  }
  return `answered${first} by ${by}`;
}

// The question drawn as answered: its controls gone, the answer taken and who gave it.
function settle(request, b, how) {
  const q = state.asked.get(request);
  const node = q ? q.node : document.querySelector(`[data-request="${CSS.escape(request)}"]`);
  if (!node || node.classList.contains("answered")) return;
  node.classList.remove("answering", "unanswered");
  node.classList.add("answered");
  for (const control of node.querySelectorAll("button, input")) control.disabled = true;
  for (const old of node.querySelectorAll(".unanswered-note, .refused")) old.remove();
  const what = b.decision !== undefined ? b.decision : b.text;
  node.append(el("span", { class: "answer-shown", "data-answer": what, "data-by": b.by || "" },
    `→ ${short(what, 200)}`, el("span", { class: "who" }, ` · ${who(b.by, how)}`)));
}

// A question whose run ended without an answer.
export function unanswered(request) {
  const q = state.asked.get(request);
  if (!q || q.node.classList.contains("answered") || q.node.classList.contains("unanswered")) return;
  q.node.classList.add("unanswered");
  for (const control of q.node.querySelectorAll("button, input")) control.disabled = true;
  q.node.append(el("span", { class: "status unanswered-note" }, " — not answered: the run ended"));
}

// Every open question of `process`, now that it ended.
export function runEnded(process) {
  for (const q of state.asked.values()) if (q.process === process) unanswered(q.id);
}

export function renderPermission(box, chunk, b) {
  const choice = (decision, label) => el("button", { "data-choice": decision, onclick: () => answer(chunk.id, { decision, rule: b.rule }) }, label);
  // (what an edit or a write would change, shown before it is allowed)
  const change = changeOf(b.program, b.input);
  place(box, asked(chunk, "permission-request", el("div", { class: "item permission", "data-request": chunk.id },
    el("span", { class: "ask" }, `Allow ${b.program} ${short(summary(b.program, b.input), 200)}? (${b.reason}) `),
    choice("allow", "Allow"), choice("always", `Always (${b.rule})`), choice("deny", "Deny"),
    choice("never", `Deny, don't ask again (${b.rule})`), change || "")));
}

export function renderQuestion(box, chunk, b) {
  const input = el("input", { placeholder: (b.options || []).join(" / ") });
  const send = () => answer(chunk.id, { text: input.value });
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") send(); });
  place(box, asked(chunk, "user-question", el("div", { class: "item question", "data-request": chunk.id },
    el("span", { class: "ask" }, `? ${b.text} `), input, el("button", { onclick: send }, "Answer"))));
}

// A plan mode run's plan: shown; when the agent waits, approved (in the
// mode chosen) or answered with what to change.
export function renderPlan(box, chunk, b, drawn) {
  const node = el("div", { class: "item question plan", "data-request": chunk.id }, el("div", { class: "text md" }, drawn));
  if (!b.ask) { place(box, node); return; }
  const send = (text) => answer(chunk.id, { text });
  const input = el("input", { placeholder: "or say what to change" });
  node.append(el("button", { "data-choice": "default", onclick: () => send("default") }, "Approve"),
    el("button", { "data-choice": "accept-edits", onclick: () => send("accept-edits") }, "Approve, accept edits"),
    input, el("button", { onclick: () => send(input.value) }, "Send"));
  place(box, asked(chunk, "plan", node));
}
