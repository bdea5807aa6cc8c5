"""Layer 8 (dashboard): what the HTTP server returns, as pure functions of the reports.

The page is static: its script fetches the JSON API and builds every element with
textContent and SVG nodes, never from markup, so pool and host names cannot inject
anything. /metrics is Prometheus text with escaped label values and exact sample values:
an integer (or an integral float up to 2**53, such as a byte count) in all its digits, any
other float as repr() gives it (the shortest text that reads back as the same float: 0.1,
12.5, 1e+16), NaN and infinities as Prometheus spells them (NaN, +Inf, -Inf). A figure the
report does not have (None: an OSD without stats, no sizing) has no sample at all, rather
than a made-up value or a NaN that would read as "measured, not a number".
"""
import math
import numbers
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

Labels = Tuple[Tuple[str, Any], ...]
Number = Union[int, float]


def _label(v: Any) -> str:
    """A Prometheus label value: backslash, double quote and newline escaped."""
    return str(v).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def sample_value(v: Number) -> str:
    """A sample's value in Prometheus text, exact (see the module doc)."""
    if isinstance(v, numbers.Integral):      # bool and numpy's integers included
        return str(int(v))
    f = float(v)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    # its digits, not 1.07374e+09; past 2**53 (1e300...) repr is as exact and stays short
    if f.is_integer() and abs(f) <= 2 ** 53:
        return str(int(f))
    return repr(f)


def family(name: str, help_: str, kind: str,
           samples: Iterable[Tuple[Labels, Optional[Number]]]) -> List[str]:
    out = [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
    for labels, value in samples:
        if value is None:          # not known: no sample (Prometheus then has none for it)
            continue
        lab = ",".join(f'{k}="{_label(v)}"' for k, v in labels)
        out.append(f"{name}{{{lab}}} {sample_value(value)}" if lab else f"{name} {sample_value(value)}")
    return out


def metrics(status: Dict[str, Any], progress: Dict[str, Any]) -> str:
    """The distribution, sizing and plan figures of `status -f json` and `progress -f json`."""
    lines: List[str] = []
    osds, pools = status["osds"], status["pools"]
    lines += family("pg_advisor_osd_pgs", "PG replicas on the OSD (all pools)", "gauge",
                    [((("osd", o["id"]),), o["pgs"]) for o in osds])
    lines += family("pg_advisor_osd_pg_share", "the OSD's weight-proportional share of PG replicas",
                    "gauge", [((("osd", o["id"]),), o["pg_share"]) for o in osds])
    lines += family("pg_advisor_osd_pool_pgs", "PG replicas of the pool on the OSD", "gauge",
                    [((("osd", o["id"]), ("pool_id", pid)), n)
                     for o in osds for pid, n in (o.get("pgs_by_pool") or {}).items()])
    lines += family("pg_advisor_osd_pool_pg_share", "the OSD's weight-proportional share of the pool's PG "
                    "replicas", "gauge",
                    [((("osd", o["id"]), ("pool_id", pid)), v)
                     for o in osds for pid, v in o["pg_share_by_pool"].items()])
    lines += family("pg_advisor_osd_utilization_percent", "space used on the OSD, %", "gauge",
                    [((("osd", o["id"]),), o["utilization"]) for o in osds])
    lines += family("pg_advisor_osd_pg_memory_bytes", "estimated PG memory on the OSD now", "gauge",
                    [((("osd", o["id"]),), o["pg_memory_now"]) for o in osds])
    lines += family("pg_advisor_osd_pg_memory_steady_bytes", "estimated PG memory on the OSD with every "
                    "PG log full", "gauge", [((("osd", o["id"]),), o["pg_memory_steady"]) for o in osds])
    sizing = status["cluster"].get("sizing")
    lines += family("pg_advisor_pg_memory_budget_bytes", "PG memory allowed per OSD", "gauge",
                    [((), sizing["pg_memory_budget"] if sizing else None)])
    lines += family("pg_advisor_pool_pg_num", "the pool's pg_num", "gauge",
                    [((("pool", p["name"]), ("pool_id", p["id"])), p["pg_num"]) for p in pools])
    lines += family("pg_advisor_pool_recommended_pg_num", "pg_num pg_advisor recommends", "gauge",
                    [((("pool", p["name"]), ("pool_id", p["id"])), p.get("recommended_pg_num"))
                     for p in pools])
    dist = status["distribution"]
    lines += family("pg_advisor_pool_max_deviation", "largest |PGs - share| over the pool's OSDs",
                    "gauge", [((("pool", p["pool"]),), p["max_deviation"]) for p in dist["pools"]])
    if dist.get("total"):
        lines += family("pg_advisor_total_max_deviation", "largest |PGs - share| over all pools",
                        "gauge", [((), dist["total"]["max_deviation"])])
    plan = progress.get("plan")
    steps = progress.get("steps") or []
    running = 1 if plan and plan["status"] == "running" else 0
    lines += family("pg_advisor_plan_running", "1 while a plan runs", "gauge", [((), running)])
    lines += family("pg_advisor_plan_steps", "steps in the current or last plan", "gauge",
                    [((), len(steps))])
    lines += family("pg_advisor_plan_steps_done", "steps done in the current or last plan", "gauge",
                    [((), plan["next"] if plan else 0)])
    lines += family("pg_advisor_plan_blocked", "1 while the running plan is blocked", "gauge",
                    [((), 1 if plan and running and plan["blockers"] else 0)])
    return "\n".join(lines) + "\n"


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>pg_advisor</title>
<style>
body{font:14px sans-serif;margin:1em 2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#eee} td.l{text-align:left}
.wide{overflow-x:auto} h3{font-size:14px;margin:.6em 0 0}
.bar{fill:#4a7ab5} .over{fill:#c96} .mark{stroke:#c33;stroke-width:2}
.level{stroke:#c33;stroke-width:1;stroke-dasharray:4 3} .muted{color:#777}
.axis{font-size:10px;fill:#555}
</style></head>
<body>
<h1>pg_advisor</h1>
<p class="muted">refreshes every <span id="every">10</span> s; last: <span id="stamp">-</span>
(<span id="refreshes">0</span> so far)</p>
<h2>Pools</h2><table id="pools"></table>
<h2>Distribution</h2><table id="extremes"></table>
<h3>PGs per OSD, all pools (red: the OSD's weight-proportional share)</h3>
<div class="wide"><svg id="chart" width="900" height="170"></svg></div>
<div id="pool-charts"></div>
<h3>Space used per OSD, %</h3>
<div class="wide"><svg id="util" width="900" height="170"></svg></div>
<h2>OSD memory</h2><p id="budget"></p>
<h3>PG memory per OSD now (red: with every PG log full; dashed: the budget)</h3>
<div class="wide"><svg id="memory" width="900" height="170"></svg></div>
<table id="osds"></table>
<h2>Plan</h2><p id="plan"></p><table id="steps"></table>
<h2>History</h2><table id="history"></table>
<script>
"use strict";
// every value goes in through textContent or an SVG attribute: names cannot inject markup
const NS = "http://www.w3.org/2000/svg";
function cell(row, text, left) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "-" : String(text);
  if (left) td.className = "l";
  row.appendChild(td);
}
function table(id, head, rows) {
  const t = document.getElementById(id);
  t.replaceChildren();
  const h = document.createElement("tr");
  for (const c of head) { const th = document.createElement("th"); th.textContent = c; h.appendChild(th); }
  t.appendChild(h);
  for (const r of rows) {
    const tr = document.createElement("tr");
    r.forEach((v, i) => cell(tr, v, i === 0));
    t.appendChild(tr);
  }
}
function svgEl(parent, kind, attrs, title) {
  const e = document.createElementNS(NS, kind);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (title !== undefined) {
    const t = document.createElementNS(NS, "title"); t.textContent = title; e.appendChild(t);
  }
  parent.appendChild(e);
  return e;
}
// bars: [{label, value, title, mark, over}]; mark: a short red line on the bar (a share, a ceiling);
// level: {value, title}, a dashed line across the chart (a budget)
function chart(svg, bars, level) {
  svg.replaceChildren();
  const H = 145, w = Math.max(3, Math.floor(880 / Math.max(1, bars.length)));
  svg.setAttribute("width", Math.max(900, 20 + bars.length * w));
  const top = Math.max(1e-9, ...bars.map(b => Math.max(b.value || 0, b.mark || 0)),
                       level ? level.value : 0);
  const y = v => 158 - H * (v || 0) / top;
  bars.forEach((b, i) => {
    const x = 10 + i * w;
    svgEl(svg, "rect", {class: b.over ? "bar over" : "bar", x: x, width: w - 1, y: y(b.value),
                        height: 158 - y(b.value)}, b.title);
    if (b.mark !== undefined && b.mark !== null)
      svgEl(svg, "line", {class: "mark", x1: x, x2: x + w - 1, y1: y(b.mark), y2: y(b.mark)});
  });
  if (level)
    svgEl(svg, "line", {class: "level", x1: 10, x2: 10 + bars.length * w, y1: y(level.value),
                        y2: y(level.value)}, level.title);
  // the scale: the value at the top of the chart, and each bar's OSD where there is room
  svgEl(svg, "text", {class: "axis", x: 12, y: 9}).textContent = "top: " + Number(top.toPrecision(4));
  if (w >= 28)
    bars.forEach((b, i) => {
      svgEl(svg, "text", {class: "axis", x: 10 + i * w + w / 2, y: 170, "text-anchor": "middle"})
        .textContent = b.label;
    });
}
function poolCharts(st, osds) {
  const box = document.getElementById("pool-charts");
  box.replaceChildren();
  for (const p of st.pools) {
    const key = String(p.id);
    const h = document.createElement("h3");
    h.textContent = "PGs per OSD, pool " + p.name;
    const div = document.createElement("div"); div.className = "wide";
    const svg = svgEl(div, "svg", {id: "chart-pool-" + key, class: "pool-chart", width: 900, height: 170});
    const on = osds.filter(o => o.pgs_by_pool[key] > 0 || o.pg_share_by_pool[key] > 0);
    chart(svg, on.map(o => ({label: "osd." + o.id, value: o.pgs_by_pool[key], mark: o.pg_share_by_pool[key],
                             title: "osd." + o.id + ": " + o.pgs_by_pool[key] + " PGs, share " +
                                    o.pg_share_by_pool[key]})));
    box.appendChild(h); box.appendChild(div);
  }
}
function extremes(ext) {
  const rows = [];
  for (const k of ["fullest", "emptiest"]) {
    const e = ext.by_pgs && ext.by_pgs[k];
    if (e) rows.push([k + " by PGs", "osd." + e.osd, e.pgs + " PGs, " + e.ratio + " x its share"]);
  }
  for (const k of ["fullest", "emptiest"]) {
    const e = ext.by_utilization && ext.by_utilization[k];
    if (e) rows.push([k + " by space used", "osd." + e.osd, e.utilization + " %"]);
  }
  table("extremes", ["", "osd", ""], rows);
}
async function refresh() {
  const [st, pr, hi] = await Promise.all(["api/status", "api/progress", "api/history"].map(
    u => fetch(u).then(r => r.json())));
  table("pools", ["pool", "pg_num", "recommended", "pg_autoscaler", "stored", "reason"],
        st.pools.map(p => [p.name, p.pg_num, p.recommended_pg_num, p.autoscaler_pg_num, p.stored,
                           p.recommendation]));
  extremes(st.distribution.extremes);
  const osds = st.osds.filter(o => o.pgs !== null);
  chart(document.getElementById("chart"), osds.map(o => ({
    label: "osd." + o.id, value: o.pgs, mark: o.pg_share,
    title: "osd." + o.id + ": " + o.pgs + " PGs, share " + o.pg_share})));
  poolCharts(st, osds);
  const used = st.osds.filter(o => o.utilization !== null);
  chart(document.getElementById("util"), used.map(o => ({
    label: "osd." + o.id, value: o.utilization, title: "osd." + o.id + ": " + o.utilization + " %"})));
  const sizing = st.cluster.sizing, budget = sizing ? sizing.pg_memory_budget : null;
  document.getElementById("budget").textContent = budget === null ? "no PG memory budget (no sizing)" :
    "PG memory budget per OSD: " + budget + " bytes";
  const mem = st.osds.filter(o => o.pg_memory_now !== null);
  chart(document.getElementById("memory"), mem.map(o => ({
    label: "osd." + o.id, value: o.pg_memory_now, mark: o.pg_memory_steady,
    over: budget !== null && o.pg_memory_steady > budget,
    title: "osd." + o.id + ": " + o.pg_memory_now + " bytes now, " + o.pg_memory_steady + " full"})),
    budget === null ? null : {value: budget, title: "budget: " + budget + " bytes"});
  table("osds", ["osd", "host", "pgs", "share", "used %", "bytes used", "pg memory now", "pg memory steady"],
        osds.map(o => ["osd." + o.id, o.host, o.pgs, o.pg_share, o.utilization, o.bytes_used,
                       o.pg_memory_now, o.pg_memory_steady]));
  const plan = pr.plan;
  document.getElementById("plan").textContent = plan ?
    "plan " + plan.id + ": " + plan.status + ", step " + Math.min(plan.next + 1, pr.steps.length) +
    " of " + pr.steps.length + (plan.blockers.length ? "; blocked: " + plan.blockers.join("; ") : "") +
    (plan.waiting ? "; waiting: " + plan.waiting : "") : "no plan";
  table("steps", ["step", "state", "does"], (pr.steps || []).map((s, i) => [i + 1, s.state, s.description]));
  table("history", ["time", "event", "detail"], hi.history.slice(-20).reverse().map(
    h => [new Date(h.time * 1000).toISOString(), h.event, h.detail]));
  document.getElementById("stamp").textContent = new Date().toISOString();
  const n = document.getElementById("refreshes");
  n.textContent = String(Number(n.textContent) + 1);
}
refresh();
setInterval(refresh, 10000);
</script>
</body></html>
"""
