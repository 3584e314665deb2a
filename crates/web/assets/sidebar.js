// The sidebar: every session, newest first, each with when it was last
// active, how its last run stands (running, waiting on a person, done,
// failed…) and what its runs cost — read from `/api/sessions`, again as
// sessions, runs and questions change.

import { $, el, api, cost, when, state } from "./core.js";
import { openSession } from "./conversation.js";

let loading = null, again = false;

// The list, read again (one read at a time; a change meanwhile reads once more).
export async function loadSessions() {
  if (loading) { again = true; return loading; }
  loading = (async () => {
    do {
      again = false;
      const rows = await api("/api/sessions").catch(() => null);
      if (rows) draw(rows);
    } while (again);
  })();
  try { await loading; } finally { loading = null; }
}

function draw(rows) {
  state.rows = new Map(rows.map((r) => [r.id, r]));
  const frag = document.createDocumentFragment();
  for (const r of rows) {
    const spent = r.cost_usd === null || r.cost_usd === undefined ? "" : cost(r.cost_usd);
    const changed = r.lines_added || r.lines_removed ? `+${r.lines_added} −${r.lines_removed}` : "";
    // an agent in the background: where it works, what it waits on
    const where = [r.branch, r.host].filter(Boolean).join(" · ");
    // who it runs for, and who asked when that is someone else
    const who = [r.person && `by ${r.person}${r.via ? ` (${r.via})` : ""}`, r.asked_by && r.asked_by !== r.person && `asked by ${r.asked_by}`].filter(Boolean).join(" · ");
    const about = [r.title, r.id, where, who, r.question && `waits on: ${r.question}`, r.error && `failed: ${r.error}`].filter(Boolean).join("\n");
    frag.append(el("li", { "data-session": r.id, "data-status": r.status, title: about, class: r.id === state.session ? "selected" : "", onclick: () => openSession(r.id) },
      el("span", { class: "title" }, r.title || r.id),
      el("span", { class: "meta" },
        el("span", { class: `badge ${r.status}` }, r.status),
        where ? el("span", { class: "where dim" }, where) : "",
        who ? el("span", { class: "who dim" }, who) : "",
        el("span", { class: "time", title: r.active }, when(r.active)),
        el("span", { class: "cost" }, spent),
        changed ? el("span", { class: "lines dim", title: `lines added and removed; tools ran ${(r.tool_ms / 1000).toFixed(1)} s` }, changed) : ""),
      r.question ? el("span", { class: "question" }, `↳ ${r.question}`) : ""));
  }
  $("#sessions").replaceChildren(frag);
  const shown = state.rows.get(state.session);
  if (shown) $("#session-title").textContent = shown.title || shown.id;
  markRunning();
}

// Which sessions have a run going (as this page knows it now), and
// whether the one shown can be interrupted.
export function markRunning() {
  const live = new Set([...state.running.values()].map((r) => r.session).filter(Boolean));
  for (const li of document.querySelectorAll("#sessions li")) {
    li.classList.toggle("running", live.has(li.dataset.session));
    li.classList.toggle("selected", li.dataset.session === state.session);
  }
  const mine = [...state.running.values()].find((r) => r.session === state.session && r.program === "agent");
  $("#interrupt").disabled = !mine;
  $("#cancel").disabled = !mine;
}
