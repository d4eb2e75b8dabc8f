// Recall's graph page: a force-directed drawing of one dataset's knowledge
// graph on a canvas. Self-contained (no network): the data is embedded in
// the page. Repulsion works on a grid (only nearby nodes push each other),
// so a layout of 5 000 nodes stays interactive.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("graph-data").textContent);
  const canvas = document.getElementById("graph");
  const ctx = canvas.getContext("2d");
  const palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#2ca02c"];

  const nodes = data.nodes.map((n, i) => ({ ...n, index: i, x: 0, y: 0, vx: 0, vy: 0, degree: 0 }));
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const edges = data.edges
    .map((e) => ({ source: byId.get(e.source), target: byId.get(e.target), label: e.label }))
    .filter((e) => e.source && e.target && e.source !== e.target);
  edges.forEach((e) => { e.source.degree++; e.target.degree++; });

  const types = [...new Set(nodes.map((n) => n.type))].sort();
  const colour = new Map(types.map((t, i) => [t, palette[i % palette.length]]));
  const radius = (n) => 3 + Math.min(9, Math.sqrt(n.degree) * 1.5);
  // Nameless nodes (chunks, summaries) are shown by the start of their text.
  const shorten = (s, max) => (s.length > max ? s.slice(0, max - 1) + "…" : s);
  nodes.forEach((n) => {
    const text = n.properties && n.properties.text;
    const nameless = n.label.startsWith(n.type + "_");
    n.display = nameless && typeof text === "string" ? shorten(text, 32) : shorten(n.label, 40);
  });

  // The page's text: counts, the legend, and every name for the search box.
  document.getElementById("stats").textContent = nodes.length + " nodes · " + edges.length + " edges";
  const legend = document.getElementById("legend");
  for (const t of types) {
    const li = document.createElement("li");
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = colour.get(t);
    li.append(sw, document.createTextNode(t + " (" + nodes.filter((n) => n.type === t).length + ")"));
    legend.append(li);
  }
  const names = document.getElementById("node-names");
  for (const n of nodes) {
    const o = document.createElement("option");
    o.value = n.label;
    names.append(o);
  }

  // Layout: nodes start on a sunflower spiral, then forces settle them.
  const k = 40;
  nodes.forEach((n, i) => {
    const r = k * Math.sqrt(i + 0.5);
    const a = i * 2.39996;
    n.x = r * Math.cos(a);
    n.y = r * Math.sin(a);
  });
  let temperature = k * 2;
  let iterations = 0;
  const maxIterations = nodes.length > 2000 ? 160 : 300;

  function step() {
    const cell = k * 2;
    const grid = new Map();
    for (const n of nodes) {
      const key = Math.floor(n.x / cell) + "," + Math.floor(n.y / cell);
      let bucket = grid.get(key);
      if (!bucket) grid.set(key, (bucket = []));
      bucket.push(n);
      n.vx = 0;
      n.vy = 0;
    }
    for (const n of nodes) {
      const cx = Math.floor(n.x / cell), cy = Math.floor(n.y / cell);
      for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) {
        const bucket = grid.get((cx + dx) + "," + (cy + dy));
        if (!bucket) continue;
        for (const m of bucket) {
          if (m === n) continue;
          let ddx = n.x - m.x, ddy = n.y - m.y;
          let d2 = ddx * ddx + ddy * ddy;
          if (d2 < 0.01) { ddx = (n.index - m.index) * 0.1 || 0.1; ddy = 0.1; d2 = ddx * ddx + ddy * ddy; }
          if (d2 > cell * cell) continue;
          const f = (k * k) / d2;
          n.vx += ddx * f;
          n.vy += ddy * f;
        }
      }
    }
    for (const e of edges) {
      const dx = e.target.x - e.source.x, dy = e.target.y - e.source.y;
      const d = Math.sqrt(dx * dx + dy * dy) || 0.01;
      const f = d / k;
      e.source.vx += dx * f * 0.5; e.source.vy += dy * f * 0.5;
      e.target.vx -= dx * f * 0.5; e.target.vy -= dy * f * 0.5;
    }
    for (const n of nodes) {
      n.vx -= n.x * 0.01;
      n.vy -= n.y * 0.01;
      const v = Math.sqrt(n.vx * n.vx + n.vy * n.vy) || 1;
      const move = Math.min(v, temperature);
      n.x += (n.vx / v) * move;
      n.y += (n.vy / v) * move;
    }
    temperature = Math.max(1, temperature * 0.985);
    iterations++;
  }

  // View: zoom and pan.
  const view = { x: 0, y: 0, scale: 1 };
  let selected = null;
  let fitted = false;

  function resize() {
    const r = canvas.parentElement.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, r.width * dpr);
    canvas.height = Math.max(1, r.height * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    draw();
  }

  function fit() {
    if (!nodes.length) return;
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (const n of nodes) { minX = Math.min(minX, n.x); minY = Math.min(minY, n.y); maxX = Math.max(maxX, n.x); maxY = Math.max(maxY, n.y); }
    const r = canvas.parentElement.getBoundingClientRect();
    view.scale = Math.min(4, 0.9 * Math.min(r.width / (maxX - minX + 1), r.height / (maxY - minY + 1)));
    view.x = r.width / 2 - ((minX + maxX) / 2) * view.scale;
    view.y = r.height / 2 - ((minY + maxY) / 2) * view.scale;
  }

  function draw() {
    const r = canvas.parentElement.getBoundingClientRect();
    ctx.clearRect(0, 0, r.width, r.height);
    ctx.save();
    ctx.translate(view.x, view.y);
    ctx.scale(view.scale, view.scale);
    ctx.lineWidth = 0.8 / view.scale;
    ctx.strokeStyle = "rgba(120,130,150,0.45)";
    ctx.beginPath();
    for (const e of edges) { ctx.moveTo(e.source.x, e.source.y); ctx.lineTo(e.target.x, e.target.y); }
    ctx.stroke();
    const fontPx = 11 / view.scale;
    ctx.font = fontPx + "px system-ui, sans-serif";
    if (view.scale > 1.2 || edges.length < 150) {
      ctx.fillStyle = "#7a8394";
      ctx.textAlign = "center";
      for (const e of edges) ctx.fillText(e.label, (e.source.x + e.target.x) / 2, (e.source.y + e.target.y) / 2);
    }
    for (const n of nodes) {
      ctx.beginPath();
      ctx.arc(n.x, n.y, radius(n), 0, Math.PI * 2);
      ctx.fillStyle = colour.get(n.type);
      ctx.fill();
      if (n === selected) { ctx.lineWidth = 3 / view.scale; ctx.strokeStyle = "#111"; ctx.stroke(); }
    }
    ctx.fillStyle = "#1d2330";
    ctx.textAlign = "left";
    const showAll = view.scale > 0.8 || nodes.length < 200;
    for (const n of nodes) {
      if (showAll || n.degree >= 8 || n === selected) ctx.fillText(n.display, n.x + radius(n) + 2 / view.scale, n.y + fontPx / 3);
    }
    ctx.restore();
  }

  function toWorld(px, py) { return { x: (px - view.x) / view.scale, y: (py - view.y) / view.scale }; }

  function nodeAt(px, py) {
    const p = toWorld(px, py);
    let best = null, bestD = Infinity;
    for (const n of nodes) {
      const d = Math.hypot(n.x - p.x, n.y - p.y);
      if (d < radius(n) + 4 / view.scale && d < bestD) { best = n; bestD = d; }
    }
    return best;
  }

  function show(n) {
    selected = n;
    const details = document.getElementById("details");
    details.replaceChildren();
    if (!n) { draw(); return; }
    const table = document.createElement("table");
    const row = (k, v) => {
      const tr = document.createElement("tr");
      const a = document.createElement("td"), b = document.createElement("td");
      a.textContent = k;
      b.textContent = typeof v === "string" ? v : JSON.stringify(v);
      tr.append(a, b);
      table.append(tr);
    };
    row("name", n.label);
    row("type", n.type);
    row("id", n.id);
    row("connections", String(n.degree));
    for (const [k, v] of Object.entries(n.properties || {})) row(k, v);
    details.append(table);
    draw();
  }

  function focus(n) {
    const r = canvas.parentElement.getBoundingClientRect();
    view.scale = Math.max(view.scale, 1.5);
    view.x = r.width / 2 - n.x * view.scale;
    view.y = r.height / 2 - n.y * view.scale;
    show(n);
  }

  let drag = null;
  canvas.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, y: ev.clientY, vx: view.x, vy: view.y, moved: false }; canvas.classList.add("dragging"); });
  window.addEventListener("mousemove", (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    view.x = drag.vx + dx;
    view.y = drag.vy + dy;
    draw();
  });
  window.addEventListener("mouseup", (ev) => {
    if (drag && !drag.moved) {
      const rect = canvas.getBoundingClientRect();
      show(nodeAt(ev.clientX - rect.left, ev.clientY - rect.top));
    }
    drag = null;
    canvas.classList.remove("dragging");
  });
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const rect = canvas.getBoundingClientRect();
    const px = ev.clientX - rect.left, py = ev.clientY - rect.top;
    const factor = Math.exp(-ev.deltaY * 0.0015);
    const scale = Math.min(20, Math.max(0.02, view.scale * factor));
    view.x = px - ((px - view.x) * scale) / view.scale;
    view.y = py - ((py - view.y) * scale) / view.scale;
    view.scale = scale;
    draw();
  }, { passive: false });
  document.getElementById("search").addEventListener("change", (ev) => {
    const q = ev.target.value.trim().toLowerCase();
    if (!q) return;
    const hit = nodes.find((n) => n.label.toLowerCase() === q) || nodes.find((n) => n.label.toLowerCase().includes(q));
    if (hit) focus(hit);
  });
  window.addEventListener("resize", resize);

  function animate() {
    const budget = performance.now() + 12;
    while (iterations < maxIterations && performance.now() < budget) step();
    if (!fitted || iterations < maxIterations) fit();
    fitted = true;
    draw();
    if (iterations < maxIterations) requestAnimationFrame(animate);
    else document.body.dataset.layout = "done";
  }
  resize();
  requestAnimationFrame(animate);
})();
