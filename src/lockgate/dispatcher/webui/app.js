"use strict";
// lockgate's Web UI. It reads through the Dispatcher's REST API only (Flink's endpoints under
// v1/ and lockgate's job report), refreshes every REFRESH_MS, and builds every element with
// the DOM's own calls: job names, uids, paths and exception texts are user data, and they
// reach the page as text nodes and attribute values, never as markup.

(() => {
  const REFRESH_MS = 2500;
  const POLL_MS = 1000; // a savepoint's status, while it is in progress
  const TOKEN_KEY = "lockgate.token";
  const SVG_NS = "http://www.w3.org/2000/svg";
  const HEX32 = /^[0-9a-f]{32}$/;
  const TERMINAL = new Set(["FINISHED", "CANCELED", "FAILED"]);
  // Java's Long.MIN_VALUE and MAX_VALUE (no watermark yet, end of event time) arrive as
  // doubles beyond these
  const NO_WATERMARK = -(2 ** 53);
  const END_OF_TIME = 2 ** 53;

  // Elements -------------------------------------------------------------------------------

  function build(element, attributes, children) {
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
      else element.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      element.append(child instanceof Node ? child : String(child)); // a string: a text node
    }
    return element;
  }
  const h = (tag, attributes, ...children) =>
    build(document.createElement(tag), attributes, children);
  const svg = (tag, attributes, ...children) =>
    build(document.createElementNS(SVG_NS, tag), attributes, children);
  const byId = (id) => document.getElementById(id);
  const muted = (text) => h("p", { class: "muted" }, text);
  function show(element, parts) {
    element.replaceChildren();
    build(element, {}, parts);
  }

  // Numbers and times ----------------------------------------------------------------------

  const pad = (n, width = 2) => String(n).padStart(width, "0");

  function time(ms, withMillis = false) {
    if (ms === null || ms === undefined || ms <= 0) return "–";
    const d = new Date(ms);
    const date = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    const clock = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    return `${date} ${clock}${withMillis ? `.${pad(d.getMilliseconds(), 3)}` : ""}`;
  }

  function duration(ms) {
    if (ms === null || ms === undefined || ms < 0) return "–";
    if (ms < 1000) return `${Math.round(ms)} ms`;
    const seconds = ms / 1000;
    if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) return `${minutes} min ${Math.floor(seconds % 60)} s`;
    return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  }

  function bytes(n) {
    if (n < 1024) return `${Math.round(n)} B`;
    const units = ["KiB", "MiB", "GiB", "TiB"];
    let value = n / 1024;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
  }

  const number = (n) => Number(n).toLocaleString("en-US", { maximumFractionDigits: 1 });
  const compact = (n) =>
    Number(n).toLocaleString("en-US", { notation: "compact", maximumFractionDigits: 1 });
  const clip = (text, length) =>
    text.length <= length ? text : `${text.slice(0, Math.max(1, length - 1))}…`;

  function statusBadge(state) {
    const name = String(state).replace(/[^A-Z_]/g, "");
    return h("span", { class: `status status-${name}` }, String(state));
  }

  // The REST API ---------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  const token = () => sessionStorage.getItem(TOKEN_KEY) || "";

  // Paths are relative to the page, so that a proxy's path prefix is kept.
  async function call(method, path, body) {
    const headers = { Accept: "application/json" };
    if (token()) headers.Authorization = `Bearer ${token()}`;
    const init = { method, headers, cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      throw new ApiError(0, `the Dispatcher does not answer (${error.message})`);
    }
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      const errors = data && Array.isArray(data.errors) ? data.errors.map(String) : [];
      const text = errors.length ? errors.join("; ") : response.statusText;
      throw new ApiError(response.status, `${response.status}: ${text}`);
    }
    return data;
  }

  const get = (path) => call("GET", path);

  async function getIfFound(path) {
    try {
      return await get(path);
    } catch (error) {
      if (error.status === 404) return null;
      throw error;
    }
  }

  // The job list ---------------------------------------------------------------------------

  function listPage() {
    const rows = h("tbody");
    const none = h(
      "p",
      { class: "muted", hidden: true },
      "No jobs yet. Submit one with ",
      h("code", {}, "lockgate run -d job.py"),
      ".",
    );
    const columns = ["Name", "Status", "Started", "Duration", "Tasks", "Job ID"];
    const root = h(
      "section",
      { class: "jobs" },
      h("h1", {}, "Jobs"),
      h(
        "table",
        { id: "jobs" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            columns.map((c) => h("th", {}, c)),
          ),
        ),
        rows,
      ),
      none,
    );

    async function refresh() {
      const { jobs } = await get("v1/jobs/overview");
      document.title = "Jobs – lockgate";
      rows.replaceChildren(
        ...jobs.map((job) =>
          h(
            "tr",
            { class: "job", "data-jid": job.jid },
            h("td", {}, h("a", { href: `#/jobs/${encodeURIComponent(job.jid)}` }, job.name)),
            h("td", {}, statusBadge(job.state)),
            h("td", { class: "time" }, time(job["start-time"])),
            h("td", { class: "number" }, duration(job.duration)),
            h("td", { class: "number" }, job.tasks.total),
            h("td", {}, h("code", {}, job.jid)),
          ),
        ),
      );
      none.hidden = jobs.length > 0;
    }
    return { root, refresh };
  }

  // A job ----------------------------------------------------------------------------------

  function jobPage(jid) {
    const section = (id, title, ...more) => {
      const body = h("div", { class: "body" });
      return { element: h("section", { id }, h("h2", {}, title), ...more, body), body };
    };
    const head = h("div", { id: "job-head" });
    const actions = actionsPanel(jid);
    const graph = section("graph", "Tasks and stages");
    const epochs = section("epochs", "Epochs");
    const checkpoints = section("checkpoints", "Checkpoints");
    const state = section("state", "State size per operator");
    const watermarks = section("watermarks", "Watermarks per operator");
    const failures = section("failures", "Restarts and exceptions");
    const parts = [graph, epochs, checkpoints, state, watermarks, failures];
    const root = h(
      "div",
      { class: "job" },
      head,
      actions,
      parts.map((p) => p.element),
    );
    const opened = new Set(); // exceptions whose stack trace is shown, kept across refreshes
    let shown = null; // what the sections show, to leave them alone while it stays the same

    async function refresh() {
      const [job, lockgate, exceptions] = await Promise.all([
        getIfFound(`v1/jobs/${jid}`),
        getIfFound(`v1/lockgate/jobs/${jid}/report`),
        getIfFound(`v1/jobs/${jid}/exceptions`),
      ]);
      if (job === null) {
        root.replaceChildren(
          h("h1", {}, "No such job"),
          muted(`The Dispatcher has no job ${jid}.`),
        );
        return;
      }
      document.title = `${job.name} – lockgate`;
      show(head, jobHead(job, lockgate));
      const now = JSON.stringify([job.state, lockgate, exceptions]);
      if (now === shown) return;
      shown = now;
      if (lockgate === null) {
        for (const part of parts)
          part.body.replaceChildren(muted("The job's driver has not reported yet."));
        return;
      }
      const report = lockgate.report;
      show(graph.body, taskGraph(report.vertices));
      show(epochs.body, epochCharts(report.epochs));
      show(checkpoints.body, checkpointPart(report));
      show(state.body, stateSizes(report));
      show(watermarks.body, watermarkTable(report));
      show(failures.body, failurePart(report, lockgate.attempts, exceptions, opened));
    }
    return { root, refresh };
  }

  function jobHead(job, lockgate) {
    const facts = [
      ["Job ID", h("code", {}, job.jid)],
      ["Started", time(job["start-time"])],
      ["Ended", time(job["end-time"])],
      ["Duration", duration(job.duration)],
    ];
    if (lockgate !== null) {
      const report = lockgate.report;
      facts.push(["Driver attempts", lockgate.attempts]);
      facts.push(["Spark UI", sparkUi(report.spark_ui, job.state)]);
      if (report.restored_from) facts.push(["Restored from", h("code", {}, report.restored_from)]);
      facts.push(["Last report", time(report.written_ms)]);
    }
    return [
      h("p", {}, h("a", { href: "#/" }, "← Jobs")),
      h("h1", {}, h("span", { id: "job-name" }, job.name), " ", statusBadge(job.state)),
      h(
        "dl",
        { class: "facts" },
        facts.map(([name, value]) => h("div", {}, h("dt", {}, name), h("dd", {}, value))),
      ),
    ];
  }

  function sparkUi(url, state) {
    if (!url || !/^https?:\/\//i.test(url)) return "–";
    if (TERMINAL.has(state))
      return h("span", { class: "muted" }, `${url} (gone with the job's driver)`);
    return h("a", { id: "spark-ui", href: url, target: "_blank", rel: "noopener noreferrer" }, url);
  }

  // Savepoint, stop and cancel -------------------------------------------------------------

  function actionsPanel(jid) {
    const target = h("input", {
      id: "target-directory",
      type: "text",
      placeholder: "empty: the job's configured savepoint directory",
      spellcheck: "false",
    });
    const drain = h("input", { id: "drain", type: "checkbox" });
    const log = h("ul", { id: "operations" });
    const directory = () => target.value.trim() || null;
    const untilDone = (answer) => awaitSavepoint(jid, answer);

    const savepoint = () =>
      operate(log, "Savepoint", untilDone, () =>
        call("POST", `v1/jobs/${jid}/savepoints`, {
          "target-directory": directory(),
          "cancel-job": false,
          formatType: "CANONICAL",
          triggerId: null,
        }),
      );
    const stop = () => {
      if (!window.confirm(`Stop job ${jid} with a savepoint?`)) return;
      operate(log, "Stop with savepoint", untilDone, () =>
        call("POST", `v1/jobs/${jid}/stop`, {
          targetDirectory: directory(),
          drain: drain.checked,
          formatType: "CANONICAL",
          triggerId: null,
        }),
      );
    };
    const cancel = () => {
      if (!window.confirm(`Cancel job ${jid}?`)) return;
      operate(
        log,
        "Cancel",
        async () => "requested",
        () => call("PATCH", `v1/jobs/${jid}?mode=cancel`),
      );
    };

    return h(
      "section",
      { id: "actions" },
      h("h2", {}, "Savepoint, stop, cancel"),
      h(
        "div",
        { class: "row" },
        h("label", { for: "target-directory" }, "Savepoint directory"),
        target,
        h("label", { class: "check" }, drain, " drain first (stop only)"),
      ),
      h(
        "div",
        { class: "row" },
        h("button", { id: "savepoint", type: "button", onclick: savepoint }, "Trigger savepoint"),
        h("button", { id: "stop", type: "button", onclick: stop }, "Stop with savepoint"),
        h(
          "button",
          { id: "cancel", type: "button", class: "danger", onclick: cancel },
          "Cancel job",
        ),
      ),
      h("p", { class: "muted" }, "They send the token given at the top of the page."),
      log,
    );
  }

  // One request to change the job, as a line of the log: sent, then its outcome.
  async function operate(log, what, outcome, send) {
    const line = h("li", { class: "pending" });
    const say = (kind, text) => {
      line.className = kind;
      line.textContent = `${time(Date.now())} ${what}: ${text}`;
    };
    say("pending", "sending…");
    log.prepend(line);
    try {
      const answer = await send();
      say("pending", "in progress…");
      say("ok", await outcome(answer));
    } catch (error) {
      say("error", error.message);
    }
  }

  // Flink's asynchronous operation: poll its status until it is COMPLETED, with a location
  // or a failure cause.
  async function awaitSavepoint(jid, answer) {
    const request = answer && answer["request-id"];
    if (!HEX32.test(String(request))) throw new ApiError(0, "the answer has no request id");
    for (;;) {
      await new Promise((done) => setTimeout(done, POLL_MS));
      const status = await get(`v1/jobs/${jid}/savepoints/${request}`);
      if (status.status.id !== "COMPLETED") continue;
      const operation = status.operation || {};
      if (operation.location) return `completed: ${operation.location}`;
      const cause = operation["failure-cause"];
      throw new ApiError(0, `failed: ${cause ? cause["stack-trace"] : "no reason given"}`);
    }
  }

  // The job graph --------------------------------------------------------------------------

  function stages(vertices) {
    // Tasks joined by FORWARD edges run in one stage; every other edge is a shuffle
    const leader = new Map(vertices.map((v) => [v.index, v.index]));
    const find = (i) => {
      while (leader.get(i) !== i) i = leader.get(i);
      return i;
    };
    for (const v of vertices) {
      for (const input of v.inputs) {
        if (input.ship_strategy === "FORWARD" && leader.has(input.vertex)) {
          leader.set(find(v.index), find(input.vertex));
        }
      }
    }
    const numbers = new Map();
    const stage = new Map();
    for (const v of vertices) {
      const root = find(v.index);
      if (!numbers.has(root)) numbers.set(root, numbers.size + 1);
      stage.set(v.index, numbers.get(root));
    }
    return stage;
  }

  function taskGraph(vertices) {
    if (!vertices.length) return [muted("The job has no tasks.")];
    const WIDTH = 290;
    const LINE = 17;
    const PAD = 9;
    const GAP_X = 110;
    const GAP_Y = 26;
    const CHARS = 42; // of a line, at the font's width
    const stage = stages(vertices);
    const depth = new Map(); // vertices come in topological order
    for (const v of vertices) {
      const before = v.inputs.map((i) => depth.get(i.vertex)).filter((d) => d !== undefined);
      depth.set(v.index, before.length ? 1 + Math.max(...before) : 0);
    }
    const place = new Map();
    const columnHeight = [];
    for (const v of vertices) {
      const column = depth.get(v.index);
      const top = columnHeight[column] || 0;
      const height = PAD * 2 + LINE * (2 + v.operators.length);
      place.set(v.index, { x: column * (WIDTH + GAP_X), y: top, height });
      columnHeight[column] = top + height + GAP_Y;
    }
    const width = columnHeight.length * (WIDTH + GAP_X) - GAP_X + 2;
    const height = Math.max(...columnHeight) - GAP_Y + 2;
    const picture = svg(
      "svg",
      {
        id: "task-graph",
        class: "graph",
        viewBox: `-1 -1 ${width} ${height}`,
        width,
        height,
        role: "img",
        "aria-label": "the job's tasks and the edges between them",
      },
      svg(
        "defs",
        {},
        svg(
          "marker",
          {
            id: "arrow",
            viewBox: "0 0 10 10",
            refX: 10,
            refY: 5,
            markerWidth: 8,
            markerHeight: 8,
            orient: "auto",
          },
          svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }),
        ),
      ),
    );
    for (const v of vertices) {
      for (const input of v.inputs) {
        const from = place.get(input.vertex);
        if (from === undefined) continue;
        const to = place.get(v.index);
        const [x1, y1] = [from.x + WIDTH, from.y + from.height / 2];
        const [x2, y2] = [to.x, to.y + to.height / 2];
        const bend = GAP_X / 2;
        const forward = input.ship_strategy === "FORWARD";
        picture.append(
          svg("path", {
            class: forward ? "edge" : "edge shuffle",
            d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
            "marker-end": "url(#arrow)",
          }),
          svg(
            "text",
            {
              class: "edge-label",
              x: (x1 + x2) / 2,
              y: (y1 + y2) / 2 - 6,
              "text-anchor": "middle",
            },
            input.ship_strategy,
          ),
        );
      }
    }
    for (const v of vertices) {
      const { x, y, height: boxHeight } = place.get(v.index);
      const n = stage.get(v.index);
      const lines = [
        svg("text", { class: "task-name", x: x + PAD, y: y + PAD + 12 }, clip(v.name, CHARS - 4)),
        svg(
          "text",
          { class: "task-meta", x: x + PAD, y: y + PAD + 12 + LINE },
          `parallelism ${v.parallelism} · max ${v.max_parallelism} · stage ${n}`,
        ),
      ];
      v.operators.forEach((op, k) => {
        const baseline = y + PAD + 12 + LINE * (2 + k);
        const uid = clip(op.uid, 22);
        lines.push(
          svg(
            "text",
            { class: "operator", x: x + PAD + 8, y: baseline },
            clip(op.name, CHARS - uid.length - 4),
          ),
          svg("text", { class: "uid", x: x + WIDTH - PAD, y: baseline, "text-anchor": "end" }, uid),
        );
      });
      const full = [
        v.name,
        `parallelism ${v.parallelism}, max parallelism ${v.max_parallelism}, stage ${n}`,
        ...v.operators.map((op) => `${op.name} (uid ${op.uid})`),
      ].join("\n");
      picture.append(
        svg(
          "g",
          { class: `task stage-${n % 6}`, "data-vertex": v.index },
          svg("title", {}, full),
          svg("rect", { class: "task-box", x, y, width: WIDTH, height: boxHeight, rx: 6 }),
          svg("line", {
            class: "task-rule",
            x1: x,
            x2: x + WIDTH,
            y1: y + PAD + LINE * 2 - 1,
            y2: y + PAD + LINE * 2 - 1,
          }),
          lines,
        ),
      );
    }
    return [
      h("div", { class: "scroll" }, picture),
      h(
        "p",
        { class: "legend" },
        "A box is a task: its operators chained into one, each with its uid. Solid arrows " +
          "forward records within a stage; dashed arrows are shuffles between Spark stages " +
          "(HASH: by key group).",
      ),
    ];
  }

  // Charts ---------------------------------------------------------------------------------

  // Bars (kind "bars", one per value of each series, side by side) or a line with a point
  // per value (kind "line"), over labels on the x axis; y from 0 to the largest value.
  function chart({ id, title, xName, labels, series, format, kind, barClass }) {
    const W = 540;
    const H = 210;
    const [LEFT, RIGHT, TOP, BOTTOM] = [70, 12, 12, 34];
    const plotWidth = W - LEFT - RIGHT;
    const plotHeight = H - TOP - BOTTOM;
    const largest = Math.max(0, ...series.flatMap((s) => s.values));
    const top = largest > 0 ? largest : 1;
    const y = (v) => TOP + plotHeight - (Math.max(0, v) / top) * plotHeight;
    const slot = plotWidth / labels.length;
    const picture = svg("svg", {
      id,
      class: "chart",
      viewBox: `0 0 ${W} ${H}`,
      width: W,
      height: H,
      role: "img",
      "aria-label": title,
    });
    for (const share of [0, 0.5, 1]) {
      const at = y(top * share);
      picture.append(
        svg("line", {
          class: share === 0 ? "axis" : "grid",
          x1: LEFT,
          x2: W - RIGHT,
          y1: at,
          y2: at,
        }),
        svg(
          "text",
          { class: "tick", x: LEFT - 6, y: at + 4, "text-anchor": "end" },
          format(top * share),
        ),
      );
    }
    const every = Math.ceil(labels.length / 10);
    labels.forEach((label, i) => {
      if (i % every !== 0 && i !== labels.length - 1) return;
      const x = LEFT + slot * (i + 0.5);
      picture.append(
        svg("text", { class: "tick", x, y: H - BOTTOM + 15, "text-anchor": "middle" }, label),
      );
    });
    picture.append(
      svg(
        "text",
        { class: "axis-name", x: LEFT + plotWidth / 2, y: H - 3, "text-anchor": "middle" },
        xName,
      ),
    );
    if (kind === "bars") {
      const barWidth = (slot * 0.8) / series.length;
      series.forEach((s, k) =>
        s.values.forEach((v, i) => {
          const more = barClass ? ` ${barClass(i)}` : "";
          picture.append(
            svg(
              "rect",
              {
                class: `bar ${s.cls}${more}`,
                x: LEFT + slot * i + slot * 0.1 + barWidth * k,
                y: y(v),
                width: Math.max(1, barWidth - 1),
                height: TOP + plotHeight - y(v),
              },
              svg("title", {}, `${xName} ${labels[i]}: ${s.name} ${format(v)}`),
            ),
          );
        }),
      );
    } else {
      for (const s of series) {
        const points = s.values.map((v, i) => [LEFT + slot * (i + 0.5), y(v)]);
        picture.append(
          svg("polyline", {
            class: `line ${s.cls}`,
            points: points.map((p) => p.join(",")).join(" "),
          }),
        );
        points.forEach(([cx, cy], i) =>
          picture.append(
            svg(
              "circle",
              { class: `point ${s.cls}`, cx, cy, r: 3.5 },
              svg("title", {}, `${xName} ${labels[i]}: ${s.name} ${format(s.values[i])}`),
            ),
          ),
        );
      }
    }
    const legend =
      series.length > 1
        ? h(
            "div",
            { class: "legend" },
            series.map((s) => h("span", { class: `key ${s.cls}` }, s.name)),
          )
        : null;
    return h("figure", { class: "chart" }, h("figcaption", {}, title), picture, legend);
  }

  function epochCharts(epochs) {
    if (!epochs.length) return [muted("No epoch has ended yet.")];
    const labels = epochs.map((e) => e.epoch);
    const rates = epochs.map((e) => (e.duration_ms > 0 ? e.records / (e.duration_ms / 1000) : 0));
    const last = epochs[epochs.length - 1];
    return [
      h(
        "p",
        {},
        `The last ${epochs.length} epochs. Epoch ${last.epoch} read ${number(last.records)} ` +
          `records in ${duration(last.duration_ms)}; the job's state was then ` +
          `${bytes(last.state_bytes)} in ${number(last.state_entries)} entries.`,
      ),
      h(
        "div",
        { class: "charts" },
        chart({
          id: "throughput-chart",
          title: "Throughput: records read per second",
          xName: "epoch",
          labels,
          series: [{ name: "records/s", values: rates, cls: "series-0" }],
          format: compact,
          kind: "bars",
        }),
        chart({
          id: "latency-chart",
          title: "Latency: epoch duration",
          xName: "epoch",
          labels,
          series: [{ name: "duration", values: epochs.map((e) => e.duration_ms), cls: "series-1" }],
          format: duration,
          kind: "line",
        }),
      ),
    ];
  }

  // Checkpoints, state, watermarks, failures -----------------------------------------------

  function checkpointPart(report) {
    const c = report.checkpointing;
    const counts = report.checkpoint_counts;
    const setup =
      c.interval_ms === null
        ? "Checkpointing is off."
        : `Every ${duration(c.interval_ms)}, ${c.mode}; ${c.state_backend} state backend` +
          `${c.incremental ? ", incremental" : ""}; ` +
          `stored in ${c.storage || "the driver's memory"}; ` +
          `${c.num_retained} retained (${c.retention}).`;
    const parts = [
      h("p", {}, setup),
      h(
        "p",
        {},
        `${counts.completed} completed, ${counts.failed} failed, ${counts.restored} restored.`,
      ),
    ];
    const history = report.checkpoints; // oldest first
    if (!history.length) return [...parts, muted("No checkpoint yet.")];
    const labels = history.map((x) => x.id);
    const outcome = (i) => (history[i].status === "COMPLETED" ? "completed" : "failed");
    parts.push(
      h(
        "div",
        { class: "charts" },
        chart({
          id: "checkpoint-duration-chart",
          title: "Duration (red: failed)",
          xName: "checkpoint",
          labels,
          series: [
            { name: "duration", values: history.map((x) => x.duration_ms), cls: "series-1" },
          ],
          format: duration,
          kind: "bars",
          barClass: outcome,
        }),
        chart({
          id: "checkpoint-size-chart",
          title: "Size: full, and written by the checkpoint (incremental)",
          xName: "checkpoint",
          labels,
          series: [
            { name: "full size", values: history.map((x) => x.size_bytes), cls: "series-0" },
            { name: "written", values: history.map((x) => x.written_bytes), cls: "series-2" },
          ],
          format: bytes,
          kind: "bars",
        }),
      ),
    );
    const columns = [
      "ID",
      "Epoch",
      "Status",
      "Triggered",
      "Duration",
      "Full size",
      "Written",
      "Location or failure",
    ];
    parts.push(
      h(
        "table",
        { id: "checkpoint-table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            columns.map((name) => h("th", {}, name)),
          ),
        ),
        h(
          "tbody",
          {},
          [...history].reverse().map((x) =>
            h(
              "tr",
              {
                class: `checkpoint ${x.status === "COMPLETED" ? "completed" : "failed"}`,
                "data-id": x.id,
              },
              h("td", { class: "number" }, x.id),
              h("td", { class: "number" }, x.epoch),
              h("td", {}, statusBadge(x.status)),
              h("td", { class: "time" }, time(x.trigger_time_ms)),
              h("td", { class: "number" }, duration(x.duration_ms)),
              h("td", { class: "number" }, bytes(x.size_bytes)),
              h("td", { class: "number" }, bytes(x.written_bytes)),
              h(
                "td",
                {},
                x.failure !== null
                  ? h("span", { class: "error" }, x.failure)
                  : h("code", {}, x.path || "in the driver's memory"),
              ),
            ),
          ),
        ),
      ),
      h(
        "p",
        { class: "legend" },
        "Written: the state the subtasks wrote since the checkpoint before (its incremental " +
          "size), for all operators together. Full size: what a restore reads.",
      ),
    );
    return parts;
  }

  // uid -> the operator's name and its task's
  function operators(vertices) {
    const found = new Map();
    for (const v of vertices)
      for (const op of v.operators) found.set(op.uid, { name: op.name, task: v.name });
    return found;
  }

  function stateSizes(report) {
    const latest = [...report.checkpoints].reverse().find((x) => x.status === "COMPLETED");
    if (!latest) return [muted("No completed checkpoint yet.")];
    const known = operators(report.vertices);
    const sizes = Object.entries(latest.state_size_per_operator)
      .filter(([, size]) => size > 0)
      .sort((a, b) => b[1] - a[1]);
    if (!sizes.length) return [muted(`Checkpoint ${latest.id} holds no operator state.`)];
    const total = sizes.reduce((sum, [, size]) => sum + size, 0);
    return [
      h(
        "p",
        {},
        `In checkpoint ${latest.id} (epoch ${latest.epoch}): ${bytes(total)} in all. ` +
          "Operators not listed hold no state.",
      ),
      h(
        "table",
        { id: "state-table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Operator", "uid", "Task", "State size", "Share"].map((c) => h("th", {}, c)),
          ),
        ),
        h(
          "tbody",
          {},
          sizes.map(([uid, size]) => {
            const op = known.get(uid) || { name: "–", task: "–" };
            const share = total > 0 ? (100 * size) / total : 0;
            return h(
              "tr",
              { class: "operator-state", "data-uid": uid },
              h("td", {}, op.name),
              h("td", {}, h("code", {}, uid)),
              h("td", {}, op.task),
              h("td", { class: "number" }, bytes(size)),
              h(
                "td",
                {},
                svg(
                  "svg",
                  {
                    class: "meter",
                    viewBox: "0 0 100 10",
                    width: 120,
                    height: 10,
                    preserveAspectRatio: "none",
                  },
                  svg("rect", { class: "meter-track", x: 0, y: 0, width: 100, height: 10 }),
                  svg("rect", { class: "meter-fill", x: 0, y: 0, width: share, height: 10 }),
                ),
                ` ${share.toFixed(0)} %`,
              ),
            );
          }),
        ),
      ),
    ];
  }

  function watermarkText(value) {
    if (value === undefined || value <= NO_WATERMARK) return ["none yet", ""];
    if (value >= END_OF_TIME) return ["end of event time", ""];
    return [time(value, true), String(value)];
  }

  function watermarkTable(report) {
    const rows = [];
    const listed = new Set();
    for (const v of report.vertices) {
      for (const op of v.operators) {
        listed.add(op.uid);
        rows.push([op.name, op.uid, v.name, report.watermarks[op.uid]]);
      }
    }
    for (const [uid, value] of Object.entries(report.watermarks)) {
      if (!listed.has(uid)) rows.push(["–", uid, "–", value]);
    }
    return [
      h(
        "table",
        { id: "watermark-table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Operator", "uid", "Task", "Watermark", "ms"].map((c) => h("th", {}, c)),
          ),
        ),
        h(
          "tbody",
          {},
          rows.map(([name, uid, task, value]) => {
            const [shown, raw] = watermarkText(value);
            return h(
              "tr",
              { class: "watermark", "data-uid": uid },
              h("td", {}, name),
              h("td", {}, h("code", {}, uid)),
              h("td", {}, task),
              h("td", {}, shown),
              h("td", { class: "number" }, raw),
            );
          }),
        ),
      ),
      h("p", { class: "legend" }, "An operator's watermark is the least over its subtasks."),
    ];
  }

  function failurePart(report, attempts, exceptions, opened) {
    const newDrivers = Math.max(attempts - 1, 0);
    const summary = h(
      "p",
      { id: "restarts" },
      `Restarts: ${report.restarts + newDrivers} (${report.restarts} by the job's restart ` +
        `strategy in its current driver, ${newDrivers} with a new driver; ` +
        `${attempts} driver attempt${attempts === 1 ? "" : "s"}).`,
    );
    const history = exceptions ? exceptions.exceptionHistory : { entries: [], truncated: false };
    if (!history.entries.length) return [summary, muted("No exceptions.")];
    const list = h(
      "ol",
      { id: "exceptions" },
      history.entries.map((e) => {
        const key = `${e.timestamp} ${e.exceptionName}`;
        const trace = h(
          "details",
          { open: opened.has(key) },
          h(
            "summary",
            {},
            clip(String(e.stacktrace).trim().split("\n").pop() || "stack trace", 160),
          ),
          h("pre", {}, e.stacktrace),
        );
        trace.addEventListener("toggle", () => (trace.open ? opened.add(key) : opened.delete(key)));
        return h(
          "li",
          { class: "exception" },
          h("strong", {}, e.exceptionName),
          " ",
          h("span", { class: "muted" }, time(e.timestamp)),
          trace,
        );
      }),
    );
    return [summary, list, history.truncated ? muted("Older exceptions are left out.") : null];
  }

  // The page -------------------------------------------------------------------------------

  let page = null;
  let timer = null;
  let busy = false;
  let again = false;

  function banner(text) {
    const element = byId("banner");
    element.hidden = !text;
    element.textContent = text || "";
  }

  async function showOverview() {
    const o = await get("v1/overview");
    byId("overview").textContent =
      `${o["jobs-running"]} running · ${o["jobs-finished"]} finished · ` +
      `${o["jobs-cancelled"]} cancelled · ${o["jobs-failed"]} failed`;
  }

  // One refresh at a time; one asked for meanwhile follows it.
  async function refresh() {
    clearTimeout(timer);
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      await Promise.all([showOverview(), page.refresh()]);
      banner(null);
    } catch (error) {
      banner(
        error.status === 401
          ? `${error.message}. This Dispatcher needs the token for every request: give it above.`
          : `Cannot refresh: ${error.message}`,
      );
    } finally {
      busy = false;
    }
    if (again) {
      again = false;
      refresh();
    } else {
      timer = setTimeout(refresh, REFRESH_MS);
    }
  }

  function route() {
    const job = /^#\/jobs\/([^/]*)$/.exec(location.hash);
    if (job === null) {
      page = listPage();
    } else if (HEX32.test(job[1])) {
      page = jobPage(job[1]);
    } else {
      const root = h(
        "div",
        {},
        h("h1", {}, "No such job"),
        muted("A job id is 32 hexadecimal digits."),
      );
      page = { root, refresh: async () => {} };
    }
    byId("view").replaceChildren(page.root);
    window.scrollTo(0, 0);
    refresh();
  }

  function tokenForm() {
    const input = byId("token");
    const state = byId("token-state");
    const showState = () => {
      state.textContent = token() ? "set for this tab" : "not set";
    };
    byId("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const given = input.value.trim();
      if (given) sessionStorage.setItem(TOKEN_KEY, given);
      input.value = "";
      showState();
      refresh();
    });
    byId("forget-token").addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      showState();
    });
    showState();
  }

  tokenForm();
  window.addEventListener("hashchange", route);
  route();
})();
