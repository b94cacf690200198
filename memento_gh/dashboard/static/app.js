// memento dashboard: renders /api/state, polls /api/version, sends controls.
// Plain script, no build step. Every string from the server is escaped with esc(), except the
// `html` fields, which the server renders from Markdown with HTML escaped (markup.py).
"use strict";

(() => {
  const TOKEN = document.querySelector('meta[name="memento-token"]').content;
  const POLL_MS = Number(document.querySelector('meta[name="memento-poll-ms"]').content) || 2000;
  // Started with an agent (--agent/--agent-cmd): blocked tasks offer the architect's revision.
  const ARCHITECT = document.querySelector('meta[name="memento-architect"]').content === "on";
  // Symbols every system font has (DejaVu, Liberation): the page must not depend on emoji.
  const ICONS = { done: "✓", pending: "○", blocked: "✗", running: "◔", skipped: "−" };
  const GROUPS = { done: "completed", skipped: "skipped", blocked: "blocked" };
  const OUTCOMES = {
    success: "✓ SUCCESS", failed: "✗ FAILED", blocked: "⊘ BLOCKED", deferred: "⏳ DEFERRED",
  };
  const MODES = { auto: "● AUTO", paused: "❚❚ PAUSED", stopped: "■ STOPPED" };
  const $ = (id) => document.getElementById(id);

  let state = null;
  let shownSeq = 0;
  let askedSeq = 0;
  let lastFetch = 0;
  let deferred = false; // a row was not redrawn because someone is typing in it
  let firstRendered = false;
  const taskRows = new Map();
  const tickRows = new Map();

  // -- helpers ------------------------------------------------------------------------------

  const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  function esc(value) {
    return String(value ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c]);
  }

  function fromHtml(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content.firstElementChild;
  }

  // Durations arrive spelled by the server (memento_gh/durations.py). A time ago or ahead
  // moves on between polls, so the page counts it, to the minute, in the same spelling.
  function roughly(seconds) {
    const minutes = Math.floor(Math.max(60, seconds) / 60);
    if (minutes < 60) return `${minutes}m`;
    const hours = Math.floor(minutes / 60);
    if (hours >= 48) return `${Math.round(hours / 24)}d`;
    return minutes % 60 ? `${hours}h${minutes % 60}m` : `${hours}h`;
  }

  function ago(iso) {
    const seconds = (Date.now() - Date.parse(iso)) / 1000;
    if (!Number.isFinite(seconds)) return esc(iso);
    if (seconds < 45) return "just now";
    return `${roughly(seconds)} ago`;
  }

  function until(iso) {
    const seconds = (Date.parse(iso) - Date.now()) / 1000;
    if (seconds <= 30) return "due now";
    return `in ${roughly(seconds)}`;
  }

  function clock(iso) {
    const moment = new Date(iso);
    if (Number.isNaN(moment.getTime())) return esc(iso);
    const sameDay = moment.toDateString() === new Date().toDateString();
    const time = moment.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    return sameDay ? time : `${moment.toLocaleDateString([], { month: "short", day: "numeric" })} ${time}`;
  }

  function toast(message, error = false) {
    const item = document.createElement("div");
    item.textContent = message;
    if (error) item.className = "error";
    $("toast").append(item);
    setTimeout(() => item.remove(), error ? 9000 : 5000);
  }

  function banner(message) {
    $("banner").hidden = !message;
    $("banner").textContent = message || "";
  }

  async function api(path, body) {
    const options = { cache: "no-store", headers: {} };
    if (body !== undefined) {
      options.method = "POST";
      options.headers = { "Content-Type": "application/json", "X-Memento-Token": TOKEN };
      options.body = JSON.stringify(body);
    }
    const response = await fetch(path, options);
    const type = response.headers.get("content-type") || "";
    const data = type.includes("json") ? await response.json() : await response.text();
    if (!response.ok) {
      const error = new Error((data && data.error) || `${response.status} ${response.statusText}`);
      error.status = response.status;
      throw error;
    }
    return data;
  }

  // -- state ----------------------------------------------------------------------------------

  async function refresh() {
    const seq = ++askedSeq;
    lastFetch = Date.now();
    const fresh = await api("/api/state");
    if (seq < shownSeq) return; // an older answer that arrived late
    shownSeq = seq;
    state = fresh;
    try {
      render();
    } catch (error) {
      state = null; // fetch and draw again on the next poll, the banner up meanwhile
      throw error;
    }
  }

  async function poll() {
    try {
      if (!state) {
        await refresh(); // the first look needs the state anyway: skip asking for its version
      } else {
        const { version } = await api("/api/version");
        const scheduled = state.schedule?.at && Date.parse(state.schedule.at) < Date.now();
        if (version !== state.version || (scheduled && Date.now() - lastFetch > 30000)) {
          await refresh();
        }
      }
      banner(null);
    } catch (error) {
      console.error(error);
      banner(`The dashboard cannot show the plan: ${error.message}. Trying again…`);
    }
    setTimeout(poll, POLL_MS);
  }

  async function send(action, body, button) {
    if (button) button.disabled = true;
    try {
      const answer = await api(`/api/controls/${action}`, body);
      toast(answer.message);
      return true;
    } catch (error) {
      toast(error.message, true);
      return false;
    } finally {
      if (button) button.disabled = false;
      refresh().catch((error) => banner(error.message));
    }
  }

  // -- rendering ------------------------------------------------------------------------------

  function render() {
    if (!state) return;
    renderHeader();
    renderProgress();
    renderTasks();
    renderTimeline();
    renderNotes();
    if (!firstRendered) {
      firstRendered = true;
      // Two frames later the first one has been laid out and painted: the benchmark's end.
      requestAnimationFrame(() => requestAnimationFrame(() => performance.mark("memento:first-render")));
    }
  }

  function renderHeader() {
    const title = (state.title || state.plan || "").replace(/^MASTER_PLAN:\s*/, "");
    $("project").textContent = title;
    document.title = `${title} · memento`;
    const mode = $("mode");
    mode.dataset.mode = state.mode;
    mode.textContent = state.running && state.mode === "auto" ? "● RUNNING" : MODES[state.mode] || state.mode;
    const last = state.last_tick;
    $("last-tick").innerHTML = last
      ? `Last tick: #${esc(last.tick)} · <span title="${esc(last.time)}">${ago(last.time)}</span> · ` +
        `${OUTCOMES[last.outcome] || esc(last.outcome)} ${esc(last.task || "")}`
      : "Last tick: none yet";
    const plan = state.schedule;
    if (plan && plan.at) {
      $("next-tick").innerHTML = `Next tick: <span title="${esc(plan.at)}">${until(plan.at)}</span> ` +
        `<span class="hint">(cron <code>${esc(plan.cron)}</code> ${esc(plan.tz)}, ${esc(plan.source)})</span>`;
    } else if (plan && plan.error) {
      $("next-tick").textContent = `Next tick: unknown (${plan.source}: ${plan.error})`;
    } else {
      $("next-tick").textContent = "Next tick: no schedule known";
    }
    const running = state.tasks.filter((task) => task.status === "running");
    $("running").innerHTML = running
      .map((task) => `Running: <code>${esc(task.id)}</code>` +
        (task.claimed ? ` since ${ago(task.claimed.at)} (${esc(task.claimed.worker)})` : ""))
      .join(" · ");
    for (const button of document.querySelectorAll("[data-mode-action]")) {
      const target = { resume: "auto", pause: "paused", stop: "stopped" }[button.dataset.modeAction];
      button.disabled = state.mode === target;
    }
    $("mode-hint").textContent = state.next ? state.next.message : "";
    $("alert").hidden = !state.alert;
    $("alert").textContent = state.alert || "";
  }

  function bar(element, done, total) {
    const percent = total ? Math.round((100 * done) / total) : 0;
    element.firstElementChild.style.width = `${percent}%`;
    element.setAttribute("aria-valuenow", String(percent));
    return percent;
  }

  // Done and skipped apart: a skipped task is not done, though the plan goes on without it
  // (the bars and percentages count both, as a phase's dependants do).
  function counted(done, skipped, total) {
    return `${done}/${total}${skipped ? `, ${skipped} skipped` : ""}`;
  }

  function renderProgress() {
    const percent = bar($("overall-bar"), state.completed + state.skipped, state.total);
    $("overall-count").textContent = `${counted(state.completed, state.skipped, state.total)} (${percent}%)`;
    $("phases").innerHTML = state.phases
      .map((phase) => {
        const pct = phase.total ? Math.round((100 * phase.done) / phase.total) : 0;
        const blocked = phase.blocked ? ` · ${phase.blocked} blocked` : "";
        const counts = counted(phase.done - phase.skipped, phase.skipped, phase.total);
        return `<li><span class="name" title="${esc(phase.title)}">${esc(phase.name)}: ${esc(phase.title)}</span>` +
          `<div class="bar" role="progressbar" aria-label="${esc(phase.name)}" aria-valuenow="${pct}">` +
          `<span></span></div><span>${counts}${blocked}</span></li>`;
      })
      .join("");
    // Widths are set through the CSSOM: the page's CSP refuses style attributes in markup.
    for (const phaseBar of $("phases").querySelectorAll(".bar")) {
      phaseBar.firstElementChild.style.width = `${phaseBar.getAttribute("aria-valuenow")}%`;
    }
    $("blocked-count").textContent = `Blocked: ${state.blocked}${state.blocked ? " ⚠" : ""}`;
    $("eta").textContent = state.eta_line;
    $("spend").textContent = state.spend_line;
    const pull = state.pull_request;
    $("pull-request-line").hidden = !pull;
    $("pull-request").textContent = pull ? pullText(pull) : "";
    $("pull-request").href = pull ? pull.url : "#";
    $("plan-errors").hidden = !state.errors;
    $("plan-errors").textContent = state.errors
      ? `The plan has ${state.errors} validation error(s): run memento validate.` : "";
  }

  function pullText(pull) {
    const checks = pull.checks ? `, checks ${pull.checks}` : "";
    return `Pull request #${pull.number} (${pull.state}${checks})`;
  }

  function group(task) {
    return GROUPS[task.status] || "pending";
  }

  function taskState(task) {
    const most = state.max_retries;
    if (task.status === "blocked") return `BLOCKED · retries ${task.retries}/${most}`;
    if (task.status === "running") return "running";
    if (task.status === "skipped") return "skipped";
    if (task.status === "done") return task.last && task.last.duration_text ? task.last.duration_text : "done";
    return task.retries ? `retry ${task.retries}/${most}` : task.phase;
  }

  // A row is plain elements, its body made when it opens: <details> rows cost three times as
  // much to parse and lay out, which a 1,000-task plan feels (benchmarks/bench_dashboard.py).
  function taskRow(task) {
    const module = task.module ? `<span class="module">[${esc(task.module)}]</span>` : "";
    return `<div class="task" data-id="${esc(task.id)}" data-status="${esc(task.status)}" ` +
      `data-group="${group(task)}"><div class="summary" role="button" tabindex="0" ` +
      `aria-expanded="false"><span class="icon" aria-hidden="true">${ICONS[task.status] || "•"}` +
      `</span><code class="id">${esc(task.id)}</code>${module}<span class="desc">${task.html}` +
      `</span><span class="state">${esc(taskState(task))}</span></div></div>`;
  }

  function field(name, value) {
    return value ? `<dt>${esc(name)}</dt><dd>${value}</dd>` : "";
  }

  function lastRun(run) {
    if (!run) return "";
    const retry = run.retry != null && run.outcome !== "success" ? ` (retry ${run.retry}/${run.max_retries})` : "";
    return `Tick #${esc(run.tick)} · ${clock(run.time)} · ${OUTCOMES[run.outcome] || esc(run.outcome)}${esc(retry)}` +
      (run.duration_text ? ` · ${esc(run.duration_text)}` : "");
  }

  function taskBody(task) {
    const run = task.last;
    const id = esc(task.id);
    const facts = [
      field("Status", esc(task.status)),
      field("Phase", esc(task.phase)),
      field("Retries", `${esc(task.retries)}/${esc(state.max_retries)}`),
      field("Depends on", task.depends.map((dep) => `<code>${esc(dep)}</code>`).join(", ")),
      field("Claimed", task.claimed ? `${clock(task.claimed.at)} by ${esc(task.claimed.worker)}` : ""),
      field("Last run", lastRun(run)),
      field("Verify output", run && run.verify ? `<pre>${esc(run.verify)}</pre>` : ""),
      field("Error analysis", run && run.outcome !== "success" ? esc(run.analysis) : ""),
      field("Tick died", run ? esc(run.tick_died) : ""),
      field("Agent failure", run ? esc(run.agent_failure) : ""),
      field("Conflict", run ? esc(run.conflict) : ""),
      field("Guard violations", run ? esc(run.violations) : ""),
      field("Line", `${esc(state.plan)}:${esc(task.line)}`),
    ].join("");
    const retry = task.status === "blocked" ? `<button type="button" data-act="retry">↺ Reset retries</button>` : "";
    const revise = ARCHITECT && task.status === "blocked"
      ? `<button type="button" data-act="revise">Propose a revision</button>` : "";
    const skip = ["pending", "blocked"].includes(task.status)
      ? `<button type="button" data-act="skip-open">Skip…</button>` : "";
    return `<dl>${facts}</dl><div class="actions"><button type="button" data-act="note-open">Add note</button>` +
      `${retry}${skip}${revise}</div>` +
      `<form class="inline-form" data-form="note" hidden><textarea rows="2" aria-label="Note for ${id}" ` +
      `placeholder="Note for ${id} (Markdown)"></textarea><button type="submit">Send note</button></form>` +
      `<form class="inline-form" data-form="skip" hidden><input aria-label="Why skip ${id}" ` +
      `placeholder="Why (optional, kept in the status log)"><button type="submit">Skip ${id}</button></form>`;
  }

  function isOpen(row) {
    return row.classList.contains("open");
  }

  function setOpen(row, open, task) {
    row.classList.toggle("open", open);
    row.firstElementChild.setAttribute("aria-expanded", String(open));
    row.querySelector(".task-body")?.remove();
    if (open) row.insertAdjacentHTML("beforeend", `<div class="task-body">${taskBody(task)}</div>`);
  }

  function typingIn(element) {
    const focused = document.activeElement;
    return Boolean(focused && focused.matches("textarea, input") && element.contains(focused));
  }

  /** Keep a list of rows in step with `items`, rebuilding only the rows whose data changed. */
  function syncList(container, cache, items, keyOf, build, carry, empty) {
    if (!items.length) {
      container.innerHTML = `<p class="hint">${esc(empty)}</p>`;
      cache.clear();
      return;
    }
    const counts = new Map();
    const wanted = items.map((item) => {
      let key = keyOf(item);
      const n = counts.get(key) || 0;
      counts.set(key, n + 1);
      if (n) key += `#${n}`;
      return { key, item, sig: JSON.stringify(item) };
    });
    if (!cache.size) {
      // First build: one innerHTML is much faster than a thousand inserts.
      container.innerHTML = wanted.map((want) => build(want.item)).join("");
      [...container.children].forEach((el, i) => cache.set(wanted[i].key, { el, ...wanted[i] }));
      return;
    }
    const next = new Map();
    let previous = null;
    for (const want of wanted) {
      let row = cache.get(want.key);
      if (row && row.sig !== want.sig && typingIn(row.el)) {
        deferred = true; // never yank a form from under the person typing in it
      } else if (!row || row.sig !== want.sig) {
        const el = fromHtml(build(want.item));
        if (row) {
          carry(row.el, el, want.item);
          row.el.replaceWith(el);
        }
        row = { el, ...want };
      }
      next.set(want.key, row);
      const slot = previous ? previous.nextElementSibling : container.firstElementChild;
      if (slot !== row.el) container.insertBefore(row.el, slot);
      previous = row.el;
    }
    for (const [key, row] of cache) if (!next.has(key)) row.el.remove();
    cache.clear();
    for (const [key, row] of next) cache.set(key, row);
  }

  function carryTask(old, fresh, task) {
    if (!isOpen(old)) return;
    setOpen(fresh, true, task);
    for (const form of old.querySelectorAll("form[data-form]")) {
      const twin = fresh.querySelector(`form[data-form="${form.dataset.form}"]`);
      if (!twin) continue;
      twin.hidden = form.hidden;
      const input = form.querySelector("textarea, input");
      twin.querySelector("textarea, input").value = input.value;
    }
  }

  function renderTasks() {
    const counts = { all: state.tasks.length, pending: 0, completed: 0, skipped: 0, blocked: 0 };
    for (const task of state.tasks) counts[group(task)] += 1;
    for (const button of document.querySelectorAll("button[data-filter]")) {
      button.querySelector(".count").textContent = String(counts[button.dataset.filter]);
    }
    syncList($("task-list"), taskRows, state.tasks, (task) => task.id, taskRow, carryTask, "The plan has no tasks yet.");
  }

  function tickKey(record) {
    return `${record.kind}:${record.time}:${record.tick ?? ""}:${record.task ?? ""}:${record.text ?? ""}`;
  }

  function tickRow(record) {
    const key = esc(tickKey(record));
    if (record.kind === "event") {
      return `<li data-key="${key}"><span class="when" title="${esc(record.time)}">${clock(record.time)}</span>` +
        `<span class="event">${esc(record.text)}</span></li>`;
    }
    const retry = record.retry != null && record.outcome !== "success" ? ` (retry ${record.retry}/${record.max_retries})` : "";
    const part = record.continuation ? ` (${record.continuation[0]}/${record.continuation[1]})` : "";
    const detail = record.summary;
    const url = /^https?:\/\//.test(record.log_url || "")
      ? `<a href="${esc(record.log_url)}" target="_blank" rel="noopener noreferrer">Run log ↗</a>` : "";
    return `<li class="tick" data-key="${key}" data-outcome="${esc(record.outcome || "")}"><div>` +
      `<span class="when" title="${esc(record.time)}">${clock(record.time)}</span>` +
      `<strong>Tick #${esc(String(record.tick).padStart(3, "0"))}${esc(part)}</strong> · ` +
      `<code>${esc(record.task || "?")}</code> · ${OUTCOMES[record.outcome] || esc(record.outcome || "?")}` +
      `${esc(retry)}${record.duration_text ? ` · ${esc(record.duration_text)}` : ""}</div>` +
      `<div class="detail">${esc(record.title)}</div>` +
      (detail ? `<div class="detail"><code>${esc(detail)}</code></div>` : "") +
      `<div class="actions">${record.log ? '<button type="button" data-act="log">View full log</button>' : ""}` +
      `${url}${record.task ? '<button type="button" data-act="diff">View diff</button>' : ""}</div>` +
      `<div class="panel"></div></li>`;
  }

  function carryTick(old, fresh) {
    fresh.querySelector(".panel")?.replaceWith(old.querySelector(".panel"));
  }

  function renderTimeline() {
    syncList($("timeline-list"), tickRows, state.timeline, tickKey, tickRow, carryTick, "No tick has run yet.");
  }

  function noteItem(note) {
    const badge = note.read ? "✓ read" : "○ pending";
    const source = note.source ? ` · from ${esc(note.source)}` : "";
    return `<li data-line="${esc(note.line)}"><div class="head">${clock(note.time)} → <strong>${esc(note.target)}</strong>` +
      ` · ${badge}${source}</div><div class="body">${note.html}</div></li>`;
  }

  function renderNotes() {
    const pending = state.notes.filter((note) => !note.read && !note.archived);
    const read = state.notes.filter((note) => note.read && !note.archived);
    const archived = state.notes.filter((note) => note.archived);
    const lists = [["notes-pending", "pending-count", pending], ["notes-read", "read-count", read],
      ["notes-archived", "archived-count", archived]];
    for (const [list, count, notes] of lists) {
      const html = notes.map(noteItem).join("") || '<li class="hint">none</li>';
      if ($(list).dataset.html !== html) {
        $(list).innerHTML = html;
        $(list).dataset.html = html;
      }
      $(count).textContent = String(notes.length);
    }
    // A note reaches a task when it runs next: finished tasks are not offered as targets.
    const select = $("note-target");
    const ids = state.tasks.filter((task) => !["completed", "skipped"].includes(group(task)))
      .map((task) => task.id);
    const signature = ids.join(",");
    if (select.dataset.ids !== signature) {
      const chosen = select.value;
      select.innerHTML = ['<option value="global">global</option>',
        ...ids.map((id) => `<option value="${esc(id)}">${esc(id)}</option>`)].join("");
      select.value = ids.includes(chosen) ? chosen : "global";
      select.dataset.ids = signature;
    }
  }

  // -- actions --------------------------------------------------------------------------------

  function taskOf(element) {
    const row = element.closest(".task");
    return row && state.tasks.find((task) => task.id === row.dataset.id);
  }

  async function onTaskClick(event) {
    const summary = event.target.closest(".summary");
    if (summary && !event.target.closest("a")) {
      const row = summary.parentElement;
      setOpen(row, !isOpen(row), taskOf(row));
      return;
    }
    const button = event.target.closest("button[data-act]");
    if (!button) return;
    const task = taskOf(button);
    if (!task) return;
    const row = button.closest(".task");
    if (button.dataset.act === "retry") {
      await send("retry", { task: task.id, seen: task.status }, button);
    } else if (button.dataset.act === "revise") {
      await propose(task, button);
    } else {
      const form = row.querySelector(`form[data-form="${button.dataset.act.replace("-open", "")}"]`);
      form.hidden = !form.hidden;
      if (!form.hidden) form.querySelector("textarea, input").focus();
    }
  }

  async function onTaskSubmit(event) {
    event.preventDefault();
    const form = event.target;
    const task = taskOf(form);
    const input = form.querySelector("textarea, input");
    const button = form.querySelector("button");
    let done;
    if (form.dataset.form === "note") {
      done = await send("note", { target: task.id, text: input.value }, button);
    } else {
      done = await send("skip", { task: task.id, seen: task.status, why: input.value }, button);
    }
    if (done) {
      input.value = "";
      form.hidden = true;
    }
  }

  // -- the architect's revision ---------------------------------------------------------------

  async function propose(task, button) {
    button.disabled = true;
    toast(`The architect is revising ${task.id}…`);
    try {
      const answer = await api("/api/architect/propose", { task: task.id, seen: task.status });
      toast(answer.message);
      showRevision(answer.diff);
    } catch (error) {
      toast(error.message, true);
    } finally {
      button.disabled = false;
    }
  }

  function showRevision(diff) {
    $("revision-diff").textContent = diff || "";
    $("revision").hidden = !diff;
  }

  async function decideRevision(action, button) {
    button.disabled = true;
    try {
      const answer = await api(`/api/architect/${action}`, {});
      toast(answer.message);
      showRevision("");
    } catch (error) {
      toast(error.message, true);
    } finally {
      button.disabled = false;
      refresh().catch((error) => banner(error.message));
    }
  }

  async function onTickClick(event) {
    const button = event.target.closest("button[data-act]");
    if (!button) return;
    const row = button.closest("li");
    const record = [...tickRows.values()].find((item) => item.el === row)?.item;
    const panel = row.querySelector(".panel");
    if (!record) return;
    if (panel.dataset.kind === button.dataset.act) {
      panel.replaceChildren();
      panel.dataset.kind = "";
      return;
    }
    const path = button.dataset.act === "log"
      ? `/api/log?path=${encodeURIComponent(record.log)}`
      : `/api/diff?tick=${encodeURIComponent(record.tick)}&task=${encodeURIComponent(record.task)}`;
    button.disabled = true;
    try {
      const text = await api(path);
      const pre = document.createElement("pre");
      pre.className = button.dataset.act;
      if (button.dataset.act === "diff") colourDiff(pre, text);
      else pre.textContent = text;
      panel.replaceChildren(pre);
      panel.dataset.kind = button.dataset.act;
    } catch (error) {
      toast(error.message, true);
    } finally {
      button.disabled = false;
    }
  }

  function colourDiff(pre, text) {
    for (const line of text.split("\n")) {
      const span = document.createElement("span");
      if (line.startsWith("+") && !line.startsWith("+++")) span.className = "add";
      else if (line.startsWith("-") && !line.startsWith("---")) span.className = "del";
      else if (line.startsWith("@@")) span.className = "hunk";
      span.textContent = `${line}\n`;
      pre.append(span);
    }
  }

  function start() {
    for (const button of document.querySelectorAll("[data-mode-action]")) {
      button.addEventListener("click", () => send(button.dataset.modeAction, {}, button));
    }
    for (const button of document.querySelectorAll("button[data-filter]")) {
      button.addEventListener("click", () => {
        $("task-list").dataset.filter = button.dataset.filter;
        for (const other of document.querySelectorAll("button[data-filter]")) {
          other.setAttribute("aria-pressed", String(other === button));
        }
      });
    }
    const list = $("task-list");
    list.addEventListener("click", onTaskClick);
    list.addEventListener("submit", onTaskSubmit);
    list.addEventListener("keydown", (event) => {
      if ((event.key === "Enter" || event.key === " ") && event.target.matches(".summary")) {
        event.preventDefault();
        event.target.click();
      }
    });
    list.addEventListener("focusout", () => {
      if (deferred) setTimeout(() => { deferred = false; render(); }, 0);
    });
    $("timeline-list").addEventListener("click", onTickClick);
    $("revision-apply").addEventListener("click", (event) => decideRevision("apply", event.target));
    $("revision-discard").addEventListener("click", (event) => decideRevision("discard", event.target));
    $("note-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      const text = $("note-text");
      const done = await send("note", { target: $("note-target").value, text: text.value },
        event.target.querySelector("button"));
      if (done) text.value = "";
    });
    setInterval(() => state && renderHeader(), 15000); // "5m ago" moves on by itself
    poll();
  }

  start();
})();
