// The page `hc serve --http` shows: a host of the engine over /ws (the
// protocol unchanged, one JSON object a frame). The host draws the frame —
// sessions, the conversation, the trace, processes, programs — and
// webview programs draw themselves in tiles (sandboxed iframes).
//
// core.js: the socket, the API, shared helpers · sidebar.js: the sessions
// · conversation.js and questions.js: the session shown · markdown.js ·
// trace.js: the Trace tab · panels.js: processes, programs, tiles, search,
// the palette.

import { $, engine, showView } from "./core.js";
import { loadSessions } from "./sidebar.js";
import { openSession, send, interrupt, cancelRun } from "./conversation.js";
import { showTrace } from "./trace.js";
import { loadRunning, showPrograms, search, palette } from "./panels.js";

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

// Calls `f` once a burst of changes has settled.
const settled = (f, ms) => { let t = null; return () => { clearTimeout(t); t = setTimeout(f, ms); }; };

(async () => {
  await Promise.all([loadSessions(), loadRunning()]);
  document.body.dataset.ready = "sessions";
  window.__hc_ready = performance.now();
  // live: sessions, processes starting and ending, questions asked and
  // answered (this engine's or another's) — the sidebar's status and cost
  const sessions = settled(loadSessions, 60);
  await engine.subscribe(["session"], {}, sessions);
  const running = settled(() => { loadRunning(); sessions(); }, 30);
  await engine.subscribe(["engine/process"], {}, running);
  for (const kind of ["permission-request", "user-question", "plan", "permission-decision", "user-answer"]) {
    await engine.subscribe([kind], {}, sessions);
  }
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
  if (wanted) openSession(wanted);
})();
