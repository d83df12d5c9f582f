// kmc explore and kmc replay --html: the whole front end, no build step, no library.
//
// Live (kmc explore): the page asks the server for /api/page?path=0.3.1 and draws it;
// the path lives in the URL's hash (#path=0.3.1), so a link names a path.
// Static (kmc replay --html): every step is embedded in the file as KMC_STATIC and the
// hash is #step=N; nothing is fetched.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const STATIC = window.KMC_STATIC || null;
  const SVG = "http://www.w3.org/2000/svg";
  let page = null;

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c);
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function show(v) {
    return typeof v === "string" ? v : JSON.stringify(v);
  }

  // ---------------------------------------------------------------- navigation

  function hashValue(name) {
    const m = new RegExp("[#&]" + name + "=([^&]*)").exec(location.hash);
    return m ? decodeURIComponent(m[1]) : null;
  }

  function goTo(link) {
    const target = STATIC ? "#step=" + link : "#path=" + link;
    if (location.hash === target) load(); else location.hash = target;
  }

  function stepLink(i) {
    // The link of the path that ends at step i of the steps shown.
    if (STATIC) return String(i);
    return page.full.slice(0, i + 1).join(".");
  }

  async function load() {
    $("error").textContent = "";
    try {
      if (STATIC) {
        const n = STATIC.states.length;
        let i = parseInt(hashValue("step") || "0", 10);
        if (!(i >= 0 && i < n)) i = 0;
        const s = STATIC.states[i];
        page = Object.assign({}, STATIC, {cursor: i, view: s.view, changes: s.changes,
                                          properties: s.properties, enabled: null, link: String(i)});
      } else {
        let link = hashValue("path");
        if (link === null) link = window.KMC_START || "";
        const r = await fetch("/api/page?path=" + encodeURIComponent(link));
        const body = await r.json();
        if (!r.ok) throw new Error(body.error || r.statusText);
        page = body;
      }
      render();
    } catch (e) {
      $("error").textContent = String(e.message || e);
    }
  }

  // -------------------------------------------------------------------- render

  function render() {
    document.title = (STATIC ? "kmc replay: " : "kmc explore: ") + page.title;
    $("title").textContent = page.title;
    const bits = [page.preset ? "preset " + page.preset : "", page.trace ? "trace " + page.trace.name : ""];
    $("meta").textContent = bits.filter(Boolean).join(" · ");
    const last = page.steps.length - 1;
    $("back").disabled = page.cursor <= (STATIC ? 0 : -1) || page.steps.length === 0;
    $("forward").disabled = page.cursor >= last;
    const base = location.href.replace(/#.*$/, "");
    $("link").value = base + (STATIC ? "#step=" : "#path=") + page.link;
    if (STATIC) {
      $("download").style.display = "none";
    } else {
      $("download").href = "/api/trace?path=" + encodeURIComponent(page.link);
      $("download").style.display = page.steps.length ? "" : "none";
    }
    renderSteps();
    renderState();
    renderEnabled();
    renderProperties();
    $("config").textContent = Object.entries(page.config || {}).map(([k, v]) => k + " = " + show(v)).join("\n");
    renderTimeline();
  }

  function renderSteps() {
    const ol = $("steps");
    ol.replaceChildren();
    page.steps.forEach((s, i) => {
      const li = el("li", {"data-step": i, title: s.fingerprint,
                           text: i + "  " + (s.action === null ? "initial state" : s.action)});
      if (i === page.cursor) li.classList.add("current");
      if (i > page.cursor) li.classList.add("ahead");
      li.addEventListener("click", () => goTo(stepLink(i)));
      ol.append(li);
    });
    const note = page.trace ? "trace: " + page.trace.name + " (" + page.trace.property + ")" : "";
    $("trace-note").textContent = note;
  }

  function renderState() {
    const view = $("view");
    view.replaceChildren();
    if (page.cursor < 0 || !page.view) {
      $("step-title").textContent = "Choose an initial state";
      $("changes").textContent = "";
      return;
    }
    const step = page.steps[page.cursor];
    $("step-title").textContent = step.lines[0];
    $("changes").textContent = step.lines.slice(1).join("\n");
    if (page.cursor === 0) $("changes").textContent = "";
    const changed = page.cursor === 0 ? [] : step.changed;
    view.append(...tree(page.view, "", changed));
  }

  function status(key, changed) {
    for (const c of changed) {
      if (c === key || key.startsWith(c + ".") || key.startsWith(c + "[")) return "changed";
    }
    for (const c of changed) {
      if (c.startsWith(key + ".") || c.startsWith(key + "[")) return "changed-within";
    }
    return "";
  }

  function tree(value, prefix, changed) {
    const out = [];
    const entries = Array.isArray(value) ? value.map((v, i) => ["[" + i + "]", v, true])
                                         : Object.entries(value).map(([k, v]) => [k, v, false]);
    for (const [k, v, isIndex] of entries) {
      const key = isIndex ? prefix + k : (prefix ? prefix + "." + k : k);
      const st = status(key, changed);
      if (v !== null && typeof v === "object" && Object.keys(v).length) {
        const d = el("details", {"data-key": key});
        d.open = true;
        d.append(el("summary", {}, el("span", {class: "k", text: k})));
        if (st) d.classList.add(st);
        d.append(...tree(v, key, changed));
        out.push(d);
      } else {
        const f = el("div", {class: "field", "data-key": key, "data-value": JSON.stringify(v)},
                     el("span", {class: "k", text: k}), ": ", el("span", {class: "v", text: show(v)}));
        if (st) f.classList.add(st === "changed-within" ? "changed" : st);
        out.push(f);
      }
    }
    return out;
  }

  function renderEnabled() {
    const ul = $("enabled");
    ul.replaceChildren();
    if (page.enabled === null) {
      ul.append(el("li", {class: "note", text: "a saved file: run kmc explore on the trace to branch off"}));
      return;
    }
    if (!page.enabled.length) ul.append(el("li", {class: "note", text: "no action is enabled here"}));
    const here = page.full.slice(0, page.cursor + 1);
    for (const a of page.enabled) {
      const b = el("button", {"data-index": a.index, "data-action": a.label, text: a.label});
      b.addEventListener("click", () => goTo(here.concat([a.index]).join(".")));
      ul.append(el("li", {}, b));
    }
  }

  function renderProperties() {
    const ul = $("properties");
    ul.replaceChildren();
    for (const p of page.properties || []) {
      ul.append(el("li", {class: "holds-" + p.holds, title: p.rationale, "data-property": p.name,
                          text: p.name + (p.step ? " (step)" : "")}));
    }
  }

  // ------------------------------------------------------------------ timeline

  function renderTimeline() {
    const box = $("timeline");
    box.replaceChildren();
    const tl = page.timeline;
    $("timeline-section").style.display = tl ? "" : "none";
    if (!tl) return;
    const laneX = {};
    const left = 60, laneW = 190, top = 34, rowPad = 8, lineH = 15;
    tl.lanes.forEach((l, i) => { laneX[l] = left + 40 + i * laneW; });
    const byStep = {};
    for (const e of tl.events) (byStep[e.step] = byStep[e.step] || []).push(e);
    const rows = [];
    let y = top;
    page.steps.forEach((s, i) => {
      const evs = byStep[i] || [];
      const perLane = {};
      for (const e of evs) perLane[e.lane] = (perLane[e.lane] || 0) + 1;
      const h = rowPad + lineH * Math.max(1, ...Object.values(perLane), 1);
      rows.push({i, y, h, evs});
      y += h;
    });
    const width = left + 40 + tl.lanes.length * laneW + 160;   // room for the last lane's labels
    const s = svg("svg", {class: "timeline", width: width, height: y + 10, viewBox: "0 0 " + width + " " + (y + 10)});
    const defs = svg("defs");
    const marker = svg("marker", {id: "arrowhead", markerWidth: 8, markerHeight: 8, refX: 7, refY: 4, orient: "auto"});
    marker.append(svg("path", {d: "M0,0 L8,4 L0,8 z", fill: "#0969da"}));
    defs.append(marker);
    s.append(defs);
    for (const r of rows) {
      const g = svg("g", {class: "row" + (r.i === page.cursor ? " current" : ""), "data-step": r.i});
      g.append(svg("rect", {class: "row-bg", x: 0, y: r.y, width: width, height: r.h}));
      g.append(svg("text", {x: 6, y: r.y + 13, fill: "#6a737d"}, String(r.i)));
      g.addEventListener("click", () => goTo(stepLink(r.i)));
      s.append(g);
    }
    for (const l of tl.lanes) {
      s.append(svg("text", {class: "lane-title", x: laneX[l], y: 18, "text-anchor": "middle"}, l));
      s.append(svg("line", {class: "lane-line", x1: laneX[l], y1: top - 8, x2: laneX[l], y2: y}));
    }
    for (const r of rows) {
      const used = {};
      for (const e of r.evs) {
        const k = used[e.lane] = (used[e.lane] || 0) + 1;
        const ey = r.y + rowPad / 2 + lineH * (k - 1) + lineH / 2 + 2;
        const common = {"data-step": e.step, "data-lane": e.lane, "data-label": e.label, "data-category": e.category};
        if (e.kind === "message") {
          const x1 = laneX[e.source], x2 = laneX[e.lane];
          const g = svg("g", Object.assign({class: "tl-arrow " + e.category, "data-source": e.source}, common));
          const dir = x2 > x1 ? 1 : -1;
          g.append(svg("line", {x1: x1, y1: ey, x2: x2 - dir * 4, y2: ey, "marker-end": "url(#arrowhead)"}));
          g.append(svg("text", {x: (x1 + x2) / 2, y: ey - 3, "text-anchor": "middle"}, e.label));
          g.append(svg("title", {}, e.detail || e.label));
          s.append(g);
        } else {
          const x = laneX[e.lane];
          const g = svg("g", Object.assign({class: "tl-mark " + e.category}, common));
          g.append(svg("circle", {cx: x, cy: ey - 4, r: 4}));
          g.append(svg("text", {x: x + 8, y: ey}, e.label));
          g.append(svg("title", {}, e.detail || e.label));
          s.append(g);
        }
      }
    }
    box.append(s);
  }

  // ------------------------------------------------------------------- wiring

  $("back").addEventListener("click", () => {
    if (page.cursor > 0) goTo(stepLink(page.cursor - 1));
    else if (!STATIC) goTo("");
  });
  $("forward").addEventListener("click", () => goTo(stepLink(page.cursor + 1)));
  $("copy").addEventListener("click", () => {
    const input = $("link");
    const done = () => { $("copy").textContent = "copied"; setTimeout(() => { $("copy").textContent = "copy link"; }, 1200); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(input.value).then(done, () => { input.select(); document.execCommand("copy"); done(); });
    } else {
      input.select(); document.execCommand("copy"); done();
    }
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT") return;
    if (ev.key === "ArrowLeft") $("back").click();
    if (ev.key === "ArrowRight" && !$("forward").disabled) $("forward").click();
  });
  window.addEventListener("hashchange", load);
  window.kmcReady = load();
})();
