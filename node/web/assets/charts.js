// charts.js: the dashboard's SVG charts, drawn from the /status training object. Each
// function returns an element to put in the page; nothing here fetches or keeps state.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";

// svg makes an SVG element with the given attributes and children.
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const k of kids) if (k != null) e.append(k);
  return e;
}

function svgText(x, y, s, anchor) {
  return svg("text", { x, y, "text-anchor": anchor || "start" }, String(s));
}

function svgTitle(s) { return svg("title", {}, s); }

// ticks returns about n round numbers spanning [lo, hi].
function ticks(lo, hi, n) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
  return out;
}

// frame is a chart area: pixel size, margins and linear scales from data to pixels.
function frame(w, h, xs, ys) {
  const m = { l: 52, r: 12, t: 10, b: 26 };
  const sx = (v) => m.l + (xs[1] === xs[0] ? 0.5 : (v - xs[0]) / (xs[1] - xs[0])) * (w - m.l - m.r);
  const sy = (v) => h - m.b - (ys[1] === ys[0] ? 0.5 : (v - ys[0]) / (ys[1] - ys[0])) * (h - m.t - m.b);
  return { w, h, m, sx, sy };
}

function axes(f, root, yt, fmtY, xt, fmtX) {
  root.append(svg("line", { class: "axis", x1: f.m.l, y1: f.h - f.m.b, x2: f.w - f.m.r, y2: f.h - f.m.b }));
  for (const v of yt) {
    const y = f.sy(v);
    root.append(svg("line", { class: "axis", x1: f.m.l, y1: y, x2: f.w - f.m.r, y2: y }));
    root.append(svgText(f.m.l - 6, y + 4, fmtY(v), "end"));
  }
  for (const v of xt) root.append(svgText(f.sx(v), f.h - 8, fmtX(v), "middle"));
}

// roundTicks picks at most 8 whole round numbers from the rounds shown.
function roundTicks(lo, hi) {
  return ticks(lo, hi, 7).filter((v) => Number.isInteger(v));
}

// lossChart draws the held-out loss after each closed round, with θ0's as a dashed line,
// and the network's canonical loss (canon: [round, loss] pairs, once known) over it.
function lossChart(t, canon) {
  const pts = t.rounds.filter((r) => typeof r.loss === "number").map((r) => [r.round, r.loss]);
  const ys = pts.map((p) => p[1]).concat(canon.map((p) => p[1]));
  if (typeof t.initial_loss === "number") ys.push(t.initial_loss);
  let lo = Math.min(...ys), hi = Math.max(...ys);
  const pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.05 || 1;
  lo -= pad; hi += pad;
  const x0 = pts[0][0], x1 = pts[pts.length - 1][0];
  const f = frame(640, 240, [x0, x1], [lo, hi]);
  const root = svg("svg", { viewBox: `0 0 ${f.w} ${f.h}`, role: "img", "data-points": pts.length,
    "aria-label": `held-out loss over ${pts.length} rounds` });
  axes(f, root, ticks(lo, hi, 4), (v) => v.toPrecision(3), roundTicks(x0, x1), String);
  if (typeof t.initial_loss === "number") {
    const y = f.sy(t.initial_loss);
    root.append(svg("line", { class: "ref", x1: f.m.l, y1: y, x2: f.w - f.m.r, y2: y }, svgTitle(`initial loss ${t.initial_loss.toFixed(4)}`)));
    root.append(svgText(f.w - f.m.r - 2, y - 4, "initial", "end"));
  }
  root.append(svg("polyline", { class: "loss", points: pts.map((p) => `${f.sx(p[0])},${f.sy(p[1])}`).join(" ") }));
  if (canon.length) {
    root.append(svg("polyline", { class: "canon", "data-points": canon.length,
      points: canon.map((p) => `${f.sx(p[0])},${f.sy(p[1])}`).join(" ") }, svgTitle("the network's canonical loss")));
  }
  if (pts.length <= 200) {
    for (const [r, l] of pts) {
      root.append(svg("circle", { class: "pt", cx: f.sx(r), cy: f.sy(l), r: 3, "data-round": r }, svgTitle(`round ${r}: loss ${l.toFixed(4)}`)));
    }
  }
  return root;
}

// timelineChart draws the last rounds on a time axis: each bar runs from the previous close
// to this round's close; its last stall_s seconds (local work waiting on this close) are
// orange, and a dashed box is the round still open.
function timelineChart(t, nowMS) {
  const rs = t.rounds.slice(-30).map((r) => ({ r, at: Date.parse(r.closed_at) })).filter((x) => !isNaN(x.at));
  const start = rs.length > 1 ? rs[0].at : rs[0].at - rs[0].r.deadline_s * 1000;
  const end = Math.max(nowMS, rs[rs.length - 1].at);
  const f = frame(640, 120, [0, (end - start) / 1000], [0, 1]);
  const root = svg("svg", { viewBox: `0 0 ${f.w} ${f.h}`, role: "img", "aria-label": "round timeline" });
  const span = (end - start) / 1000;
  axes(f, root, [], String, ticks(0, span, 6), (v) => `${(v - span).toFixed(span < 10 ? 1 : 0)} s`);
  const y = f.sy(0.85), hgt = f.sy(0.15) - f.sy(0.85);
  for (let i = 1; i < rs.length; i++) {
    const a = (rs[i - 1].at - start) / 1000, b = (rs[i].at - start) / 1000, r = rs[i].r;
    const stall = Math.min(r.stall_s, b - a);
    const tip = svgTitle(`round ${r.round}: ${(b - a).toFixed(1)} s between closes, stall ${r.stall_s.toFixed(2)} s, deadline ${r.deadline_s.toFixed(1)} s`);
    root.append(svg("rect", { class: "work", x: f.sx(a), y, width: Math.max(1, f.sx(b) - f.sx(a) - 1), height: hgt }, tip));
    if (stall > 0) root.append(svg("rect", { class: "stall", x: f.sx(b - stall), y, width: Math.max(1, f.sx(b) - f.sx(b - stall)), height: hgt }, tip.cloneNode(true)));
    if (rs.length <= 15 || i % 2 === 0) root.append(svgText((f.sx(a) + f.sx(b)) / 2, y - 4, r.round, "middle"));
  }
  const last = (rs[rs.length - 1].at - start) / 1000, now = (end - start) / 1000;
  if (now > last) {
    root.append(svg("rect", { class: "open", x: f.sx(last), y, width: Math.max(1, f.sx(now) - f.sx(last)), height: hgt },
      svgTitle(`round ${t.next_round}: open for ${(now - last).toFixed(1)} s`)));
  }
  return root;
}

// bytesChart draws the bytes sent and received during each of the last rounds on a log
// scale, with what a dense exchange of the model would cost as a dashed line.
function bytesChart(t) {
  const rs = t.rounds.slice(-40);
  const dense = t.dense_bytes_per_round || 0;
  const vals = rs.flatMap((r) => [r.wire_bytes_sent, r.wire_bytes_received]).filter((v) => v > 0);
  if (dense > 0) vals.push(dense);
  const lo = Math.floor(Math.log10(Math.max(1, Math.min(...vals, 1e3))));
  const hi = Math.ceil(Math.log10(Math.max(...vals, 10)) + 0.1);
  const f = frame(640, 220, [-0.5, rs.length - 0.5], [lo, hi]);
  const root = svg("svg", { viewBox: `0 0 ${f.w} ${f.h}`, role: "img", "aria-label": "bytes per round" });
  const yt = []; for (let e = lo; e <= hi; e++) yt.push(e);
  const xt = rs.length <= 12 ? rs.map((_, i) => i) : ticks(0, rs.length - 1, 6).filter(Number.isInteger);
  axes(f, root, yt, (e) => fmtBytes(Math.pow(10, e)), xt, (i) => rs[i].round);
  const bw = Math.max(1, (f.sx(1) - f.sx(0)) * 0.38);
  const bar = (cls, i, v, dx, what) => {
    if (!(v > 0)) return;
    const y = f.sy(Math.log10(v));
    root.append(svg("rect", { class: cls, x: f.sx(i) + dx, y, width: bw, height: f.h - f.m.b - y },
      svgTitle(`round ${rs[i].round}: ${what} ${fmtBytes(v)}` + (dense > 0 ? ` (${pct(v, dense)} of dense)` : ""))));
  };
  rs.forEach((r, i) => {
    bar("sent", i, r.wire_bytes_sent, -bw, "sent");
    bar("recv", i, r.wire_bytes_received, 0, "received");
  });
  if (dense > 0) {
    const y = f.sy(Math.log10(dense));
    root.append(svg("line", { class: "dense", x1: f.m.l, y1: y, x2: f.w - f.m.r, y2: y }, svgTitle(`dense: ${fmtBytes(dense)} per round`)));
    root.append(svgText(f.w - f.m.r - 2, y - 4, `dense ${fmtBytes(dense)}`, "end"));
  }
  return root;
}

// fmtBytes prints a byte count in binary units.
function fmtBytes(n) {
  if (typeof n !== "number" || !isFinite(n)) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(Math.round(n)) : n.toFixed(n < 10 ? 1 : 0)) + " " + u[i];
}

// pct is a as a percentage of b.
function pct(a, b) {
  if (!(b > 0)) return "–";
  const p = (100 * a) / b;
  return (p < 1 ? p.toFixed(2) : p.toFixed(p < 10 ? 1 : 0)) + "%";
}
