"""Layer 8 (dashboard): what the HTTP server returns, as pure functions of the reports.

The page is static: its script fetches the JSON API and builds every element with
textContent and SVG nodes, never from markup, so pool and host names cannot inject
anything. /metrics is Prometheus text with escaped label values.
"""
from typing import Any, Dict, Iterable, List, Optional, Tuple

Labels = Tuple[Tuple[str, Any], ...]


def _label(v: Any) -> str:
    """A Prometheus label value: backslash, double quote and newline escaped."""
    return str(v).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _family(name: str, help_: str, kind: str, samples: Iterable[Tuple[Labels, Optional[float]]]) -> List[str]:
    out = [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
    for labels, value in samples:
        if value is None:
            continue
        lab = ",".join(f'{k}="{_label(v)}"' for k, v in labels)
        out.append(f"{name}{{{lab}}} {float(value):g}" if lab else f"{name} {float(value):g}")
    return out


def metrics(status: Dict[str, Any], progress: Dict[str, Any]) -> str:
    """The distribution, sizing and plan figures of `status -f json` and `progress -f json`."""
    lines: List[str] = []
    osds, pools = status["osds"], status["pools"]
    lines += _family("pg_advisor_osd_pgs", "PG replicas on the OSD (all pools)", "gauge",
                     [((("osd", o["id"]),), o["pgs"]) for o in osds])
    lines += _family("pg_advisor_osd_pg_share", "the OSD's weight-proportional share of PG replicas",
                     "gauge", [((("osd", o["id"]),), o["pg_share"]) for o in osds])
    lines += _family("pg_advisor_osd_pool_pgs", "PG replicas of the pool on the OSD", "gauge",
                     [((("osd", o["id"]), ("pool_id", pid)), n)
                      for o in osds for pid, n in (o.get("pgs_by_pool") or {}).items()])
    lines += _family("pg_advisor_osd_pg_memory_bytes", "estimated PG memory on the OSD now", "gauge",
                     [((("osd", o["id"]),), o.get("pg_memory_now")) for o in osds])
    lines += _family("pg_advisor_pool_pg_num", "the pool's pg_num", "gauge",
                     [((("pool", p["name"]), ("pool_id", p["id"])), p["pg_num"]) for p in pools])
    lines += _family("pg_advisor_pool_recommended_pg_num", "pg_num pg_advisor recommends", "gauge",
                     [((("pool", p["name"]), ("pool_id", p["id"])), p.get("recommended_pg_num"))
                      for p in pools])
    dist = status["distribution"]
    lines += _family("pg_advisor_pool_max_deviation", "largest |PGs - share| over the pool's OSDs",
                     "gauge", [((("pool", p["pool"]),), p["max_deviation"]) for p in dist["pools"]])
    if dist.get("total"):
        lines += _family("pg_advisor_total_max_deviation", "largest |PGs - share| over all pools",
                         "gauge", [((), dist["total"]["max_deviation"])])
    plan = progress.get("plan")
    steps = progress.get("steps") or []
    running = 1.0 if plan and plan["status"] == "running" else 0.0
    lines += _family("pg_advisor_plan_running", "1 while a plan runs", "gauge", [((), running)])
    lines += _family("pg_advisor_plan_steps", "steps in the current or last plan", "gauge",
                     [((), float(len(steps)))])
    lines += _family("pg_advisor_plan_steps_done", "steps done in the current or last plan", "gauge",
                     [((), float(plan["next"]) if plan else 0.0)])
    lines += _family("pg_advisor_plan_blocked", "1 while the running plan is blocked", "gauge",
                     [((), 1.0 if plan and running and plan["blockers"] else 0.0)])
    return "\n".join(lines) + "\n"


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>pg_advisor</title>
<style>
body{font:14px sans-serif;margin:1em 2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#eee} td.l{text-align:left}
.bar{fill:#4a7ab5} .share{stroke:#c33;stroke-width:2} .muted{color:#777}
</style></head>
<body>
<h1>pg_advisor</h1>
<p class="muted">refreshes every <span id="every">10</span> s; last: <span id="stamp">-</span></p>
<h2>Pools</h2><table id="pools"></table>
<h2>PGs per OSD</h2><p id="extremes"></p><svg id="chart" width="900" height="220"></svg>
<table id="osds"></table>
<h2>Plan</h2><p id="plan"></p><table id="steps"></table>
<h2>History</h2><table id="history"></table>
<script>
"use strict";
// every value goes in through textContent or an SVG attribute: names cannot inject markup
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
function chart(osds) {
  const svg = document.getElementById("chart"), ns = "http://www.w3.org/2000/svg";
  svg.replaceChildren();
  const max = Math.max(1, ...osds.map(o => Math.max(o.pgs || 0, o.pg_share || 0)));
  const w = Math.max(2, Math.floor(880 / Math.max(1, osds.length)));
  osds.forEach((o, i) => {
    const h = 200 * (o.pgs || 0) / max, s = 200 * (o.pg_share || 0) / max;
    const r = document.createElementNS(ns, "rect");
    r.setAttribute("class", "bar"); r.setAttribute("x", 10 + i * w); r.setAttribute("width", w - 1);
    r.setAttribute("y", 210 - h); r.setAttribute("height", h);
    const t = document.createElementNS(ns, "title"); t.textContent = "osd." + o.id + ": " + o.pgs;
    r.appendChild(t); svg.appendChild(r);
    const l = document.createElementNS(ns, "line");
    l.setAttribute("class", "share"); l.setAttribute("x1", 10 + i * w); l.setAttribute("x2", 9 + (i + 1) * w);
    l.setAttribute("y1", 210 - s); l.setAttribute("y2", 210 - s); svg.appendChild(l);
  });
}
async function refresh() {
  const [st, pr, hi] = await Promise.all(["api/status", "api/progress", "api/history"].map(
    u => fetch(u).then(r => r.json())));
  table("pools", ["pool", "pg_num", "recommended", "pg_autoscaler", "stored", "reason"],
        st.pools.map(p => [p.name, p.pg_num, p.recommended_pg_num, p.autoscaler_pg_num, p.stored,
                           p.recommendation]));
  const osds = st.osds.filter(o => o.pgs !== null);
  chart(osds);
  table("osds", ["osd", "host", "pgs", "share", "bytes used", "pg memory now", "pg memory steady"],
        osds.map(o => ["osd." + o.id, o.host, o.pgs, o.pg_share, o.bytes_used, o.pg_memory_now,
                       o.pg_memory_steady]));
  if (osds.length) {
    const by = [...osds].sort((a, b) => (b.pgs - b.pg_share) - (a.pgs - a.pg_share));
    document.getElementById("extremes").textContent =
      "fullest: osd." + by[0].id + " (" + by[0].pgs + " PGs), emptiest: osd." +
      by[by.length - 1].id + " (" + by[by.length - 1].pgs + " PGs)";
  }
  const plan = pr.plan;
  document.getElementById("plan").textContent = plan ?
    "plan " + plan.id + ": " + plan.status + ", step " + Math.min(plan.next + 1, pr.steps.length) +
    " of " + pr.steps.length + (plan.blockers.length ? "; blocked: " + plan.blockers.join("; ") : "") +
    (plan.waiting ? "; waiting: " + plan.waiting : "") : "no plan";
  table("steps", ["step", "state", "does"], (pr.steps || []).map((s, i) => [i + 1, s.state, s.description]));
  table("history", ["time", "event", "detail"], hi.history.slice(-20).reverse().map(
    h => [new Date(h.time * 1000).toISOString(), h.event, h.detail]));
  document.getElementById("stamp").textContent = new Date().toISOString();
}
refresh();
setInterval(refresh, 10000);
</script>
</body></html>
"""
