// The live dashboard of a query-sandbox node or coordinator. Plain browser JavaScript, no build step:
// reads frames from the server-sent event stream /_dashboard/stream (about one a second) and draws
// them with uPlot (served by the server from its npm package). Keeps the last WINDOW_POINTS frames.
//
// Hooks for tests: every chart's element has data-chart (its key) and data-points (points drawn);
// every sandbox section has data-sandbox-id, every data node section data-node-id.
(() => {
  const WINDOW_POINTS = 300;
  const COLORS = ['#2f6fd6', '#d6542f', '#2a9d4b', '#8c4bd6', '#c9a227', '#17a2b8', '#d63384', '#6c757d'];
  const LIMIT_COLORS = { low: '#c9a227', high: '#c0392b' };
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs = {}, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const pct = (ratio) => (ratio === null || ratio === undefined ? '–' : `${(ratio * 100).toFixed(1)} %`);

  /**
   * One uPlot chart over time whose series may change (a sandbox or a priority appears): the chart
   * is rebuilt with the points kept, the new series starting empty.
   */
  class TimeChart {
    constructor(parent, key, title, options = {}) {
      this.key = key;
      this.options = options;
      this.panel = el('div', { class: 'panel' });
      this.panel.append(el('h3', {}, title));
      this.box = el('div', { class: 'chart', 'data-chart': key, 'data-points': '0' });
      this.panel.append(this.box);
      parent.append(this.panel);
      this.times = [];
      this.series = new Map(); // label -> { values, stroke, dash }
      this.plot = undefined;
    }

    /** Adds one point per series (`values`: label -> number | null; `styles`: label -> {stroke, dash}). */
    push(timeSeconds, values, styles = {}) {
      let changed = false;
      for (const label of Object.keys(values)) {
        if (!this.series.has(label)) {
          const style = styles[label] ?? {};
          this.series.set(label, {
            values: this.times.map(() => null),
            stroke: style.stroke ?? COLORS[this.series.size % COLORS.length],
            dash: style.dash,
          });
          changed = true;
        }
      }
      this.times.push(timeSeconds);
      for (const [label, s] of this.series) {
        const v = values[label];
        s.values.push(typeof v === 'number' && Number.isFinite(v) ? v : null);
      }
      if (this.times.length > WINDOW_POINTS) {
        this.times.shift();
        for (const s of this.series.values()) s.values.shift();
      }
      const data = [this.times, ...[...this.series.values()].map((s) => s.values)];
      if (changed || this.plot === undefined) this.#build(data);
      else this.plot.setData(data);
      this.box.dataset.points = String(this.times.length);
    }

    #build(data) {
      this.plot?.destroy();
      const width = Math.max(300, this.box.clientWidth || 400);
      const series = [{}];
      for (const [label, s] of this.series) {
        series.push({ label, stroke: s.stroke, width: 1.5, dash: s.dash, spanGaps: false, points: { show: false } });
      }
      const y = this.options.ratio ? { range: [0, 1] } : { range: (_u, min, max) => [Math.min(0, min), Math.max(1e-9, max) * 1.1] };
      this.plot = new uPlot(
        {
          width,
          height: 150,
          series,
          scales: { x: { time: true }, y },
          axes: [{}, { size: 50, values: this.options.ratio ? (_u, ticks) => ticks.map((t) => `${Math.round(t * 100)}%`) : undefined }],
          legend: { live: false },
        },
        data,
        this.box,
      );
    }
  }

  const charts = new Map();
  function chart(parent, key, title, options) {
    let c = charts.get(key);
    if (c === undefined) {
      c = new TimeChart(parent, key, title, options);
      charts.set(key, c);
    }
    return c;
  }

  const sections = new Map();
  function memberSection(kind, id, title) {
    const key = `${kind}:${id}`;
    let s = sections.get(key);
    if (s === undefined) {
      const root = el('section', { class: 'member', [`data-${kind}-id`]: id });
      const heading = el('h2');
      heading.append(el('span', { class: 'name' }, title));
      const badge = el('span', { class: 'badge' });
      const meta = el('span', { class: 'meta' });
      heading.append(badge, meta);
      const grid = el('div', { class: 'grid' });
      root.append(heading, grid);
      $('members').append(root);
      s = { root, badge, meta, grid };
      sections.set(key, s);
    }
    return s;
  }

  function limitStyles() {
    return { usage: { stroke: '#2f6fd6' }, low: { stroke: LIMIT_COLORS.low, dash: [6, 4] }, high: { stroke: LIMIT_COLORS.high, dash: [6, 4] } };
  }

  function drawNode(frame) {
    const t = frame.timeMs / 1000;
    const n = frame.node;
    const w = frame.workers;
    $('node-id').textContent = `node ${frame.nodeId}`;
    $('summary').textContent =
      `cpu ${pct(n.cpu)} · memory ${pct(n.memory)} · duress ${n.duress ? n.duressLevel : 'none'} · ` +
      `enforcement ${n.enforcement} · workers ${w.busy}/${w.threads} busy, ${w.loading} loading, ${w.replaced} replaced · ` +
      `governor tick p50 ${n.cores ? frame.governor.tickMedianUs : 0} µs`;
    const overview = $('overview');
    chart(overview, 'node', 'Node usage and duress', { ratio: true }).push(t, {
      cpu: n.cpu,
      memory: n.memory,
      duress: n.duress ? 1 : 0,
    });
    chart(overview, 'workers', 'Workers').push(t, { live: w.live, busy: w.busy, loading: w.loading, replaced: w.replaced });
    const queued = {};
    for (const p of frame.priorities) queued[`priority ${p.priority}`] = p.queued;
    queued.total = n.queued;
    chart(overview, 'queue', 'Queued tasks per priority').push(t, queued);
    const lanes = {};
    for (const l of frame.lanes) {
      lanes[`${l.name} busy`] = l.busy;
      lanes[`${l.name} queued`] = l.queued;
    }
    const weights = frame.lanes.map((l) => `${l.name} ${l.weight === 'idle' ? 'idle' : `nice ${l.weight}`}${l.weighted ? '' : ' (unweighted)'}`);
    chart(overview, 'lanes', `Lanes (${frame.isolation}: ${weights.join(', ')}): busy workers and queued tasks`).push(t, lanes);
    const refusals = {};
    const latency = {};
    for (const s of frame.sandboxes) {
      refusals[`${s.name} rejected/s`] = s.rejectionsPerSecond;
      refusals[`${s.name} cancelled/s`] = s.cancellationsPerSecond;
      latency[`${s.name} p50`] = s.latencyMs?.p50 ?? null;
      latency[`${s.name} p99`] = s.latencyMs?.p99 ?? null;
    }
    chart(overview, 'refusals', 'Rejections and cancellations per second').push(t, refusals);
    chart(overview, 'latency', frame.taskLatencies ? 'Latency of completed tasks, ms (p50, p99 each second)' : 'Latency (not fed: runtime without task ends)').push(t, latency);
    if (frame.reservations.some((r) => r.minPriority !== null)) {
      const reserved = {};
      for (const r of frame.reservations) reserved[`${r.lane} ${r.minPriority === null ? 'unreserved' : `≥${r.minPriority}`} busy`] = r.busy;
      chart(overview, 'reservations', 'Reserved workers busy').push(t, reserved);
    }
    for (const s of frame.sandboxes) {
      const section = memberSection('sandbox', s.id, s.name === s.id ? s.id : `${s.name} (${s.id})`);
      section.badge.textContent = s.state;
      section.badge.dataset.state = s.state;
      section.meta.textContent = `${s.mode}, priority ${s.priority} · running ${s.running} · queued ${s.queued} · ${s.completionsPerSecond}/s done`;
      for (const resource of ['cpu', 'memory']) {
        const limit = s.limits[resource];
        chart(section.grid, `${resource}:${s.id}`, `${resource === 'cpu' ? 'CPU' : 'Memory'} usage against its limits`, { ratio: true }).push(
          t,
          { usage: s.usage[resource], low: limit?.low ?? null, high: limit?.high ?? null },
          limitStyles(),
        );
      }
    }
  }

  function drawCoordinator(frame) {
    const t = frame.timeMs / 1000;
    $('node-id').textContent = `coordinator ${frame.nodeId}`;
    $('summary').textContent =
      `${frame.searchesPerSecond} searches/s · ${frame.rejectionsPerSecond} admission rejections/s · ` +
      `${frame.failuresPerSecond} failed/s · ${frame.dataNodes.length} data nodes`;
    const overview = $('overview');
    const per = (fn) => Object.fromEntries(frame.dataNodes.map((d) => [d.id, fn(d)]));
    chart(overview, 'cluster', 'Searches per second').push(t, {
      searches: frame.searchesPerSecond,
      rejected: frame.rejectionsPerSecond,
      failed: frame.failuresPerSecond,
    });
    chart(overview, 'data-cpu', 'Data node CPU (reported)', { ratio: true }).push(t, per((d) => d.cpu));
    chart(overview, 'data-heap', 'Data node heap (reported)', { ratio: true }).push(t, per((d) => d.heap));
    chart(overview, 'data-age', 'Age of the stats, s').push(t, per((d) => (d.ageMs === null ? null : d.ageMs / 1000)));
    chart(overview, 'data-admission', 'Admission rejections per second, by node').push(t, per((d) => d.admissionRejectionsPerSecond));
    chart(overview, 'data-requests', 'Requests per second, by node').push(t, per((d) => d.requestsPerSecond));
    chart(overview, 'data-rank', 'Replica ranking (C3 rank, lower is preferred)').push(t, per((d) => d.rank));
    for (const d of frame.dataNodes) {
      const section = memberSection('node', d.id, d.id);
      section.badge.textContent = d.state;
      section.badge.dataset.state = d.state;
      section.meta.replaceChildren(
        `cpu ${pct(d.cpu)} · heap ${pct(d.heap)} · ${d.duress ? 'in duress · ' : ''}${d.outstandingShards} shards in flight · `,
        el('a', { href: d.dashboardUrl, target: '_blank', rel: 'noopener' }, 'its dashboard'),
      );
    }
  }

  function connect() {
    const status = $('status');
    const source = new EventSource('/_dashboard/stream');
    source.onopen = () => {
      status.dataset.state = 'live';
      status.textContent = 'live';
    };
    source.onerror = () => {
      status.dataset.state = 'disconnected';
      status.textContent = 'reconnecting…';
    };
    source.onmessage = (event) => {
      const frame = JSON.parse(event.data);
      status.dataset.state = 'live';
      status.textContent = `live · ${new Date(frame.timeMs).toLocaleTimeString()}`;
      document.body.dataset.kind = frame.kind;
      if (frame.kind === 'coordinator') drawCoordinator(frame);
      else drawNode(frame);
      document.body.dataset.frames = String(Number(document.body.dataset.frames ?? 0) + 1);
    };
  }

  connect();
})();
