// window.hc: the protocol for a webview program's page, over its tile's
// WebSocket. `hc serve --http` injects this into the page a tile shows,
// with `window.__hc = {process, slot}` before it. Every call answers a
// Promise; errors carry the engine's `code` (BOUNDARY_VIOLATION, …).
(() => {
  const cfg = window.__hc;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws?slot=${encodeURIComponent(cfg.slot)}`);
  const pending = new Map();
  const subscribers = new Map();
  let next = 1;
  const opened = new Promise((ok, fail) => {
    ws.onopen = ok;
    ws.onerror = () => fail(Object.assign(new Error("the tile's socket failed"), { code: "TRANSPORT_CLOSED" }));
  });
  const failure = (body) => Object.assign(new Error(body.message), { code: body.code });
  ws.onmessage = (frame) => {
    const m = JSON.parse(frame.data);
    if (m.event) {
      const ids = m.subscriptionIds || [m.subscriptionId];
      if (m.event === "notification") { hc.onnotification && hc.onnotification(m); return; }
      for (const id of ids) { const cb = subscribers.get(id); if (cb) cb(m); }
      return;
    }
    const waiting = pending.get(m.id);
    if (!waiting) { hc.onerror && hc.onerror(m.error ? failure(m.error) : m); return; }
    pending.delete(m.id);
    if (m.error) waiting.fail(failure(m.error)); else waiting.ok(m.result);
  };
  ws.onclose = () => {
    for (const w of pending.values()) w.fail(Object.assign(new Error("the tile's socket closed"), { code: "TRANSPORT_CLOSED" }));
    pending.clear();
  };
  async function request(op, fields) {
    await opened;
    const id = next++;
    const answer = new Promise((ok, fail) => pending.set(id, { ok, fail }));
    ws.send(JSON.stringify({ id, op, ...fields }));
    return answer;
  }
  const hc = (window.hc = {
    process: cfg.process,
    /** Read scopes (their intersection): {scopes, chunks, total, as_of, …}. */
    scope: (scopes, opts = {}) => request("scope", { scopes, opts }),
    /** Apply a declaration: the commit record. */
    commit: (declaration) => request("commit", { declaration }),
    /** Start a program: {process}. */
    run: (program, args = {}) => request("run", { program, args }),
    /** Wait for processes: their final reads, by id. */
    await: (processes) => request("await", { processes }),
    /** End a process this tile started. */
    cancel: (process) => request("cancel", { process }),
    /** Hear of commits touching scopes: `callback(event)`; answers the id. */
    async subscribe(scopes, opts, callback) {
      if (typeof opts === "function") { callback = opts; opts = {}; }
      const answer = await request("subscribe", { scopes, opts });
      subscribers.set(answer.subscriptionId, callback);
      return answer.subscriptionId;
    },
    async unsubscribe(subscriptionId) {
      subscribers.delete(subscriptionId);
      return request("unsubscribe", { subscriptionId });
    },
    /** Forward data, unstored, to whoever watches this process. */
    notify: (data) => request("notify", { data }),
    /** End this tile's run: `result` (text or JSON) as its output, then completed. */
    async exit(result) {
      if (result !== undefined) {
        const text = typeof result === "string" ? result : JSON.stringify(result);
        await hc.commit({ chunks: [{ body: { text }, placements: [
          { scope: cfg.process, type: "instance" }, { scope: "engine/output", type: "instance" }] }] });
      }
      return request("finish", { status: "completed" });
    },
  });
})();
