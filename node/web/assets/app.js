// app.js: polls the node's local API and draws the dashboard. Every value shown comes from
// /status, /peers, /ledger, /agreement or /evidence; peer IDs and reasons are put in the
// page as text, never as markup.
"use strict";

const POLL_MS = 2000;
const FETCH_TIMEOUT_MS = 5000;

// last is what the API said at the last successful poll; lastOK when that was (0: never).
const last = { status: null, peers: null, ledger: null, agreement: null, slashes: null, lastOK: 0, error: "" };

// el makes an HTML element with attributes (class, data-*, ...) and children (text or nodes).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v != null && v !== false) e.setAttribute(k, String(v));
  }
  for (const k of kids) if (k != null) e.append(k);
  return e;
}

function empty(msg) { return el("p", { class: "empty" }, msg); }

function show(id, ...nodes) { document.getElementById(id).replaceChildren(...nodes); }

async function getJSON(path) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
  try {
    const r = await fetch(path, { cache: "no-store", signal: ctl.signal });
    if (!r.ok) throw new Error(`${path}: ${r.status} ${r.statusText}`);
    return await r.json();
  } finally {
    clearTimeout(timer);
  }
}

// poll reads the API and redraws, then schedules itself again. A bootstrap node keeps no
// ledger, so /ledger, /agreement and /evidence are asked only of a node that trains.
async function poll() {
  try {
    const [status, peers] = await Promise.all([getJSON("/status"), getJSON("/peers")]);
    const [ledger, agreement, slashes] = status.training
      ? await Promise.all([getJSON("/ledger"), getJSON("/agreement"), getJSON("/evidence")]) : [null, null, null];
    Object.assign(last, { status, peers, ledger, agreement, slashes, lastOK: Date.now(), error: "" });
  } catch (e) {
    last.error = e && e.name === "AbortError" ? "no answer within 5 s" : String((e && e.message) || e);
  }
  try {
    render();
  } catch (e) {
    console.error("dashboard:", e);
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

function render() {
  renderConn();
  const s = last.status;
  if (!s) return;
  const t = s.training;
  document.getElementById("insecure").hidden = !(t && t.insecure);
  renderNode(s);
  renderTraining(t, s.role, last.agreement);
  renderAgreement(last.agreement, s.role);
  renderPeers(last.peers || [], last.ledger);
  renderStake(last.ledger, s, last.slashes || []);
}

// renderConn says whether the node answers; when it stopped answering, the page keeps the
// last data it had and says since when.
function renderConn() {
  const conn = document.getElementById("conn"), banner = document.getElementById("banner");
  banner.hidden = !last.error;
  if (!last.error) {
    conn.className = "pill ok";
    conn.textContent = "live";
    return;
  }
  conn.className = "pill down";
  conn.textContent = "node not answering";
  banner.replaceChildren(last.lastOK
    ? `The node's API stopped answering at ${new Date(last.lastOK).toLocaleTimeString()} (${last.error}): the node is stopped or unreachable. Showing the last data it sent; retrying every 2 s.`
    : `Cannot reach the node's API (${last.error}). Is the node running? Retrying every 2 s.`);
}

function fmtDur(s) {
  s = Math.floor(s);
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  if (d) return `${d}d ${h}h ${m}m`;
  if (h) return `${h}h ${m}m`;
  return m ? `${m}m ${s % 60}s` : `${s}s`;
}

function renderNode(s) {
  const t = s.training;
  const rows = [
    ["peer ID", el("span", { class: "mono", id: "peer-id" }, s.peer_id)],
    ["role", s.role],
    ["network", el("span", { class: "mono" }, s.network)],
    ["run", s.run],
    ["version", s.version || "unknown"],
    ["uptime", fmtDur(s.uptime_s)],
    ["attestation", t ? el("span", {}, t.attestation, t.insecure ? " " : null, t.insecure ? el("span", { class: "tag bad" }, "INSECURE") : null)
      : "none (a bootstrap node does not train)"],
    ["connected peers", String(s.connected_peers)],
    ["DHT table", String(s.dht_table_size)],
  ];
  if (t) {
    rows.push(
      ["task", t.task],
      ["next round", `${t.next_round} (epoch ${t.epoch})`],
      ["state root", el("span", { class: "mono", title: t.state_root }, (t.state_root || "").slice(0, 16))],
      ["ledger root", el("span", { class: "mono", title: t.ledger_root }, (t.ledger_root || "").slice(0, 16))],
      ["wire, all rounds", `${fmtBytes(t.wire_bytes_sent)} sent, ${fmtBytes(t.wire_bytes_received)} received`],
      ["stall, verification", `${t.stall_s.toFixed(1)} s stalled, ${t.verify_cpu_s.toFixed(1)} s verifying`],
      ["peak memory", fmtBytes(t.peak_rss_bytes)],
    );
    if (t.slashed && t.slashed.length) rows.push(["slashed", el("span", { class: "bad" }, t.slashed.join(", "))]);
  }
  show("node", ...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

// canonicalLoss is the network's canonical loss per round, as [round, loss], once known.
function canonicalLoss(agreement) {
  return ((agreement && agreement.rounds) || []).filter((r) => typeof r.canonical_loss === "number").map((r) => [r.round, r.canonical_loss]);
}

function renderTraining(t, role, agreement) {
  if (!t) {
    const msg = `This is a ${role} node: it helps others join and does not train, so it has no rounds, loss or ledger.`;
    for (const id of ["loss", "timeline", "bytes", "rounds"]) show(id, empty(msg));
    return;
  }
  const rounds = t.rounds || [];
  const scored = rounds.filter((r) => typeof r.loss === "number").length;
  if (!rounds.length) {
    const msg = `No round closed yet: round ${t.next_round} is in progress. A round closes once the next round's local work is done and the peers' contributions are in.`;
    for (const id of ["loss", "timeline", "bytes", "rounds"]) show(id, empty(msg));
    if (typeof t.initial_loss === "number") show("loss", empty(`${msg} Initial held-out loss ${t.initial_loss.toFixed(4)}.`));
    return;
  }
  const canon = canonicalLoss(agreement);
  show("loss", scored ? lossChart(t, canon) : empty(`${rounds.length} round(s) closed; the held-out loss is being evaluated.`),
    el("p", { class: "legend" }, el("i", { class: "loss" }), "this node", el("i", { class: "canon" }),
      canon.length ? `the network's canonical loss (${canon.length} round(s) where this node holds the majority's root)` : "the network's canonical loss: not known yet (no round with a majority of the stake on one root)",
      ` · ${scored} round(s) scored` + (scored ? `, last loss ${rounds.filter((r) => typeof r.loss === "number").pop().loss.toFixed(4)}` : "")));
  const tl = rounds.some((r) => !isNaN(Date.parse(r.closed_at)));
  show("timeline", tl ? timelineChart(t, Date.now()) : empty("no close times yet"),
    el("p", { class: "legend" }, el("i", { class: "work" }), "between closes", el("i", { class: "stall" }), "stall (local work waiting on the close)",
      ` · round ${t.next_round} open · deadline in force ${rounds[rounds.length - 1].deadline_s.toFixed(1)} s`));
  show("bytes", bytesChart(t), el("p", { class: "legend" }, el("i", { class: "sent" }), "sent", el("i", { class: "recv" }), "received",
    el("i", { class: "dense" }), `dense ${fmtBytes(t.dense_bytes_per_round)} per round (log scale)`));
  renderRounds(rounds, t.dense_bytes_per_round);
}

function reasons(m) {
  const ks = Object.keys(m || {}).filter((k) => m[k] > 0).sort();
  return ks.length ? ks.map((k) => `${k} ${m[k]}`).join(", ") : "–";
}

// renderRounds is the table of the last closed rounds, newest first, with totals over all
// the rounds the node keeps.
function renderRounds(rounds, dense) {
  const total = {};
  let inc = 0;
  for (const r of rounds) {
    inc += (r.included || []).length;
    for (const [k, v] of Object.entries(r.rejected || {})) total[k] = (total[k] || 0) + v;
  }
  const head = el("tr", {}, ...["round", "closed", "loss", "included", "rejected (reason count)", "evidence", "stall s", "deadline s",
    "sent", "received", "sent / dense", "own contribution"].map((h) => el("th", {}, h)));
  const body = rounds.slice(-50).reverse().map((r) => el("tr", { "data-round": r.round },
    el("td", {}, String(r.round)),
    el("td", {}, isNaN(Date.parse(r.closed_at)) ? "–" : new Date(r.closed_at).toLocaleTimeString()),
    el("td", {}, typeof r.loss === "number" ? r.loss.toFixed(4) : "…"),
    el("td", { class: "included" }, String((r.included || []).length)),
    el("td", { class: Object.keys(r.rejected || {}).length ? "warn" : null }, reasons(r.rejected)),
    el("td", { class: r.evidence ? "bad" : null }, String(r.evidence)),
    el("td", { class: r.stall_s > 0 ? "warn" : null }, r.stall_s.toFixed(2)),
    el("td", {}, r.deadline_s.toFixed(1)),
    el("td", {}, fmtBytes(r.wire_bytes_sent)),
    el("td", {}, fmtBytes(r.wire_bytes_received)),
    el("td", {}, pct(r.wire_bytes_sent, dense)),
    el("td", {}, fmtBytes(r.contribution_bytes))));
  show("rounds", el("p", {}, `Over the last ${rounds.length} round(s): ${inc} contributions included; rejected: ${reasons(total)}.`),
    el("div", { class: "scroll" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...body))));
}

// byPeer indexes the ledger's rows by peer ID.
function byPeer(ledger) {
  const m = new Map();
  for (const p of (ledger && ledger.peers) || []) m.set(p.peer, p);
  return m;
}

function renderPeers(peers, ledger) {
  if (!peers.length) {
    show("peers", empty("No peer connected yet: the node is looking for its bootstrap peers and the network's DHT."));
    return;
  }
  const rows = byPeer(ledger);
  const sorted = [...peers].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const na = ledger ? "–" : "no ledger";
  const head = el("tr", {}, ...["peer", "latency", "score", "stake", "addresses"].map((h) => el("th", {}, h)));
  const body = sorted.map((p) => {
    const l = rows.get(p.id);
    return el("tr", { "data-peer": p.id },
      el("td", { class: "peer" }, p.id),
      el("td", { class: "latency" }, p.latency_ms > 0 ? `${p.latency_ms.toFixed(1)} ms` : "–"),
      el("td", { class: "score" }, l ? String(l.score) : na),
      el("td", { class: "stake" }, l ? String(l.stake) : na),
      el("td", {}, String((p.addresses || []).length)));
  });
  show("peers", el("table", {}, el("thead", {}, head), el("tbody", {}, ...body)));
}

const short = (root) => (root || "").slice(0, 12);

// renderAgreement is the agreement view: per closed round, this node's state root, the
// root most of the stake signed, the records seen and the power behind this node's root.
function renderAgreement(a, role) {
  if (!a) {
    show("agreement", empty(role === "bootstrap" ? "A bootstrap node does not train: it has no rounds to agree on." : "The node has not answered yet."));
    return;
  }
  const head = el("p", {}, a.canonical_root
    ? `Canonical through round ${a.canonical_round} (root ${short(a.canonical_root)}); `
    : "No round decided by a majority of the stake yet; ",
  a.agrees ? el("span", { class: "tag self" }, "this node agrees") : el("span", { class: "tag bad" }, a.stale ? "stale: needs a checkpoint" : "repairing"),
  ` · ${a.repairs} round(s) repaired · ${a.waiting} shard(s) awaited · total power ${a.total_power}`);
  if (!a.rounds.length) {
    show("agreement", head, empty("No round closed yet."));
    return;
  }
  const th = el("tr", {}, ...["round", "this node's root", "majority root", "", "repaired", "records seen", "power on this node's root", "roots named"].map((h) => el("th", {}, h)));
  const body = a.rounds.slice().reverse().map((r) => {
    const own = r.roots.find((v) => v.own) || { power: 0 };
    const agrees = r.majority && r.majority === r.root;
    return el("tr", { "data-round": r.round },
      el("td", {}, String(r.round)),
      el("td", { class: "mono own-root", title: r.root }, short(r.root)),
      el("td", { class: "mono majority", title: r.majority }, r.majority ? short(r.majority) : "–"),
      el("td", { class: agrees ? "ok" : r.majority ? "bad" : null }, agrees ? "agrees" : r.majority ? "differs" : "undecided"),
      el("td", { class: r.repaired ? "warn" : null }, r.repaired ? "yes" : "no"),
      el("td", { class: "records" }, String(r.records)),
      el("td", { class: "power" }, `${own.power} / ${a.total_power}`),
      el("td", {}, String(r.roots.length)));
  });
  show("agreement", head, el("div", { class: "scroll" }, el("table", {}, el("thead", {}, th), el("tbody", {}, ...body))));
}

// slashLinks links each penalty of peer to its evidence (GET /evidence/{id}).
function slashLinks(slashes, peer) {
  const mine = slashes.filter((x) => x.peer === peer);
  if (!mine.length) return "–";
  return el("span", {}, ...mine.map((x) => el("a", { class: "evidence", href: `/evidence/${x.evidence}`, "data-evidence": x.evidence,
    title: `${x.kind} in round ${x.offence_round}: slashed ${x.amount} in round ${x.round}; the evidence, decoded` }, `${x.kind} r${x.offence_round} (−${x.amount})`)));
}

function renderStake(ledger, s, slashes) {
  if (!ledger) {
    show("stake", empty(s.training ? "The ledger has not answered yet." : "A bootstrap node keeps no ledger."));
    return;
  }
  const head = el("tr", {}, ...["peer", "stake", "balance", "power", "jailed", "offences", "slashes (evidence)", "contributions", "score"].map((h) => el("th", {}, h)));
  const slashed = new Set((s.training && s.training.slashed) || []);
  const body = ledger.peers.map((p) => el("tr", { "data-peer": p.peer, class: p.jailed ? "jailed" : null },
    el("td", { class: "peer" }, p.peer,
      p.peer === s.peer_id ? el("span", { class: "tag self" }, "this node") : null,
      slashed.has(p.peer) ? el("span", { class: "tag bad" }, "slashed") : null),
    el("td", { class: "stake" }, String(p.stake)),
    el("td", { class: "balance" }, String(p.balance)),
    el("td", { class: "power" }, String(p.power)),
    el("td", { class: p.jailed ? "jailed bad" : "jailed" }, p.jailed ? `until round ${p.jailed_until}` : "no"),
    el("td", { class: p.offences ? "offences bad" : "offences" }, String(p.offences)),
    el("td", { class: "slashes" }, slashLinks(slashes, p.peer)),
    el("td", {}, String(p.contributions)),
    el("td", {}, String(p.score))));
  show("stake", el("p", {}, `Ledger at round ${ledger.round}, total power ${ledger.total_power}, root `,
    el("span", { class: "mono", title: ledger.root }, ledger.root.slice(0, 16))),
  ledger.peers.length ? el("table", { "data-round": ledger.round }, el("thead", {}, head), el("tbody", {}, ...body)) : empty("The ledger has no accounts."));
}

poll();
