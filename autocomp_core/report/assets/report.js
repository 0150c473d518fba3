// The autocomp report: one page for a run, a suite of runs, or the live dashboard.
// Data comes inline (a gzip-compressed JSON payload, for the offline HTML report) or from
// the dashboard's API, kept fresh by server-sent events. Every text from a run (plans,
// programs, compiler output: LLM-written, untrusted) goes into the page as text, never
// as HTML.
"use strict";

(function () {
  const SOURCE = JSON.parse(document.getElementById("autocomp-source").textContent);
  const STATUS_COLORS = {
    kept: "#2e7d32", pruned: "#a0a6b1", correct: "#9ccc65", pending: "#ffffff",
    compile_error: "#c62828", wrong_answer: "#ef6c00", timeout: "#7b1fa2", crash: "#ad1457",
    rejected: "#5d4037", infra_error: "#1565c0", no_program: "#37474f", failed: "#c62828",
  };
  const PALETTE = ["#2457c5", "#e07b39", "#2e7d32", "#8e44ad", "#c0392b", "#16a085",
                   "#7f8c8d", "#d4ac0d"];
  Chart.defaults.animation = false;
  Chart.defaults.font.family = getComputedStyle(document.documentElement).fontFamily;
  Chart.defaults.maintainAspectRatio = false;

  // -- small helpers ------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const SVG_NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    return node;
  }
  // the rule of autocomp_core/numbers.py: an integer (a cycle count) exactly; any other
  // value with six significant digits, never fewer than its integer part needs
  const num = (v) => {
    if (v === null || v === undefined) return "–";
    const x = Number(v);
    if (Number.isSafeInteger(x)) return x.toLocaleString("en-US");
    const whole = Math.abs(x) >= 1 ? String(Math.trunc(Math.abs(x))).length : 0;
    return x.toLocaleString("en-US", { maximumSignificantDigits: Math.min(21, Math.max(6, whole + 3)) });
  };
  const int = (v) => (v === null || v === undefined ? "–" : Number(v).toLocaleString("en-US"));
  const pct = (v) => (v === null || v === undefined ? "–" : (100 * v).toFixed(1) + "%");
  const money = (v) => "$" + Number(v || 0).toFixed(4);
  const secs = (v) => (v === null || v === undefined ? "–" : Number(v).toFixed(1) + " s");
  const speed = (v) => (v ? Number(v).toFixed(2) + "×" : "–");
  const shortModel = (m) => (m || "").replace(/^.*::/, "") || "–";
  const stateBadge = (state) => el("span", { class: "badge " + state }, state);

  async function inflate(b64) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  // -- where the data comes from ------------------------------------------------------
  // Both sources answer index() and run(name); the live one also calls onChange(names).
  async function inlineSource() {
    const payload = await inflate(document.getElementById("autocomp-data").textContent.trim());
    const byName = new Map(payload.runs.map((r) => [r.name, r]));
    return {
      kind: payload.kind, title: payload.title, live: false,
      index: async () => payload.rows, run: async (name) => byName.get(name),
      single: payload.kind === "run" ? payload.runs[0].name : null,
    };
  }

  function liveSource() {
    const get = async (path) => {
      const resp = await fetch(path, { headers: { Accept: "application/json" } });
      if (!resp.ok) throw new Error(`${path}: HTTP ${resp.status}`);
      return resp.json();
    };
    const listeners = [];
    const state = document.getElementById("live-state");
    const events = new EventSource("api/events");
    events.addEventListener("update", (e) => {
      const msg = JSON.parse(e.data);
      state.className = "live-state on";
      state.textContent = "live · updated " + new Date().toLocaleTimeString();
      listeners.forEach((fn) => fn(msg.changed || []));
    });
    events.onerror = () => { state.className = "live-state off"; state.textContent = "reconnecting"; };
    events.onopen = () => { state.className = "live-state on"; state.textContent = "live"; };
    return {
      kind: "live", title: SOURCE.title, live: true, single: null,
      index: () => get("api/runs"),
      run: (name) => get("api/runs/" + encodeURIComponent(name)),
      onChange: (fn) => listeners.push(fn),
    };
  }

  // -- charts (one Chart per canvas id, updated in place on new data) ---------------
  const charts = new Map();
  function chart(canvas, config) {
    const old = charts.get(canvas.id);
    if (old && old.canvas === canvas) {
      old.data = config.data;
      old.options = config.options;
      old.update("none");
      return old;
    }
    if (old) old.destroy();
    const made = new Chart(canvas, config);
    charts.set(canvas.id, made);
    return made;
  }
  function scaleType(values) {
    const pos = values.filter((v) => v > 0);
    if (!pos.length) return "linear";
    return Math.max(...pos) / Math.min(...pos) > 20 ? "logarithmic" : "linear";
  }
  function chartBox(id, label) {
    return el("div", { class: "chart-box" }, el("canvas", { id, role: "img", "aria-label": label }));
  }

  // -- the index: a list of runs (a suite, a folder, the dashboard) -------------------
  function renderIndex(root, rows, title, live) {
    root.replaceChildren();
    const head = el("div", { class: "card" },
      el("h1", {}, title || "Runs"),
      el("div", { class: "muted" }, `${rows.length} run${rows.length === 1 ? "" : "s"}` +
        (live ? " · updating live" : "")));
    const speedups = rows.map((r) => r.speedup).filter((v) => v > 0);
    if (speedups.length) {
      const geo = Math.exp(speedups.reduce((a, v) => a + Math.log(v), 0) / speedups.length);
      head.append(el("div", { class: "stats" },
        stat(speed(geo), "geometric mean speedup"),
        stat(int(rows.reduce((a, r) => a + (r.candidates || 0), 0)), "candidates"),
        stat(money(rows.reduce((a, r) => a + (r.cost_usd || 0), 0)), "LLM cost")));
    }
    root.append(head);
    const table = el("table", { id: "runs" },
      el("thead", {}, el("tr", {}, ["run", "problem", "status", "progress", "candidates", "best",
        "speedup", "% of bound", "cost", "tokens", "wall"].map((h, i) =>
        el("th", { class: i >= 4 ? "num" : null }, h)))));
    const body = el("tbody");
    for (const r of rows) {
      const done = r.iterations_total ? Math.min(1, r.iterations_done / r.iterations_total) : 0;
      body.append(el("tr", { class: "link", "data-run": r.name,
                             onclick: () => navigate({ run: r.name }) },
        el("td", {}, el("a", { href: "#" + routeHash({ run: r.name }) }, r.name)),
        el("td", {}, `${r.backend} / ${r.problem}`),
        el("td", {}, stateBadge(r.state)),
        el("td", {}, el("span", { class: "progress" }, el("i", { style: `width:${100 * done}%` })),
          `${r.iterations_done}/${r.iterations_total}`),
        el("td", { class: "num" }, `${int(r.candidates)} (${int(r.correct)} ok)`),
        el("td", { class: "num" }, r.best_score === null ? "–" : `${num(r.best_score)} ${r.unit || ""}`),
        el("td", { class: "num" }, speed(r.speedup)),
        el("td", { class: "num" + (r.impossible ? " warn" : "") }, pct(r.fraction_of_bound)),
        el("td", { class: "num" }, money(r.cost_usd)),
        el("td", { class: "num" }, int(r.tokens)),
        el("td", { class: "num" }, secs(r.wall_s))));
    }
    table.append(body);
    root.append(el("div", { class: "card" }, el("h2", {}, "Runs"), table));
    if (rows.length) {
      const card = el("div", { class: "card" }, el("h2", {}, "Speedup over the baseline per run"),
                      chartBox("suite-chart", "speedup per run"));
      root.append(card);
      chart(card.querySelector("canvas"), {
        type: "bar",
        data: { labels: runLabels(rows),
                datasets: [{ label: "speedup", data: rows.map((r) => r.speedup || 0), maxBarThickness: 70,
                             backgroundColor: PALETTE[0] }] },
        options: { plugins: { legend: { display: false } },
                   scales: { y: { type: scaleType(speedups), title: { display: true, text: "× over baseline" } } } },
      });
    }
  }

  // a bar per run: named by its problem, or by its run name where runs share a problem
  function runLabels(rows) {
    const seen = new Map();
    rows.forEach((r) => seen.set(r.problem, (seen.get(r.problem) || 0) + 1));
    return rows.map((r) => (r.problem && seen.get(r.problem) === 1 ? r.problem : r.name));
  }

  function stat(value, label) {
    return el("div", { class: "stat" }, el("b", {}, value), el("span", {}, label));
  }

  // -- one run --------------------------------------------------------------------------
  function renderRun(root, run, selectedId) {
    const s = run.summary, t = run.target, st = run.status;
    const unit = t.unit || "";
    root.replaceChildren();
    const head = el("div", { class: "card", id: "run-head" },
      el("h1", {}, `${t.backend} / ${t.problem} `, stateBadge(st.state)),
      el("div", { class: "muted" }, run.name),
      el("div", { class: "stats" },
        stat(`${st.iterations_done} / ${st.iterations_total}`, "iterations"),
        stat(s.initial_score === null ? "–" : `${num(s.initial_score)} ${unit}`, "baseline"),
        stat(s.best_score === null ? "–" : `${num(s.best_score)} ${unit}`, "best"),
        stat(speed(s.speedup), "speedup"),
        stat(pct(s.fraction_of_bound), "of the lower bound (peak)"),
        stat(`${int(s.candidates)} (${int(s.correct)} correct)`, "candidates"),
        stat(int(s.tokens), "tokens"), stat(money(s.cost_usd), "LLM cost"),
        stat(secs(s.wall_s), "wall")));
    if (s.impossible) {
      head.append(el("p", { class: "warn" },
        "The best result beats the lower bound: treat it as suspect (a measurement or harness problem)."));
    }
    root.append(head);

    const charts2 = el("div", { class: "grid2" },
      el("div", { class: "card" }, el("h2", {}, `Score per iteration (${unit || "metric"}, lower is better)`),
         chartBox("score-chart", "score per iteration")),
      el("div", { class: "card" }, el("h2", {}, "Speedup over the baseline"),
         chartBox("speedup-chart", "speedup per iteration")));
    root.append(charts2);
    drawScoreCharts(run);

    const treeCard = el("div", { class: "card" }, el("h2", {}, "Beam tree"),
      el("div", { class: "tree-layout" },
        el("div", {}, labelFilter(run), el("div", { class: "tree-scroll", id: "tree" }), legend(run)),
        el("div", { id: "detail" }, el("p", { class: "muted" }, "Click a candidate to see its plan, code, diffs and evaluation."))));
    root.append(treeCard);
    drawTree(run, treeCard.querySelector("#tree"), selectedId);

    root.append(failuresCard(run));
    const usage = el("div", { class: "grid2" }, usageCard(run), timelineCard(run));
    root.append(usage);
    drawUsageCharts(run);
    if (selectedId && run.candidates.some((c) => c.id === selectedId)) select(run, selectedId, false);
  }

  function drawScoreCharts(run) {
    const its = run.iterations, bound = run.summary.lower_bound, initial = run.summary.initial_score;
    const xs = its.map((r) => r.iteration);
    const xmax = Math.max(1, ...xs);
    const points = its.flatMap((r) => r.children.map((y) => ({ x: r.iteration, y })));
    const all = [...points.map((p) => p.y), ...its.map((r) => r.beam_worst), bound].filter((v) => v > 0);
    const datasets = [
      { label: "best", data: its.map((r) => ({ x: r.iteration, y: r.best })), borderColor: PALETTE[0],
        backgroundColor: PALETTE[0], borderWidth: 2.5, pointRadius: 3 },
      { label: "beam spread", data: its.map((r) => ({ x: r.iteration, y: r.beam_worst })),
        borderColor: "rgba(36,87,197,.35)", backgroundColor: "rgba(36,87,197,.12)", fill: "-1",
        pointRadius: 0, borderWidth: 1 },
      { label: "correct candidates", type: "scatter", data: points, pointRadius: 2.5,
        backgroundColor: "rgba(90,100,120,.45)", borderColor: "transparent" },
    ];
    if (bound) {
      datasets.push({ label: "lower bound (100% of peak)", data: [{ x: 0, y: bound }, { x: xmax, y: bound }],
        borderColor: "#c62828", borderDash: [6, 4], pointRadius: 0, borderWidth: 1.5 });
    }
    chart(document.getElementById("score-chart"), {
      type: "line", data: { datasets },
      options: { parsing: true, scales: {
        x: { type: "linear", min: 0, max: xmax, ticks: { stepSize: 1 }, title: { display: true, text: "iteration" } },
        y: { type: scaleType(all), title: { display: true, text: run.target.unit || "score" } } } },
    });
    const sp = its.map((r) => ({ x: r.iteration, y: initial && r.best ? initial / r.best : null }));
    const ds2 = [{ label: "speedup of the best program", data: sp, borderColor: PALETTE[2],
                   backgroundColor: PALETTE[2], borderWidth: 2.5, pointRadius: 3 }];
    if (bound && initial) {
      ds2.push({ label: `lower bound: ${speed(initial / bound)} (100% of peak)`,
                 data: [{ x: 0, y: initial / bound }, { x: xmax, y: initial / bound }],
                 borderColor: "#c62828", borderDash: [6, 4], pointRadius: 0, borderWidth: 1.5 });
    }
    chart(document.getElementById("speedup-chart"), {
      type: "line", data: { datasets: ds2 },
      options: { scales: {
        x: { type: "linear", min: 0, max: xmax, ticks: { stepSize: 1 }, title: { display: true, text: "iteration" } },
        y: { type: scaleType([...sp.map((p) => p.y), bound && initial ? initial / bound : 0]),
             title: { display: true, text: "× over baseline" } } },
        plugins: { tooltip: { callbacks: { afterLabel: (ctx) => (bound && ctx.datasetIndex === 0
          ? `${pct(bound / its[ctx.dataIndex].best)} of peak` : "") } } } },
    });
  }

  // -- the beam tree ----------------------------------------------------------------------
  const COL_W = 150, ROW_H = 17, PAD = 26, R = 5.5;

  function layout(run) {
    const byIter = new Map();
    for (const c of run.candidates) {
      if (!byIter.has(c.iteration)) byIter.set(c.iteration, []);
      byIter.get(c.iteration).push(c);
    }
    const pos = new Map();
    const iters = [...byIter.keys()].sort((a, b) => a - b);
    const rank = { kept: 0, correct: 1, pruned: 2, pending: 3, failed: 4 };
    let rows = 0;
    for (const [col, it] of iters.entries()) {
      const nodes = byIter.get(it);
      const parentY = (c) => Math.min(...c.parents.map((p) => (pos.has(p) ? pos.get(p).row : 1e9)), 1e9);
      nodes.sort((a, b) => parentY(a) - parentY(b) || rank[a.status] - rank[b.status] ||
        (a.score ?? Infinity) - (b.score ?? Infinity) || (a.id < b.id ? -1 : 1));
      nodes.forEach((c, row) => pos.set(c.id, { col, row, iteration: it }));
      rows = Math.max(rows, nodes.length);
    }
    return { pos, iters, rows };
  }

  function nodeShape(c) {
    const fill = STATUS_COLORS[c.status === "failed" ? c.failure : c.status] || "#999";
    if (c.origin === "repair") {
      return svg("path", { d: `M0,${-R - 1} L${R + 1},0 L0,${R + 1} L${-R - 1},0 Z`, fill });
    }
    if (c.origin === "combine") {
      return svg("rect", { x: -R, y: -R, width: 2 * R, height: 2 * R, fill });
    }
    return svg("circle", { r: c.origin === "root" ? R + 2 : R, fill });
  }

  function drawTree(run, box, selectedId) {
    const { pos, iters, rows } = layout(run);
    const width = PAD * 2 + Math.max(1, iters.length) * COL_W - COL_W / 2;
    const height = PAD * 2 + Math.max(1, rows) * ROW_H;
    const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}` });
    const xy = (p) => [PAD + p.col * COL_W, PAD + 8 + p.row * ROW_H];
    iters.forEach((it, col) => {
      const label = svg("text", { x: PAD + col * COL_W - 10, y: 14, class: "col-label" });
      label.textContent = it === 0 ? "start" : it < 0 ? "control" : `iteration ${it}`;
      root.append(label);
    });
    const edges = svg("g", {});
    const nodes = svg("g", {});
    for (const c of run.candidates) {
      const p = pos.get(c.id);
      const [x, y] = xy(p);
      for (const parent of c.parents) {
        if (!pos.has(parent)) continue;
        const [px, py] = xy(pos.get(parent));
        const mid = (px + x) / 2;
        edges.append(svg("path", { class: "edge", "data-from": parent, "data-to": c.id,
          d: `M${px},${py} C${mid},${py} ${mid},${y} ${x},${y}` }));
      }
      const g = svg("g", { class: "node", "data-id": c.id, "data-status": c.status,
                           "data-label": c.label || "none", transform: `translate(${x},${y})` });
      const title = svg("title", {});
      title.textContent = `${c.id}: ${c.status}${c.failure ? " (" + c.failure + ")" : ""}` +
        (c.score !== null ? `, ${num(c.score)} ${run.target.unit || ""}` : "") +
        (c.plan ? `\n${c.plan.slice(0, 200)}` : "");
      g.append(title, nodeShape(c));
      if (c.id === run.summary.best_id) g.append(svg("circle", { r: R + 4, class: "best-ring" }));
      g.addEventListener("click", () => select(run, c.id, true));
      nodes.append(g);
    }
    root.append(edges, nodes);
    box.replaceChildren(root);
  }

  // Audit labels (clean, flagged, refused, overfit): show only the candidates with one.
  const LABELS = ["clean", "flagged", "refused", "overfit"];

  function labelFilter(run) {
    const counts = {};
    for (const c of run.candidates) if (c.label) counts[c.label] = (counts[c.label] || 0) + 1;
    const pick = el("select", { id: "label-filter", "aria-label": "show candidates labelled" },
      el("option", { value: "" }, `all labels (${run.candidates.length})`),
      LABELS.map((l) => el("option", { value: l }, `${l} (${counts[l] || 0})`)));
    pick.addEventListener("change", () => {
      document.querySelectorAll("#tree .node").forEach((n) =>
        n.classList.toggle("dimmed", pick.value !== "" && n.dataset.label !== pick.value));
    });
    return el("label", { class: "label-filter" }, "audit label: ", pick);
  }

  function legend(run) {
    const present = new Set(run.candidates.map((c) => (c.status === "failed" ? c.failure : c.status)));
    const names = { kept: "kept in the beam", pruned: "correct, pruned", correct: "correct (selection pending)",
                    pending: "being evaluated" };
    const items = Object.keys(STATUS_COLORS).filter((k) => present.has(k)).map((k) =>
      el("span", {}, el("i", { style: `background:${STATUS_COLORS[k]}` }),
        names[k] || "failed: " + k.replace(/_/g, " ")));
    items.push(el("span", {}, el("i", { style: "background:none;border:2.5px solid #f4b400" }), "best"));
    items.push(el("span", { class: "muted" }, "◆ repair   ■ combination"));
    return el("div", { class: "legend" }, items);
  }

  // -- the selected candidate -------------------------------------------------------------
  let current = { run: null, candidate: null, tab: null };

  function select(run, id, updateHash) {
    const byId = new Map(run.candidates.map((c) => [c.id, c]));
    const c = byId.get(id);
    if (!c) return;
    current.candidate = id;
    document.querySelectorAll("#tree .node.selected").forEach((n) => n.classList.remove("selected"));
    const node = document.querySelector(`#tree .node[data-id="${CSS.escape(id)}"]`);
    if (node) node.classList.add("selected");
    const lineage = new Set();
    for (let x = c; x && !lineage.has(x.id); x = byId.get(x.parents[0])) lineage.add(x.id);
    document.querySelectorAll("#tree .edge").forEach((e) =>
      e.classList.toggle("path", lineage.has(e.dataset.to) && lineage.has(e.dataset.from)));
    if (updateHash) setHash({ run: SINGLE ? null : run.name, c: id });
    renderDetail(run, c, byId);
  }

  function baselineOf(run) {
    return run.candidates.find((c) => c.origin === "root") ||
      run.candidates.find((c) => c.iteration === 0);
  }

  function renderDetail(run, c, byId) {
    const box = document.getElementById("detail");
    const code = c.code === null ? null : run.codes[c.code];
    const parent = byId.get(c.parents[0]);
    const base = baselineOf(run);
    const codeOf = (x) => (x && x.code !== null ? run.codes[x.code] : null);
    const ev = c.eval || {};
    const facts = el("dl", { class: "kv" },
      el("dt", {}, "status"), el("dd", {}, c.status + (c.failure ? ` (${c.failure.replace(/_/g, " ")})` : "")),
      el("dt", {}, "audit label"), el("dd", {}, (c.label || "–") + (c.label_why ? ` (${c.label_why})` : "")),
      el("dt", {}, "score"), el("dd", {}, c.score === null ? "–" : `${num(c.score)} ${run.target.unit || ""}`),
      el("dt", {}, "iteration"), el("dd", {}, c.iteration),
      el("dt", {}, "origin"), el("dd", {}, c.origin),
      el("dt", {}, "parents"), el("dd", {}, c.parents.length ? c.parents.map((p, i) =>
        [i ? ", " : "", el("a", { href: "#", onclick: (e) => { e.preventDefault(); select(run, p, true); } }, p)]) : "–"),
      el("dt", {}, "models"), el("dd", {}, `plan ${shortModel(c.plan_model)}, code ${shortModel(c.code_model)}`));
    if (c.translation_score !== null && c.translation_score !== undefined) {
      facts.append(el("dt", {}, "translation score"), el("dd", {}, num(c.translation_score)));
    }
    if (ev.duration_s !== undefined && ev.duration_s !== null) {
      facts.append(el("dt", {}, "evaluation time"), el("dd", {}, secs(ev.duration_s)));
    }
    const tabs = [
      ["diff-parent", "Diff vs parent", () => diffView(codeOf(parent), code, parent ? parent.id : null, c.id)],
      ["diff-baseline", "Diff vs baseline", () => diffView(codeOf(base), code, base ? base.id : null, c.id)],
      ["code", "Code", () => el("pre", { id: "detail-code" }, code === null ? "(no program)" : code)],
      ["evaluation", "Evaluation", () => evalView(ev)],
    ];
    const first = current.tab && tabs.some((t) => t[0] === current.tab) ? current.tab
      : (parent ? "diff-parent" : "code");
    const pane = el("div", { id: "detail-pane" });
    const bar = el("div", { class: "tabs", role: "tablist" });
    const show = (key) => {
      current.tab = key;
      bar.querySelectorAll("button").forEach((b) => b.classList.toggle("on", b.dataset.tab === key));
      pane.replaceChildren(tabs.find((t) => t[0] === key)[2]());
    };
    for (const [key, label] of tabs) {
      bar.append(el("button", { "data-tab": key, role: "tab", onclick: () => show(key) }, label));
    }
    box.replaceChildren(el("div", {},
      el("h3", {}, c.id),
      el("div", { class: "plan", id: "detail-plan" }, c.plan || "(the original program)"),
      facts,
      ev.feedback ? el("pre", { class: "text", id: "detail-feedback" }, ev.feedback) : null,
      bar, pane));
    show(first);
  }

  function diffView(oldCode, newCode, oldName, newName) {
    if (oldCode === null || oldCode === undefined) return el("p", { class: "muted diff-empty" }, "No program to compare with.");
    if (newCode === null) return el("p", { class: "muted diff-empty" }, "This candidate has no program.");
    const patch = Diff.structuredPatch(oldName, newName, oldCode, newCode, "", "", { context: 3 });
    const out = el("pre", { class: "diff", id: "detail-diff" });
    out.append(el("div", { class: "hunk" }, `--- ${oldName}\n+++ ${newName}`));
    if (!patch.hunks.length) out.append(el("div", {}, "(identical programs)"));
    for (const h of patch.hunks) {
      out.append(el("div", { class: "hunk" }, `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`));
      for (const line of h.lines) {
        out.append(el("div", { class: line[0] === "+" ? "add" : line[0] === "-" ? "del" : "ctx" }, line));
      }
    }
    return out;
  }

  function evalView(ev) {
    const box = el("div", { id: "detail-eval" });
    const rows = [["verdict", ev.status], ["metric", ev.metric !== undefined && ev.metric !== null ? `${num(ev.metric)} ${ev.unit || ""}` : null]];
    for (const [k, v] of Object.entries(ev.extra || {})) rows.push([k, num(v)]);
    const kv = el("dl", { class: "kv" });
    for (const [k, v] of rows) if (v) kv.append(el("dt", {}, k), el("dd", {}, v));
    box.append(kv.childElementCount ? kv : el("p", { class: "muted" }, "No checks recorded."));
    for (const [label, text] of [["stdout", ev.stdout], ["stderr", ev.stderr]]) {
      if (text) box.append(el("h4", {}, label), el("pre", { class: "text" }, text));
    }
    return box;
  }

  // -- failures, usage, time ----------------------------------------------------------------
  function failuresCard(run) {
    const card = el("div", { class: "card", id: "failures" }, el("h2", {}, "Failures by kind"));
    if (!run.failures.length) {
      card.append(el("p", { class: "muted" }, "No candidate failed."));
      return card;
    }
    const body = el("tbody");
    for (const f of run.failures) {
      body.append(el("tr", { "data-kind": f.kind },
        el("td", {}, el("span", { class: "swatch", style: `background:${STATUS_COLORS[f.kind] || "#999"}` }),
          f.kind.replace(/_/g, " ")),
        el("td", { class: "num" }, f.count), el("td", { class: "num" }, pct(f.share)),
        el("td", {}, f.examples.map((x) => el("div", {},
          el("a", { href: "#", onclick: (e) => { e.preventDefault(); select(run, x.id, true);
            document.getElementById("tree").scrollIntoView({ block: "nearest" }); } }, x.id),
          x.text ? el("span", { class: "muted" }, " — " + x.text) : null)))));
    }
    card.append(el("table", {}, el("thead", {}, el("tr", {},
      el("th", {}, "kind"), el("th", { class: "num" }, "candidates"), el("th", { class: "num" }, "share"),
      el("th", {}, "examples"))), body));
    return card;
  }

  function usageCard(run) {
    const card = el("div", { class: "card", id: "usage" }, el("h2", {}, "LLM usage per phase and model"),
      chartBox("tokens-chart", "tokens per phase and model"));
    const body = el("tbody");
    const row = (phase, model, u, cls) => el("tr", { class: cls },
      el("td", {}, phase), el("td", { title: model }, shortModel(model)),
      el("td", { class: "num" }, `${int(u.calls)}` + (u.failures ? ` (${int(u.failures)} failed)` : "")),
      el("td", { class: "num" }, `${int(u.input_tokens)} / ${int(u.output_tokens)}`),
      el("td", { class: "num" }, int(u.cached_tokens)), el("td", { class: "num" }, money(u.cost_usd)),
      el("td", { class: "num" }, `${u.calls ? secs(u.latency_sum_s / u.calls) : "–"} / ${secs(u.latency_max_s)}`));
    for (const [phase, models] of Object.entries(run.usage.by_phase)) {
      for (const [model, u] of Object.entries(models)) body.append(row(phase, model, u));
    }
    for (const [model, u] of Object.entries(run.usage.by_model)) body.append(row("all phases", model, u, "total"));
    card.append(el("div", { class: "wide" }, el("table", {}, el("thead", {}, el("tr", {}, ["phase", "model",
      "calls", "tokens in / out", "cached", "cost", "latency mean / max"].map((h, i) =>
      el("th", { class: i >= 2 ? "num" : null }, h)))), body)));
    return card;
  }

  function timelineCard(run) {
    const t = run.timeline, wall = run.summary.wall_s;
    const overlapShare = Math.min(t.llm_busy_s, t.evaluation_busy_s) > 0
      ? t.both_busy_s / Math.min(t.llm_busy_s, t.evaluation_busy_s) : null;
    return el("div", { class: "card", id: "time" }, el("h2", {}, "Time: LLM calls and evaluations"),
      chartBox("timeline-chart", "work in flight over time"),
      el("div", { class: "stats" },
        stat(secs(t.llm_busy_s), "LLM calls in flight"), stat(secs(t.evaluation_busy_s), "evaluations running"),
        stat(secs(t.both_busy_s), "both at once"), stat(pct(overlapShare), "of the shorter hidden by overlap"),
        stat(secs(Math.max(0, wall - t.any_busy_s)), "neither (selection, idle)")));
  }

  function drawUsageCharts(run) {
    const phases = Object.keys(run.usage.by_phase);
    const models = [...new Set(phases.flatMap((p) => Object.keys(run.usage.by_phase[p])))];
    chart(document.getElementById("tokens-chart"), {
      type: "bar",
      data: { labels: phases, datasets: models.map((m, i) => ({
        label: shortModel(m), backgroundColor: PALETTE[i % PALETTE.length],
        data: phases.map((p) => { const u = run.usage.by_phase[p][m]; return u ? u.input_tokens + u.output_tokens : 0; }) })) },
      options: { scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: "tokens" } } } },
    });
    const toXY = (pts) => pts.map(([x, y]) => ({ x, y }));
    chart(document.getElementById("timeline-chart"), {
      type: "line",
      data: { datasets: [
        { label: "LLM calls in flight", data: toXY(run.timeline.llm_in_flight), stepped: "before",
          borderColor: PALETTE[0], backgroundColor: "rgba(36,87,197,.15)", fill: true, pointRadius: 0, borderWidth: 1.5 },
        { label: "evaluations running", data: toXY(run.timeline.evaluations_in_flight), stepped: "before",
          borderColor: PALETTE[1], backgroundColor: "rgba(224,123,57,.25)", fill: true, pointRadius: 0, borderWidth: 1.5 }] },
      options: { scales: { x: { type: "linear", title: { display: true, text: "seconds since the first call" } },
                           y: { beginAtZero: true, ticks: { precision: 0 } } } },
    });
  }

  // -- routing: #run=<name>&c=<candidate> ---------------------------------------------------
  let SINGLE = null;
  function routeHash(route) {
    const params = new URLSearchParams();
    if (route.run) params.set("run", route.run);
    if (route.c) params.set("c", route.c);
    return params.toString();
  }
  function parseHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    return { run: params.get("run") || SINGLE, c: params.get("c") };
  }
  function setHash(route) { history.replaceState(null, "", "#" + routeHash(route)); }
  function navigate(route) { location.hash = routeHash(route); }

  async function main() {
    const source = SOURCE.mode === "live" ? liveSource() : await inlineSource();
    SINGLE = source.single;
    const app = document.getElementById("app");
    const crumbs = document.getElementById("crumbs");
    let shown = null;
    const show = async (keepSelection) => {
      const route = parseHash();
      if (route.run) {
        const run = await source.run(route.run);
        if (!run) { app.replaceChildren(el("p", { class: "warn" }, `No run named ${route.run}.`)); return; }
        crumbs.replaceChildren(SINGLE ? "" : el("a", { href: "#" }, source.title || "runs"),
                               SINGLE ? run.name : " / " + run.name);
        const scroll = window.scrollY;
        renderRun(app, run, route.c || (keepSelection ? current.candidate : null));
        current.run = run.name;
        if (keepSelection) window.scrollTo(0, scroll);
        shown = run.name;
      } else {
        const rows = await source.index();
        crumbs.replaceChildren(source.title || "runs");
        renderIndex(app, rows, source.title, source.live);
        current = { run: null, candidate: null, tab: null };
        shown = "";
      }
      document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
    };
    window.addEventListener("hashchange", () => {
      const route = parseHash();
      if (route.run === shown && route.c) return; // a click inside the run view
      current.tab = null;
      show(false).catch(fail);
    });
    if (source.live) {
      source.onChange((changed) => {
        // a failed refresh keeps the page as it was; the next change tries again
        if (shown === "" || changed.includes(shown)) show(true).catch((err) => console.warn(err.message));
      });
    }
    await show(false);
  }

  function fail(err) {
    document.getElementById("app").replaceChildren(el("p", { class: "warn" }, "Could not show the data: " + err.message));
    throw err;
  }

  main().catch(fail);
})();
