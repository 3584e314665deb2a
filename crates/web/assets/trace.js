// The Trace tab: the session as `hc trace` shows it — runs with their
// totals and time, each reply's tokens and cost, every tool call with ✓ ✗
// or ⊘, its time and its whole result (folded), sub-agents nested — and,
// for a chosen model call, the exact request sent and a coloured diff
// against the call before it, named.

import { $, el, api, short, summary, folded, tokens, cost, plural, millis, seconds, showView, state } from "./core.js";

const dot = (...parts) => parts.filter((p) => p !== "" && p !== null && p !== undefined).join(" · ");

export async function showTrace() {
  showView("trace");
  const box = $("#trace");
  if (!state.session) { box.replaceChildren(el("p", { class: "dim" }, "Open a session to see its trace.")); return; }
  const session = state.session;
  const tree = await api(`/api/trace/${session}`);
  if (session !== state.session) return;
  // a request shown of another session goes
  if ($("#request-view").dataset.session !== session) clearRequest();
  const rows = [el("div", { class: "node head" }, el("strong", {}, "session "), session, el("span", { class: "dim" }, `  ${dot(tree.title || "", tree.created || "")}`))];
  walk(tree.items, 0, rows);
  const calls = rows.filter((r) => r.querySelector && r.querySelector(".request")).length;
  if (calls) rows.push(el("div", { class: "node dim" }, `${plural(calls, "model call")}: choose one to see the exact request sent and what changed from the call before`));
  box.replaceChildren(...rows);
}

// A row: a mark, words, and what hangs under it, indented `depth` levels.
function row(depth, cls, ...children) {
  return el("div", { class: `node ${cls}`, style: `--depth:${depth}` }, ...children);
}

const requestButton = (n) => el("button", { class: "request", "data-n": n, onclick: () => showRequest(n) }, `request #${n}`);

function walk(items, depth, rows) {
  for (const n of items) {
    const add = (cls, ...children) => { const r = row(depth, cls, ...children); rows.push(r); return r; };
    const under = (text, cls = "out") => rows.push(row(depth + 1, "body", folded(text, cls)));
    switch (n.type) {
      case "run": {
        const stop = n.stop_reason || n.status;
        // who ran it and who asked, when someone else asked (as `hc trace`)
        const others = n.asked_by && n.asked_by !== n.person;
        const by = others && n.person ? `by ${n.person}${n.via ? ` (${n.via})` : ""}` : "";
        const asked = others ? `asked by ${n.asked_by}` : "";
        add("run", el("strong", {}, "▶ run "), el("span", { class: "dim" }, dot(n.process, stop, plural(n.turns, "turn"), tokens(n.usage), cost(n.cost_usd), seconds(millis(n.started, n.ended)), by, asked)));
        break;
      }
      case "prompt": add("said-prompt", el("strong", {}, `› ${n.from === "hook" ? "hook" : "prompt"} `), short(n.text, 200)); break;
      case "context": add("dim", `◦ context: ${dot(n.model, plural((n.tools || []).length, "tool"), `as of commit ${n.as_of}`, n.date)}`); break;
      case "answer": {
        const stop = n.stop_reason && !["end_turn", "tool_use"].includes(n.stop_reason) ? n.stop_reason : "";
        add("answer", el("strong", {}, `● answer${n.call ? ` #${n.call}` : ""} `), el("span", { class: "dim" }, dot(tokens(n.usage), cost(n.cost_usd), stop)), " ", n.call ? requestButton(n.call) : "");
        if (n.text) under(n.text, "text");
        break;
      }
      case "tool-call": call(n, depth, rows); break;
      case "compaction": {
        add("compaction", el("strong", {}, `⟳ compaction${n.call ? ` #${n.call}` : ""} `), el("span", { class: "dim" }, tokens(n.usage)), " ", n.call ? requestButton(n.call) : "");
        under(n.text.split("]\n\n").slice(-1)[0], "text");
        break;
      }
      case "permission-request": add("ask", `? permission for ${n.program} ${short(summary(n.program, n.input), 120)} — ${n.reason}`); break;
      case "permission-decision": add("said", `→ ${n.decision}${n.message ? ` (${short(n.message, 100)})` : ""}`); break;
      case "question": add("ask", `? ${short(n.text, 200)}`); break;
      case "answer-from-person": add("said", `→ ${short(n.text, 200)}`); break;
      case "interrupt": add("bad", "✗ interrupted by the person"); break;
      case "todo": add("", `☐ plan: ${(n.items || []).filter((i) => i.status === "completed").length} of ${(n.items || []).length} done`); break;
      case "plan": add("", el("strong", {}, n.ask ? "◆ plan, put to the person " : "◆ plan (the run's result) ")); under(n.text, "text"); break;
      case "hook-callback": add("", `⚑ ${n.event} hook `, el("span", { class: "dim" }, n.callback_id)); break;
      case "hook-answer": add(n.error ? "bad" : "said", n.error ? `→ failed: ${n.error}` : `→ ${short(JSON.stringify(n.output), 120)}`); break;
      case "llm-call": {
        const what = n.purpose === "compression" ? `compression${n.call ? ` #${n.call}` : ""}${n.block ? ` of ${n.block} ${n.path}` : ""}` : `call_llm${n.call ? ` #${n.call}` : ""}`;
        add("", el("strong", {}, `◆ ${what} `), el("span", { class: "dim" }, dot(n.model, tokens(n.usage), cost(n.cost_usd))), " ", n.call ? requestButton(n.call) : "");
        if (n.purpose !== "compression") under(`? ${n.prompt}`, "text");
        if (n.error) add("bad", `✗ ${n.error}`); else under(`→ ${n.text}`, "text");
        break;
      }
      case "block-save": add("", el("strong", {}, `▤ ${n.block} ${n.path} ← `), short(n.text, 160)); break;
      default: add("dim", n.type);
    }
  }
}

// A tool call: ✓ ✗ ⊘ (… while it runs), its input in a few words, its
// time; its whole result under it; a sub-agent's own tree below.
function call(n, depth, rows) {
  const r = n.result;
  const [mark, how] = !r ? ["…", "pending"] : r.denied ? ["⊘", "denied"] : r.is_error ? ["✗", "failed"] : ["✓", "done"];
  const took = millis(n.started, n.ended);
  const extra = dot(r && r.denied ? "denied" : "", took === null ? "" : `${took} ms`, n.children ? n.process : "");
  rows.push(row(depth, `call ${how}`, el("span", { class: "mark" }, mark), " ", el("strong", {}, n.program), " ",
    short(summary(n.program, n.input), 160), extra ? el("span", { class: "dim" }, ` · ${extra}`) : ""));
  if (r) rows.push(row(depth + 1, "body", folded(r.text)));
  if (n.children) walk(n.children, depth + 1, rows);
}

function clearRequest() {
  for (const id of ["#request-view", "#diff-view", "#request-title"]) $(id).replaceChildren();
  delete $("#request-view").dataset.n;
  $("#diff-title").textContent = "Choose a request to see what changed from the one before, and its exact body.";
}

// The tree again, once changes to the session shown settle, while the tab shows.
let again = null;
export function traceChanged() {
  if (!$("#view-trace").classList.contains("active")) return;
  clearTimeout(again);
  again = setTimeout(showTrace, 300);
}

// Call `n`'s exact request and, from the second on, a coloured diff
// against call n−1's, each titled with the requests it shows.
export async function showRequest(n) {
  const session = state.session;
  for (const b of document.querySelectorAll("#trace .request")) b.classList.toggle("chosen", b.dataset.n == n);
  const body = await api(`/api/request/${session}/${n}`);
  if (session !== state.session) return;
  const view = $("#request-view");
  view.textContent = JSON.stringify(body, null, 2);
  view.dataset.n = n;
  view.dataset.session = session;
  $("#request-title").textContent = `request #${n}: the exact body sent`;
  const diff = $("#diff-view");
  if (n < 2) {
    $("#diff-title").textContent = `request #${n} is the session's first: nothing before it to compare`;
    diff.replaceChildren();
    diff.dataset.compares = "";
    return;
  }
  const text = await api(`/api/diff/${session}/${n}`);
  $("#diff-title").textContent = `request #${n} against request #${n - 1}: what changed`;
  diff.dataset.compares = `${n - 1} ${n}`;
  diff.replaceChildren(...text.split("\n").map((line) => {
    const cls = line.startsWith("+++") || line.startsWith("---") ? "file" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "same";
    return el("span", { class: cls }, line + "\n");
  }));
  if (!text.trim()) diff.textContent = "(the same body)";
}
