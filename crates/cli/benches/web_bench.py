"""Measured in the browser (`cargo bench -p hc --bench web`): the page's
first load to its sessions shown, a commit reaching a subscribed tile,
and a streamed delta reaching the screen. Prints one JSON object."""

import json
import statistics
import sys

from playwright.sync_api import sync_playwright

URL, CHROMIUM = sys.argv[1], sys.argv[2]
LOADS, COMMITS = 15, 200


def quantiles(xs):
    xs = sorted(xs)
    return {"median": statistics.median(xs), "p95": xs[int(len(xs) * 0.95) - 1], "max": xs[-1], "n": len(xs)}


with sync_playwright() as p:
    b = p.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"])
    page = b.new_page(viewport={"width": 1280, "height": 800})
    page.goto(URL)
    page.wait_for_selector("body[data-ready=sessions]", timeout=30000)
    sessions = page.locator("#sessions li").count()
    # first load: navigation start to the sessions listed (the cookie is set)
    loads = []
    for _ in range(LOADS):
        page.goto(URL.split("/?")[0] + "/")
        page.wait_for_selector("body[data-ready=sessions]", timeout=30000)
        loads.append(page.evaluate("() => window.__hc_ready"))
    # a tile subscribed to its own process; a commit from the page's host
    # socket lands there: from just before the commit is sent to the frame
    page.click("#tab-programs")
    page.click("li[data-program=notes]")
    page.click("#run-form button[type=submit]")
    page.wait_for_selector(".tile iframe")
    frame = page.frames[-1]
    frame.wait_for_function("() => window.hc !== undefined")
    commits = frame.evaluate("""async (n) => {
      const me = hc.process;
      let resolve = null;
      await hc.subscribe([me], () => { if (resolve) { const r = resolve; resolve = null; r(performance.now()); } });
      const out = [];
      for (let i = 0; i < n; i++) {
        const seen = new Promise((ok) => (resolve = ok));
        const t0 = performance.now();
        hc.commit({chunks: [{body: {text: 'n' + i}, placements: [{scope: me, type: 'instance'}, {scope: 'engine/output', type: 'instance'}]}]});
        out.push((await seen) - t0);
      }
      return out;
    }""", COMMITS)
    # a streamed answer: each delta from its arrival to the frame painting it
    page.goto(URL.split("/?")[0] + "/")
    page.wait_for_selector("body[data-ready=sessions]")
    page.evaluate("() => (window.__hc_paint = [])")
    page.fill("#prompt", "tell a long story")
    page.press("#prompt", "Enter")
    page.wait_for_selector(".answer[data-id]", timeout=60000)
    paints = page.evaluate("() => window.__hc_paint")
    print(json.dumps({"sessions": sessions, "first_load_ms": quantiles(loads),
                      "commit_to_tile_ms": quantiles(commits), "delta_to_paint_ms": quantiles(paints)}))
    b.close()
