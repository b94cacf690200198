"""How fast the dashboard page is with a 1,000-task plan, measured in the browser.

    .venv/bin/python benchmarks/bench_dashboard.py [--rounds N] [--tasks N]

The real ``memento dashboard`` serves a repository whose plan has 1,000 tasks (half done, one
blocked, one skipped) and a status log of 50 entries; Debian's Chromium opens it headless
through Playwright. Measured in the page, with the browser's own clock:

- first render: from the start of navigation to the end of the page's first full render
  (``performance.mark("memento:first-render")``: state fetched, 1,000 rows, timeline, notes);
  once with the server's state cached (a second tab on a running server) and once right
  after a change to the plan (the server parses and validates the plan again);
- filter: from the click on "Blocked" (999 rows hidden), and back on "All", to the second
  animation frame after it, i.e. once the browser has laid out and painted the change.

The baseline, measured in the same rounds, is a trivial page served from 127.0.0.1 that
fetches a tiny JSON, fills one row and sets the same mark, and whose "filter" flips the same
attribute on a one-row list. Each round runs every case once (they share the machine's
noise); the medians are printed with their ratio to the baseline's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/ from a checkout

from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright

from memento_gh.formats import status_log
from memento_gh.formats.status_log import FAILED, SUCCESS, TickEntry
from testing.browser import launch_chromium, start_dashboard
from testing.plans import large_plan
from testing.ticks import NOTES, STATUS, make_project

MARK = "memento:first-render"
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
BLOCKED, ALL = "button[data-filter=blocked]", "button[data-filter=all]"
BASELINE_PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>baseline</title>
<style>#list[data-filter="blocked"] > .task { display: none; }</style></head><body>
<button data-filter="blocked">Blocked</button><button data-filter="all">All</button>
<div id="list" data-filter="all"><div class="task">loading</div></div>
<script src="/app.js"></script></body></html>"""
BASELINE_SCRIPT = b"""fetch("/state.json").then((r) => r.json()).then((data) => {
  document.querySelector("#list .task").textContent = data.name;
  performance.mark("memento:first-render");
});
for (const b of document.querySelectorAll("button")) {
  b.addEventListener("click", () => {
    document.getElementById("list").dataset.filter = b.dataset.filter;
  });
}"""
BASELINE_FILES = {
    "/": (BASELINE_PAGE, "text/html"),
    "/app.js": (BASELINE_SCRIPT, "text/javascript"),
    "/state.json": (b'{"name": "one task"}', "application/json"),
}
# Click, then wait two frames: the first callback runs before the frame is produced.
MEASURE_CLICK = """async (selector) => {
  const button = document.querySelector(selector);
  const start = performance.now();
  button.click();
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  return performance.now() - start;
}"""


class _Baseline(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body, kind = BASELINE_FILES.get(self.path, (b"", "text/plain"))
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def baseline_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Baseline)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


def status_text(entries: int) -> str:
    text = STATUS
    for tick in range(1, entries + 1):
        entry = TickEntry(
            time=datetime(2025, 1, 15, 8, tzinfo=timezone.utc).replace(minute=tick % 60),
            tick=tick,
            task=f"T-{tick:05d} [MODULE:mod_{tick % 17}] Implement step {tick - 1}",
            outcome=SUCCESS if tick % 4 else FAILED,
            duration=60 + tick,
            verify_head="1 passed" if tick % 4 else "AssertionError: 1 != 2",
            exit_code=0 if tick % 4 else 1,
            retry=None if tick % 4 else 1,
            max_retries=3,
            log=f"logs/tick_{tick}.log",
        )
        text = status_log.append(text, status_log.render_entry(entry))
    return text


def first_render(browser: Browser, url: str) -> float:
    """Milliseconds from navigation to the mark, in a new tab (no earlier page to unload).
    Polled from here: the page's CSP refuses the string evaluation ``wait_for_function``
    would do inside it."""
    page = browser.new_page(viewport=VIEWPORT)
    try:
        return _mark_time(page, url)
    finally:
        page.close()


def _mark_time(page: Page, url: str) -> float:
    page.goto(url)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = page.evaluate(f"performance.getEntriesByName({MARK!r}).map((m) => m.startTime)")
        if found:
            return float(found[0])
        time.sleep(0.005)
    raise SystemExit(f"{url} did not render within a minute")


def click(page: Page, selector: str) -> float:
    return float(page.evaluate(MEASURE_CLICK, selector))


def run(rounds: int, tasks: int) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        project = make_project(
            Path(scratch),
            large_plan(tasks),
            files={"docs/TICK_STATUS.md": status_text(50), "docs/HUMAN_NOTES.md": NOTES},
        )
        with (
            start_dashboard(project.root) as dashboard,
            baseline_server() as baseline,
            sync_playwright() as playwright,
        ):
            browser = launch_chromium(playwright)
            pages = {url: browser.new_page(viewport=VIEWPORT) for url in (baseline, dashboard.url)}
            for url, page in pages.items():
                _mark_time(page, url)
            size = len(dashboard.get("/api/state").body)

            def after_a_change() -> float:
                os.utime(project.plan_path)  # a new version: the server must build it again
                return first_render(browser, dashboard.url)

            cases: dict[str, Callable[[], float]] = {
                "baseline: first render": lambda: first_render(browser, baseline),
                "baseline: filter": lambda: click(pages[baseline], BLOCKED),
                "baseline: unfilter": lambda: click(pages[baseline], ALL),
                "first render": lambda: first_render(browser, dashboard.url),
                "filter to Blocked": lambda: click(pages[dashboard.url], BLOCKED),
                "back to All": lambda: click(pages[dashboard.url], ALL),
                "first render, state rebuilt": after_a_change,
            }
            for case in cases.values():  # warm up: imports, caches, JIT
                case()
            times: dict[str, list[float]] = {name: [] for name in cases}
            for _ in range(rounds):
                for name, case in cases.items():
                    times[name].append(case())
            browser.close()
    report(times, rounds, tasks, size)
    return 0


def report(times: dict[str, list[float]], rounds: int, tasks: int, size: int) -> None:
    median = {name: statistics.median(values) for name, values in times.items()}
    base = {
        "first render": median["baseline: first render"],
        "first render, state rebuilt": median["baseline: first render"],
        "filter to Blocked": median["baseline: filter"],
        "back to All": median["baseline: unfilter"],
    }
    print(f"{tasks:,} tasks, /api/state {size / 1024:,.0f} KiB, median of {rounds} rounds\n")
    print("| case | median | baseline | x baseline |")
    print("|---|---:|---:|---:|")
    for name, against in base.items():
        ours = median[name]
        print(f"| {name} | {ours:.1f} ms | {against:.1f} ms | {ours / against:.1f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--tasks", type=int, default=1000)
    args = parser.parse_args()
    return run(args.rounds, args.tasks)


if __name__ == "__main__":
    raise SystemExit(main())
