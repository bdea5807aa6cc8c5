// pg_advisor's Grafana dashboard, generated as Ceph generates its own (monitoring/
// ceph-mixin): `jsonnet monitoring/pg_advisor_dashboard.jsonnet` writes
// monitoring/pg_advisor_dashboard.json, and a test checks the JSON is what this makes.
// Every panel reads the module's /metrics (doc/panel.rst) through the datasource the
// operator picks; pool names come from pg_advisor_pool_metadata, as Ceph's from
// ceph_pool_metadata.
local ds = { type: 'prometheus', uid: '${datasource}' };
local named(expr) = expr + ' * on(pool_id) group_left(name) pg_advisor_pool_metadata';

local target(expr, legend, ref) = {
  datasource: ds,
  expr: expr,
  legendFormat: legend,
  refId: ref,
};

local panel(id, type, title, description, targets, x, y, w=12, h=8, unit='short', extra={}) = {
  id: id,
  type: type,
  title: title,
  description: description,
  datasource: ds,
  targets: [target(t[0], t[1], std.char(65 + i)) for i in std.range(0, std.length(targets) - 1)
            for t in [targets[i]]],
  gridPos: { x: x, y: y, w: w, h: h },
  fieldConfig: { defaults: { unit: unit }, overrides: [] },
  options: {},
} + extra;

{
  title: 'pg_advisor',
  uid: 'pg-advisor',
  description: 'PG counts against each OSD share, PG memory, plans and pools, from the pg_advisor mgr module',
  tags: ['ceph', 'pg_advisor'],
  editable: false,
  schemaVersion: 36,
  version: 1,
  time: { from: 'now-6h', to: 'now' },
  refresh: '30s',
  timezone: '',
  templating: {
    list: [
      { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus', current: {} },
    ],
  },
  annotations: { list: [] },
  panels: [
    panel(1, 'histogram', 'PGs minus share, per OSD',
          'How many OSDs hold how many PG replicas more (or fewer) than their target (weight-proportional share as far as the rules allow), all pools',
          [['pg_advisor_osd_pg_deviation', '{{ceph_daemon}}']], 0, 0,
          extra={ options: { bucketSize: 0.5 } }),
    panel(2, 'timeseries', 'PGs minus share, per OSD, over time',
          'Each OSD: PG replicas minus its target, all pools (pg_advisor evens these to within 1)',
          [['pg_advisor_osd_pg_deviation', '{{ceph_daemon}}']], 12, 0),
    panel(3, 'timeseries', 'Largest deviation per pool',
          'Per pool, the largest |PG replicas - share| over its OSDs; and over all pools',
          [[named('pg_advisor_pool_max_deviation'), '{{name}}'],
           ['pg_advisor_total_max_deviation', 'all pools']], 0, 8),
    panel(4, 'timeseries', 'PG memory against its budget',
          'Estimated PG memory (logs and PG state) per OSD, and the budget per OSD',
          [['pg_advisor_osd_pg_memory_bytes', '{{ceph_daemon}}'],
           ['pg_advisor_pg_memory_budget_bytes', 'budget']], 12, 8, unit='bytes'),
    panel(5, 'timeseries', "The plan's progress",
          'Steps of the current or last plan done, and in all; 1 while it is blocked',
          [['pg_advisor_plan_steps_done', 'done'], ['pg_advisor_plan_steps', 'steps'],
           ['pg_advisor_plan_blocked', 'blocked'], ['pg_advisor_pins_waiting', 'PGs pinned']], 0, 16),
    panel(6, 'timeseries', 'Misplaced against the budget',
          'Object copies misplaced, and the ratio a plan may reach',
          [['pg_advisor_misplaced_ratio', 'misplaced'], ['pg_advisor_misplaced_budget_ratio', 'budget']],
          12, 16, unit='percentunit'),
    panel(7, 'timeseries', 'Pools against their recommendations',
          "Each pool's pg_num, and the pg_num pg_advisor recommends for it",
          [[named('pg_advisor_pool_pg_num'), '{{name}} pg_num'],
           [named('pg_advisor_pool_recommended_pg_num'), '{{name}} recommended']], 0, 24, w=24),
  ],
}
