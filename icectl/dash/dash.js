// SPDX-License-Identifier: Apache-2.0
// icectl serve's dashboard: reads /api/... every refresh period and draws
// the fabric (each directed link coloured by its measured load, its width by
// the queue, red and dashed when down), the jobs, the plan/policy timeline
// and the links table. Plain DOM and SVG, no libraries.
'use strict';

const SVGNS = 'http://www.w3.org/2000/svg';
const DOWN = '#e00000';
let refreshMs = 1000;
let refreshes = 0;
let busy = false;

function el(tag, attrs, text) {
  const e = tag.startsWith('svg:') ? document.createElementNS(SVGNS, tag.slice(4))
                                   : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function $(id) { return document.getElementById(id); }

async function get(what) {
  const r = await fetch('/api/' + what, {cache: 'no-store'});
  if (!r.ok) throw new Error('/api/' + what + ': HTTP ' + r.status);
  const d = await r.json();
  if (d.error) throw new Error('/api/' + what + ': ' + d.error);
  return d;
}

// load (utilisation 0..1, or null) -> colour; red is kept for down links
function loadColour(u) {
  if (u === null || u === undefined) return '#b0b0b0';
  if (u < 0.5) return '#2ca02c';
  if (u < 0.8) return '#d4b000';
  if (u < 0.95) return '#ff7f0e';
  return '#8b00b0';
}

// queue (bytes) -> stroke width: 2 px empty, up to 9 px
function queueWidth(q) {
  if (!(q > 0)) return 2;
  return 2 + Math.min(7, Math.log2(1 + q / 1500));
}

function mbit(bytesPerS) {
  return bytesPerS === null || bytesPerS === undefined ? '-' : (bytesPerS * 8 / 1e6).toFixed(1);
}

function fmt(v, digits) {
  return v === null || v === undefined ? '-' : Number(v).toFixed(digits || 0);
}

function ago(ms) {
  if (!ms) return 'never';
  const s = (Date.now() - ms) / 1e3;
  if (s < 120) return s.toFixed(1) + ' s ago';
  if (s < 7200) return (s / 60).toFixed(0) + ' min ago';
  return (s / 3600).toFixed(1) + ' h ago';
}

function legend() {
  const lg = $('legend');
  if (lg.childElementCount) return;
  for (const [c, t] of [['#2ca02c', '< 50 %'], ['#d4b000', '< 80 %'], ['#ff7f0e', '< 95 %'],
                        ['#8b00b0', '>= 95 % of the link'], ['#b0b0b0', 'not measured'],
                        [DOWN, 'down']]) {
    const s = el('span');
    s.append(el('i', {style: 'background:' + c}), t);
    lg.append(s);
  }
  lg.append(el('span', {}, 'width: queue depth'));
}

// node positions: one row per tier, the highest at the top
function layout(topo, width) {
  const tiers = new Map();
  for (const n of topo.nodes) {
    if (!tiers.has(n.tier)) tiers.set(n.tier, []);
    tiers.get(n.tier).push(n);
  }
  const order = [...tiers.keys()].sort((a, b) => b - a);
  const rowH = 380 / Math.max(1, order.length);
  const pos = new Map();
  order.forEach((t, r) => {
    const row = tiers.get(t).sort((a, b) => a.pod - b.pod ||
                                    a.name.localeCompare(b.name, undefined, {numeric: true}));
    row.forEach((n, i) => pos.set(n.name, {x: (i + 0.5) * width / row.length,
                                           y: 30 + r * rowH + rowH / 2 - 10, node: n}));
  });
  return pos;
}

function drawFabric(topo, links) {
  const svg = $('fabric-svg');
  const width = svg.clientWidth || 1000;
  const pos = layout(topo, width);
  const byDir = new Map(links.map(l => [l.from + '>' + l.to, l]));
  svg.replaceChildren();
  const gl = el('svg:g', {id: 'links-g'});
  const gn = el('svg:g', {id: 'nodes-g'});
  for (const tl of topo.links) {
    for (const [from, to] of [[tl.a, tl.b], [tl.b, tl.a]]) {
      const p = pos.get(from), q = pos.get(to);
      if (!p || !q) continue;
      const l = byDir.get(from + '>' + to) || {};
      // each direction on its own side of the centre line
      const dx = q.x - p.x, dy = q.y - p.y, len = Math.hypot(dx, dy) || 1;
      const ox = -dy / len * 3, oy = dx / len * 3;
      const state = l.down ? 'down' : (l.util === null || l.util === undefined) ? 'nodata' : 'ok';
      const line = el('svg:line', {
        class: 'link' + (l.down ? ' down' : ''),
        x1: (p.x + ox).toFixed(1), y1: (p.y + oy).toFixed(1),
        x2: (q.x + ox).toFixed(1), y2: (q.y + oy).toFixed(1),
        stroke: l.down ? DOWN : loadColour(l.util),
        'stroke-width': queueWidth(l.queue).toFixed(1),
        'data-link': tl.link, 'data-from': from, 'data-to': to, 'data-state': state,
      });
      line.append(el('svg:title', {},
        `${from} -> ${to}` + (l.down ? ` DOWN (${l.down_why})` : '') +
        `: ${mbit(l.measured)} Mbit/s` + (l.util != null ? ` (${(l.util * 100).toFixed(0)} %)` : '') +
        `, queue ${fmt(l.queue)} B, planned ${mbit(l.planned)} Mbit/s`));
      gl.append(line);
    }
  }
  for (const {x, y, node} of pos.values()) {
    const g = el('svg:g', {class: 'node ' + node.kind, 'data-node': node.name});
    const w = Math.max(44, node.name.length * 7 + 10);
    g.append(el('svg:rect', {x: x - w / 2, y: y - 11, width: w, height: 22, rx: node.kind === 'host' ? 2 : 6}));
    g.append(el('svg:text', {x: x, y: y}, node.name));
    gn.append(g);
  }
  svg.append(gl, gn);
}

function drawLinks(links) {
  const tb = $('links').tBodies[0];
  tb.replaceChildren();
  for (const l of links) {
    const tr = el('tr', {class: l.down ? 'down' : '', 'data-link': l.link, 'data-from': l.from,
                         'data-to': l.to});
    const cells = [l.link, l.from, l.to, l.down ? 'DOWN: ' + l.down_why : (l.oper || '-'),
                   mbit(l.measured), l.util != null ? (l.util * 100).toFixed(0) + ' %' : '-',
                   mbit(l.planned), fmt(l.queue), fmt(l.ce_total), fmt(l.drops),
                   l.measured_by || 'not measured'];
    cells.forEach((c, i) => tr.append(el('td', {class: i >= 4 && i <= 9 ? 'num' : ''}, c)));
    tb.append(tr);
  }
}

function drawJobs(jobs) {
  const tb = $('jobs').tBodies[0];
  tb.replaceChildren();
  $('jobs-note').textContent = jobs.jobs.length ? 'busbw: ' + jobs.busbw
    : 'no collectives in the hosts\' event streams (no job has announced one)';
  for (const j of jobs.jobs) {
    const ops = Object.entries(j.ops).map(([o, n]) => `${o} x${n}`).join(', ') || 'none started';
    const calls = j.calls.slice(0, 4).map(c =>
      `${c.op} ${c.bytes} B ${fmt(c.time_us)} us ${fmt(c.busbw_gbps, 3)}`).join('; ');
    const tr = el('tr', {'data-comm': j.comm});
    for (const c of [j.job || '(no ICE_JOB)', j.comm, j.nranks, j.hosts.join(' '), ops,
                     j.busbw_gbps != null ? fmt(j.busbw_gbps, 3) : 'n/a', calls || j.busbw_note])
      tr.append(el('td', {}, String(c)));
    tb.append(tr);
  }
}

function drawTimeline(tl) {
  const svg = $('timeline-svg');
  const width = svg.clientWidth || 1000;
  const span = 10 * 60 * 1000, now = tl.ts_ms;
  svg.replaceChildren();
  svg.append(el('svg:line', {x1: 10, y1: 35, x2: width - 10, y2: 35, stroke: '#999'}));
  for (let m = 0; m <= 10; m += 2) {
    const x = 10 + (width - 20) * (1 - m * 60000 / span);
    const anchor = m === 10 ? 'start' : m === 0 ? 'end' : 'middle';
    svg.append(el('svg:text', {x: x, y: 62, 'font-size': 10, 'text-anchor': anchor},
                  m ? `-${m} min` : 'now'));
  }
  for (const e of tl.events) {
    if (now - e.ts_ms > span) continue;
    const x = 10 + (width - 20) * (1 - (now - e.ts_ms) / span);
    const r = el('svg:rect', {x: x - 1.5, y: e.kind === 'plan' ? 22 : 36, width: 3, height: 13,
                              class: 'tl-' + e.kind});
    r.append(el('svg:title', {}, e.kind === 'plan' ? `plan epoch ${e.epoch} by ${e.by}`
                                                   : `policy ${e.action} v${e.version} by ${e.by}`));
    svg.append(r);
  }
  const tb = $('timeline').tBodies[0];
  tb.replaceChildren();
  for (const e of tl.events.slice(0, 20)) {
    const tr = el('tr', {class: 'tl-row-' + e.kind});
    const what = e.kind === 'plan' ? `plan epoch ${e.epoch}` : `policy ${e.action} v${e.version}`;
    const det = e.kind === 'plan' ? `hosts ${e.hosts}` : e.source;
    for (const c of [ago(e.ts_ms), what, e.by, det]) tr.append(el('td', {}, c));
    tb.append(tr);
  }
}

function drawStatus(st) {
  const lead = st.leader ? st.leader.id : 'NONE';
  const cs = st.controller_status || {};
  $('summary').textContent = `leader ${lead}; published epoch ${(st.published || {}).epoch || '-'}` +
    `; max util ${cs.max_util || '-'} (bound ${cs.bound || '-'}); policy v${st.policy.in_force}` +
    `; ${st.agents.length} agents`;
  const ul = $('stale');
  ul.replaceChildren();
  for (const s of st.stale) ul.append(el('li', {}, s));
  if (!st.stale.length) ul.append(el('li', {}, 'nothing stale'));
}

async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const [topo, links, st, jobs, tl] = await Promise.all(
      ['topology', 'links', 'status', 'jobs', 'timeline'].map(get));
    $('topo-source').textContent = topo.source === 'file' ? 'topology ' + topo.file
                                                          : '(' + topo.note + ')';
    drawFabric(topo, links.links);
    drawLinks(links.links);
    drawJobs(jobs);
    drawTimeline(tl);
    drawStatus(st);
    $('error').hidden = true;
    refreshes++;
    document.body.dataset.refreshes = refreshes;
    document.body.dataset.refreshedMs = Date.now();
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString() +
                               ` (every ${refreshMs / 1000} s)`;
  } catch (e) {
    $('error').hidden = false;
    $('error').textContent = String(e.message || e);
  } finally {
    busy = false;
  }
}

async function main() {
  legend();
  try {
    const cfg = await get('config');
    refreshMs = cfg.refresh_ms || 1000;
    $('fabric').textContent = cfg.fabric;
    document.title = 'ICE ' + cfg.fabric;
  } catch (e) {
    $('error').hidden = false;
    $('error').textContent = String(e.message || e);
  }
  await refresh();
  setInterval(refresh, refreshMs);
}

main();
