// The allot dashboard: polls the JSON API with the token the user gave and
// redraws each section. It adds nothing to what the API returns: a section
// the token may not read is hidden.
"use strict";

const POLL_MS = 1500;
const WHY_MAX = 25; // queued jobs asked for an estimated start per poll
const PREEMPT_MAX = 20;
const RESERVATIONS_MAX = 20; // reservations whose report (nodes, use) is asked per poll
let timer = null;

function $(sel) { return document.querySelector(sel); }

// el builds an element with text and attributes; children may follow.
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v;
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k) e.append(k);
  return e;
}

function row(cells, attrs) {
  return el("tr", attrs, ...cells.map(c => c instanceof Node ? el("td", {}, c) : el("td", { text: c == null ? "" : String(c) })));
}

function fill(section, rows, empty) {
  const body = $(section + " tbody");
  body.replaceChildren(...rows);
  if (rows.length === 0) body.append(el("tr", { class: "empty" }, el("td", { colspan: "10", text: empty })));
}

function round(x) { return Math.round(x * 100) / 100; }

function when(t) { return t ? new Date(t).toLocaleTimeString() : "—"; }

function priorityClass(p) {
  const c = String(p || "").split(":")[0];
  return ["critical", "standard", "batch", "spot"].includes(c) ? c : "other";
}

// api GETs path with the token: the decoded body, or null on 403/404 (the
// token may not read it, or the server has no such endpoint).
async function api(path) {
  const r = await fetch(path, { headers: { Authorization: "Bearer " + sessionStorage.getItem("allot-token") }, cache: "no-store" });
  if (r.status === 403 || r.status === 404) return null;
  if (r.status === 401) throw Object.assign(new Error("the token was refused (401)"), { unauthorized: true });
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}

async function poll() {
  try {
    const [jobs, nodes, alerts, usage, parts, tenants, endpoints, resList] = await Promise.all([
      api("/v1/jobs"), api("/v1/nodes"), api("/v1/alerts"), api("/v1/usage"),
      api("/v1/partitions"), api("/v1/tenants"), api("/v1/endpoints"), api("/v1/reservations")]);
    // Each reservation's report: what it holds now, and its use.
    const resNames = ((resList && resList.reservations) || []).map(r => r.name).slice(0, RESERVATIONS_MAX);
    const reports = await Promise.all(resNames.map(n => api("/v1/reservations/" + encodeURIComponent(n)).catch(() => null)));
    const list = (jobs && jobs.jobs) || [];
    // Pending work: queued jobs, and pipeline steps Blocked on a predecessor
    // (they hold nothing and the scheduler does not consider them yet).
    const queued = list.filter(j => j.state === "Queued" || j.state === "Blocked");
    const asked = queued.filter(j => j.state === "Queued").slice(0, WHY_MAX);
    const whys = await Promise.all(asked.map(j => api("/v1/jobs/" + encodeURIComponent(j.id) + "/why").catch(() => null)));
    const why = {};
    asked.forEach((j, i) => { why[j.id] = whys[i]; });
    drawAlerts(alerts);
    drawFleet(nodes, list, tenants, reports);
    drawQueue(queued, why);
    drawRunning(list);
    drawPreemptions(list);
    drawPartitions(parts, tenants, nodes, list);
    drawReservations(resList, reports);
    drawUsage(usage);
    drawEndpoints(endpoints);
    $("#who").textContent = nodes ? "admin" : "tenant view";
    $("#error").textContent = "";
    $("#updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
  } catch (e) {
    $("#error").textContent = String(e.message || e);
    if (e.unauthorized) { signOut(String(e.message)); return; }
  }
  timer = setTimeout(poll, POLL_MS);
}

const ALERTS_MAX = 12;

function drawAlerts(a) {
  const s = $("#alerts");
  s.hidden = a === null;
  if (!a) return;
  // Firing first, then pending, then resolved; at most ALERTS_MAX lines.
  const rank = { firing: 0, pending: 1, resolved: 2 };
  const all = (a.alerts || []).slice().sort((x, y) => (rank[x.state] ?? 3) - (rank[y.state] ?? 3));
  const items = all.slice(0, ALERTS_MAX).map(x => el("li", { class: x.state, "data-alert": x.name },
    el("span", { text: `${x.state} ${x.severity} ${x.name}: ${x.summary} (since ${when(x.since)})` })));
  if (all.length > ALERTS_MAX) items.push(el("li", { text: `… and ${all.length - ALERTS_MAX} more (allot alert list)` }));
  if (items.length === 0) items.push(el("li", { text: "no alerts" }));
  s.querySelector("ul").replaceChildren(...items);
}

// gpuHolders maps node → GPU index → [{job, cls, part, milli}].
function gpuHolders(jobs, partOf) {
  const m = {};
  for (const j of jobs) {
    if (j.state !== "Running" && j.state !== "Preparing") continue;
    for (const a of j.allocations || []) {
      const n = m[a.node] || (m[a.node] = {});
      for (const g of a.gpus || []) (n[g] || (n[g] = [])).push({ job: j.id, cls: priorityClass(j.priority),
        part: partOf[j.tenant] || "", milli: a.gpu_milli || 1000 });
    }
  }
  return m;
}

// Partitions get an outline colour each, in the tenancy's order.
const PART_COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"];

function drawFleet(nodes, jobs, tenants, reports) {
  const s = $("#fleet");
  s.hidden = nodes === null;
  if (!nodes) return;
  const partOf = {}, partColour = {};
  for (const t of (tenants && tenants.tenants) || []) {
    partOf[t.name] = t.partition;
    if (t.partition && !(t.partition in partColour)) {
      partColour[t.partition] = PART_COLOURS[Object.keys(partColour).length % PART_COLOURS.length];
    }
  }
  const holders = gpuHolders(jobs, partOf);
  const reservedBy = {}; // node → the reservation that holds or keeps it
  for (const r of reports || []) if (r) for (const n of (r.use && r.use.nodes) || []) reservedBy[n] = r;
  const tree = {};
  for (const n of nodes.nodes || []) {
    const r = tree[n.region] || (tree[n.region] = {});
    const c = r[n.cluster] || (r[n.cluster] = {});
    const l = c[n.leaf || "no leaf group"] || (c[n.leaf || "no leaf group"] = {});
    const rack = n.rack || "no rack";
    (l[rack] || (l[rack] = [])).push(n);
  }
  const out = [];
  for (const region of Object.keys(tree).sort()) {
    const rd = el("div", { class: "region", "data-region": region }, el("h3", { text: region }));
    for (const cluster of Object.keys(tree[region]).sort()) {
      const cd = el("div", { class: "cluster", "data-cluster": cluster }, el("h4", { text: cluster }));
      for (const leaf of Object.keys(tree[region][cluster]).sort()) {
        const ld = el("div", { class: "leaf", "data-leaf": leaf }, el("span", { class: "label", text: "leaf " + leaf }));
        for (const rack of Object.keys(tree[region][cluster][leaf]).sort()) {
          const rk = el("div", { class: "rack", "data-rack": rack }, el("span", { class: "label", text: "rack " + rack }));
          for (const n of tree[region][cluster][leaf][rack]) rk.append(drawNode(n, holders[n.name] || {}, partColour, reservedBy[n.name]));
          ld.append(rk);
        }
        cd.append(ld);
      }
      rd.append(cd);
    }
    out.push(rd);
  }
  const legend = el("div", { class: "parts" }, el("span", { text: "partition outline: " }));
  for (const [p, c] of Object.entries(partColour)) {
    const sw = el("span", { class: "gpu", "data-partition": p });
    sw.style.outline = "2px solid " + c;
    legend.append(sw, el("span", { text: " " + p + " " }));
  }
  out.push(legend);
  s.querySelector(".body").replaceChildren(...out);
}

function drawNode(n, held, partColour, res) {
  const state = n.health === "Ready" ? "" : n.health === "Draining" ? " draining" : " notready";
  const attrs = { class: "node" + state + (res ? " reserved" : ""), "data-node": n.name };
  if (n.drain) attrs.title = `drained by ${n.drain.by}: ${n.drain.reason}`;
  if (res) attrs["data-reservation"] = res.name;
  const d = el("div", attrs,
    el("div", { class: "name", text: `${n.name} · ${n.gpu_model} · ${n.health}` }));
  if (res) d.append(el("div", { class: "reservation",
    text: (res.use.active ? "reserved: " : "kept for the start of ") + `${res.name} (${res.owner})` }));
  const gpus = el("div", { class: "gpus" });
  for (let i = 0; i < n.gpus; i++) {
    const h = held[i] || [];
    const milli = h.reduce((s, x) => s + x.milli, 0);
    const cls = h.length ? "c-" + h[0].cls : "free";
    const box = el("span", {
      class: "gpu " + cls,
      title: h.length ? h.map(x => `${x.job} (${x.milli / 1000} GPU${x.part ? ", partition " + x.part : ""})`).join(", ") : "free",
      text: h.length && milli < 1000 ? (milli / 1000).toFixed(2).replace(/^0/, "") : ""
    });
    const part = h.length ? h[0].part : "";
    if (part && partColour[part]) {
      box.style.outline = "2px solid " + partColour[part];
      box.dataset.partition = part;
    }
    gpus.append(box);
  }
  d.append(gpus);
  const js = el("div", { class: "jobs" });
  for (const id of n.jobs || []) js.append(el("div", { class: "job", "data-job": id, text: id }));
  d.append(js);
  return d;
}

function drawQueue(queued, why) {
  fill("#queue", queued.map(j => {
    const w = why[j.id];
    let est = w ? (w.estimated_start ? new Date(w.estimated_start).toLocaleString() : (w.estimate_none || "unknown")) : "";
    if (j.state === "Blocked") est = "after its predecessors";
    return row([j.id, j.tenant, j.priority, j.reason || "—", j.detail, est], { "data-job": j.id, "data-reason": j.reason || "", "data-state": j.state });
  }), "no pending jobs");
}

function drawRunning(jobs) {
  fill("#running", jobs.filter(j => j.state === "Running" || j.state === "Preparing").map(j => {
    const nodes = (j.allocations || []).map(a => a.node);
    const gpus = (j.allocations || []).reduce((s, a) => s + (a.gpus || []).length * (a.gpu_milli || 1000) / 1000, 0);
    return row([j.id, j.tenant, j.priority, nodes.join(", "), gpus, when(j.started_at)], { "data-job": j.id, "data-node": nodes.join(" ") });
  }), "nothing running");
}

function drawPreemptions(jobs) {
  const events = [];
  for (const j of jobs) for (const a of j.attempt_history || []) {
    if (a.reason === "Preempted") events.push({ j, a });
  }
  events.sort((x, y) => String(y.a.ended).localeCompare(String(x.a.ended)));
  fill("#preemptions", events.slice(0, PREEMPT_MAX).map(({ j, a }) =>
    row([j.id, j.tenant, a.number, (a.nodes || []).join(", "), when(a.ended), a.detail], { "data-job": j.id })), "no preemptions");
}

function drawPartitions(parts, tenants, nodes, jobs) {
  const s = $("#partitions");
  s.hidden = parts === null;
  if (!parts) return;
  const partOf = {};
  for (const t of (tenants && tenants.tenants) || []) partOf[t.name] = t.partition;
  const nodeOf = {};
  for (const n of (nodes && nodes.nodes) || []) nodeOf[n.name] = n;
  const used = {}; // partition|region|model → GPUs
  for (const j of jobs) {
    if (j.state !== "Running" && j.state !== "Preparing") continue;
    for (const a of j.allocations || []) {
      const n = nodeOf[a.node];
      if (!n) continue;
      const k = [partOf[j.tenant], n.region, n.gpu_model].join("|");
      used[k] = (used[k] || 0) + (a.gpus || []).length * (a.gpu_milli || 1000) / 1000;
    }
  }
  // Per pool (region, GPU model): what each partition is guaranteed, and
  // what all partitions use beyond their guarantees (borrowed). A partition
  // lends what others borrow out of its idle guarantee, at most that idle.
  const guar = {}; // partition|region|model → GPUs
  for (const p of parts.partitions || []) for (const g of p.guarantees || []) {
    const k = [p.name, g.region, g.gpu_model].join("|");
    guar[k] = (guar[k] || 0) + g.gpus;
  }
  const borrowedIn = {}; // region|model → GPUs used beyond guarantees
  for (const [k, u] of Object.entries(used)) {
    const pool = k.split("|").slice(1).join("|");
    borrowedIn[pool] = (borrowedIn[pool] || 0) + Math.max(0, u - (guar[k] || 0));
  }
  const rows = [];
  for (const p of parts.partitions || []) {
    const gs = p.guarantees || [];
    if (gs.length === 0) rows.push(row([p.name, p.tier, "—", "—", 0, "", "", "", "", ""], { "data-partition": p.name }));
    for (const g of gs) {
      const k = [p.name, g.region, g.gpu_model].join("|");
      const u = used[k] || 0;
      const borrowed = Math.max(0, u - g.gpus);
      const othersBorrowed = (borrowedIn[[g.region, g.gpu_model].join("|")] || 0) - borrowed;
      const lent = Math.min(Math.max(0, g.gpus - u), Math.max(0, othersBorrowed));
      rows.push(row([p.name, p.tier, g.region, g.gpu_model, g.gpus, round(u), round(lent), round(borrowed),
        g.borrow_limit == null ? "—" : g.borrow_limit, g.lend_limit == null ? "—" : g.lend_limit], { "data-partition": p.name }));
    }
  }
  fill("#partitions", rows, "no partitions");
}

// drawReservations lists the reservations the token sees, with the nodes
// each holds now (or keeps for its start) and how much of what it bought
// its owner used.
function drawReservations(list, reports) {
  $("#reservations").hidden = list === null;
  if (!list) return;
  const report = {};
  for (const r of reports || []) if (r) report[r.name] = r;
  fill("#reservations", (list.reservations || []).map(r => {
    const u = (report[r.name] || {}).use;
    const window = `${r.start ? new Date(r.start).toLocaleString() : "—"} to ${r.end ? new Date(r.end).toLocaleString() : "—"}`;
    let state = "";
    if (u) state = u.active ? "active" : u.starts_in_hours != null ? `starts in ${round(u.starts_in_hours)} h` : "over";
    const used = !u ? "" : u.used_percent == null ? `${round(u.used_gpu_hours)} GPU-h` : `${round(u.used_percent)} %`;
    return row([r.name, r.owner, `${r.count} × ${r.sku} in ${r.region}`, window, state, used, u ? (u.nodes || []).join(", ") : ""],
      { "data-reservation": r.name });
  }), "no reservations");
}

function drawUsage(u) {
  $("#usage").hidden = u === null;
  if (!u) return;
  fill("#usage", (u.usage || []).map(x => row([x.tenant, x.region, x.series, x.used_gpus, x.quota_gpus == null ? "—" : x.quota_gpus], { "data-tenant": x.tenant })), "no usage");
}

// drawEndpoints lists the endpoints against their SLO, each followed by
// what the gateways measured of it when one reported it in the last
// minute (gatewayPanel).
function drawEndpoints(e) {
  $("#endpoints").hidden = e === null;
  if (!e) return;
  fill("#endpoints", (e.endpoints || []).flatMap(x => {
    const slo = x.spec && x.spec.slo ? x.spec.slo.p95_ms : null;
    const p95 = x.metrics ? x.metrics.p95_ms : null;
    const breach = slo != null && p95 != null && p95 > slo;
    const rolling = x.rollout_since ? " · rolling out" : "";
    const status = el("span", { class: breach ? "breach" : "", text: (p95 == null ? "no metrics" : breach ? "over SLO" : "within SLO") + rolling });
    const rows = [row([x.name, x.tenant, `${(x.replicas || []).length}/${x.desired}`, p95 == null ? "—" : p95, slo == null ? "—" : slo, status], { "data-endpoint": x.name })];
    if (x.gateway) rows.push(gatewayPanel(x.name, x.gateway, slo));
    return rows;
  }), "no endpoints");
}

// ms prints a latency in ms, or — when none was measured.
function ms(q, which) { return q && q[which] > 0 ? String(round(q[which])) : "—"; }

// gatewayPanel is what the gateways measured of endpoint name over the
// last minute (g, the endpoint's "gateway"): requests/s, errors, requests
// in flight, the p95 against the SLO (a bar that turns red past it), and
// per replica its requests/s, in flight, p95 and whether the gateways
// route to it.
function gatewayPanel(name, g, slo) {
  const p95 = g.latency ? g.latency.p95_ms : 0;
  const over = slo != null && p95 > slo;
  const bar = el("span", { class: "bar" + (over ? " over" : "") });
  bar.style.width = (slo ? Math.min(100, 100 * p95 / slo) : 0) + "%";
  const summary = el("div", { class: "summary" },
    el("span", { text: `gateways, last minute: ${round(g.requests_per_sec)} req/s · ` }),
    el("span", { class: "p95" + (over ? " breach" : ""), text: `p95 ${ms(g.latency, "p95_ms")} ms` + (slo == null ? "" : ` of SLO ${slo} ms`) }),
    el("span", { class: "meter", title: `p50 ${ms(g.latency, "p50_ms")} ms, p95 ${ms(g.latency, "p95_ms")} ms, p99 ${ms(g.latency, "p99_ms")} ms; ` +
      `first byte p95 ${ms(g.first_byte, "p95_ms")} ms` }, bar),
    el("span", { text: ` · p99 ${ms(g.latency, "p99_ms")} ms · errors ${g.errors} · ${g.in_flight} in flight` }));
  const head = el("tr", {}, ...["Replica", "req/s", "In flight", "p95 ms", "Errors", "Gateways"].map(h => el("th", { text: h })));
  const reps = (g.replicas || []).map(r => row([r.job, round(r.requests_per_sec), r.in_flight, ms(r.latency, "p95_ms"), r.errors,
    !r.routed ? "out of the route" : r.ready ? "ready" : "not ready"],
  { "data-replica": r.job, "data-in-flight": String(r.in_flight), "data-p95": r.latency && r.latency.p95_ms > 0 ? String(r.latency.p95_ms) : "" }));
  const table = el("table", { class: "replicas" }, el("thead", {}, head), el("tbody", {}, ...reps));
  return el("tr", { class: "gateway", "data-gateway": name, "data-rps": String(g.requests_per_sec), "data-p95": String(p95), "data-over-slo": String(over) },
    el("td", { colspan: "6" }, summary, table));
}

function start() {
  $("#login").hidden = true;
  $("#board").hidden = false;
  $("#signout").hidden = false;
  clearTimeout(timer);
  poll();
}

function signOut(msg) {
  clearTimeout(timer);
  sessionStorage.removeItem("allot-token");
  $("#board").hidden = true;
  $("#signout").hidden = true;
  $("#login").hidden = false;
  $("#login-error").textContent = msg || "";
}

document.addEventListener("DOMContentLoaded", () => {
  $("#login").addEventListener("submit", ev => {
    ev.preventDefault();
    const tok = $("#token").value.trim();
    if (!tok) return;
    sessionStorage.setItem("allot-token", tok);
    $("#token").value = "";
    start();
  });
  $("#signout").addEventListener("click", () => signOut(""));
  if (sessionStorage.getItem("allot-token")) start();
});
