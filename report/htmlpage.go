package report

// htmlPageText is the store-wide report's page. Everything from the store
// reaches the page either through html/template's contextual escaping or,
// for the sample browser, as gzip+base64 JSON in an attribute that the
// script decodes and shows with textContent only (never innerHTML).
const htmlPageText = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#222;max-width:1200px}
h1{font-size:1.6em}h2{border-bottom:2px solid #ccd;padding-bottom:.2em;margin-top:1.8em}h3{margin-bottom:.3em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccc;padding:.25em .55em;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}code,pre{white-space:pre-wrap;word-break:break-word}
.charts{display:flex;flex-wrap:wrap;gap:1em}.charts figure{margin:0}figcaption{font-size:.85em;color:#555}
.heat{display:flex;flex-wrap:wrap;gap:1.5em}
.bar{display:inline-block;height:.7em;background:#4477aa;margin-right:.4em;vertical-align:middle}
#js-errors{background:#fdd;border:1px solid #c00;padding:.5em;white-space:pre-wrap}
.controls{display:flex;flex-wrap:wrap;gap:.8em;align-items:center;background:#f4f5f8;padding:.6em;border-radius:4px;position:sticky;top:0}
details.sample{border:1px solid #ddd;border-radius:4px;margin:.3em 0;padding:.2em .5em}
details.sample>summary{cursor:pointer}
.chip{display:inline-block;font-size:.8em;background:#eef;border-radius:3px;padding:0 .35em;margin-left:.3em;font-variant-numeric:tabular-nums}
.chip.ch{background:#ffe5b4}.chip.fail{background:#f99}
mark.cut{background:#c33;color:#fff;font-size:.75em;padding:0 .2em;margin:0 .1em;border-radius:2px}
pre.raw,pre.prompt,pre.gold{background:#fafafa;border:1px solid #eee;padding:.4em;max-height:30em;overflow:auto}
.after{color:#999}
</style></head>
<body>
<div id="js-errors" hidden></div>
<h1>{{.Title}}</h1>
<p>{{len .Tasks}} task(s), {{.Samples}} (sample, model) pairs. Means with 95% intervals (mean ± 1.96 standard errors, as lm-evaluation-harness computes them); paired differences against each model's first setting. Jump to the <a href="#browser">sample browser</a>.</p>
{{range .Tasks}}
<section class="task" id="task-{{.Task}}">
<h2>{{.Task}}</h2>
{{range .Metrics}}
<h3>{{.Metric}}</h3>
<div class="charts">
<figure>{{.Means}}<figcaption>mean and 95% interval per model and stop setting</figcaption></figure>
{{if .Diffs}}<figure>{{.Diffs}}<figcaption>paired difference against the model's first setting, with 95% interval</figcaption></figure>{{end}}
</div>
<table><tr><th>setting</th><th>n</th><th>mean</th><th>95% CI</th><th>diff vs first</th><th>95% CI</th><th>changed</th></tr>
{{range .Rows}}<tr><td><code>{{.Setting}}</code></td><td class="n">{{.N}}</td><td class="n">{{.Mean}}</td><td>{{.CI}}</td><td class="n">{{.Diff}}</td><td>{{.DCI}}</td><td class="n">{{.Changed}}</td></tr>
{{end}}</table>
{{end}}
{{if .Heat}}<h3>Counting-Stars heatmap</h3>
<p>Per-star score (star depth down, haystack length across), as the reference's pivot of its per-star scores.</p>
<div class="heat">{{range .Heat}}<figure>{{.SVG}}<figcaption>{{.Label}} ({{.N}} samples)</figcaption></figure>{{end}}</div>
{{end}}
{{with .Drop}}<h3>DROP: what the stop sequences and answer types do</h3>
<p>{{.Samples}} questions; <b>{{pct .FloatShare}}</b> of gold answers are numbers with a decimal point.</p>
<table><tr><th>setting</th><th>predictions cut by</th></tr>
{{range .Cuts}}<tr><td><code>{{.Label}}</code></td><td>{{range .Shares}}<div><span class="bar" style="{{bar .Value}}"></span><code>{{.Key}}</code> {{pct .Value}} ({{.N}})</div>{{end}}</td></tr>{{end}}
</table>
<table><tr><th>setting</th>{{range .Types}}<th>{{.}}</th>{{end}}</tr>
{{range .ByType}}<tr><td><code>{{.Label}}</code></td>{{range .Shares}}<td class="n">{{f4 .Value}} <small>(n={{.N}})</small></td>{{end}}</tr>{{end}}
</table><p><small>Mean {{.Metric}} by the gold answer's type (number, date or span, judged from the gold text).</small></p>
{{end}}
</section>
{{end}}
<h2 id="browser">Samples</h2>
<div class="controls">
<label>task <select id="f-task"><option value="">all</option></select></label>
<label>metric <select id="f-metric"><option value="">all</option></select></label>
<label><input type="checkbox" id="f-changed"> changed between settings</label>
<label><input type="checkbox" id="f-failed"> failed</label>
<label>search <input type="search" id="f-q" placeholder="id, model or text"></label>
<span>page <button id="p-prev" type="button">‹</button> <input id="p-num" type="number" min="1" value="1" style="width:5em"> of <span id="p-count">1</span> <button id="p-next" type="button">›</button></span>
<label>per page <select id="p-size"><option>25</option><option selected>50</option><option>200</option><option>1000</option></select></label>
<span id="shown"></span>
</div>
<div id="rows"></div>
<div id="data" hidden data-z="{{.Packed}}"></div>
<script>
(function () {
  'use strict';
  var errors = [];
  function recordError(msg) {
    errors.push(String(msg));
    var e = document.getElementById('js-errors');
    e.textContent = 'script errors:\n' + errors.join('\n');
    e.hidden = false;
    document.body.setAttribute('data-errors', String(errors.length));
  }
  window.addEventListener('error', function (ev) { recordError(ev.message || ev); });
  window.addEventListener('unhandledrejection', function (ev) {
    recordError('unhandled rejection: ' + (ev.reason && ev.reason.message ? ev.reason.message : ev.reason));
  });
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  async function load() {
    var s = atob(document.getElementById('data').getAttribute('data-z'));
    var bin = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bin[i] = s.charCodeAt(i);
    var stream = new Blob([bin]).stream().pipeThrough(new DecompressionStream('gzip'));
    return JSON.parse(await new Response(stream).text());
  }
  function fmt(v) { return v === undefined ? '–' : (Math.round(v * 10000) / 10000).toString(); }
  function failed(it) { return it.f === 'error' || it.f === 'context' || !!it.e; }
  function changed(D, it, metric) {
    var ms = metric ? [metric] : (D.metrics[it.t] || []);
    for (var i = 0; i < ms.length; i++) {
      var seen = {}, n = 0;
      it.u.forEach(function (u) { var v = u.v[ms[i]]; if (v !== undefined && !seen[v]) { seen[v] = 1; n++; } });
      if (n > 1) return true;
    }
    return false;
  }
  function raw(D, it) {
    var pre = el('pre', 'raw');
    var cuts = it.u.filter(function (u) { return u.cut >= 0; }).slice().sort(function (a, b) { return a.cut - b.cut; });
    var pos = 0, first = cuts.length ? cuts[0].cut : -1;
    cuts.forEach(function (u) {
      if (u.cut > pos) { pre.appendChild(el('span', pos >= first && first >= 0 ? 'after' : '', it.x.slice(pos, u.cut))); pos = u.cut; }
      pre.appendChild(el('mark', 'cut', '✂ ' + D.cols[it.t][u.c] + ' (' + JSON.stringify(u.seq) + ')'));
    });
    pre.appendChild(el('span', first >= 0 ? 'after' : '', it.x.slice(pos)));
    return pre;
  }
  function details(D, it) {
    var box = el('div');
    var pd = el('details');
    var P = D.prompts[it.p] || '';
    pd.appendChild(el('summary', '', 'prompt (' + P.length + ' characters)'));
    pd.appendChild(el('pre', 'prompt', P));
    box.appendChild(pd);
    box.appendChild(el('div', '', 'gold answers:'));
    box.appendChild(el('pre', 'gold', it.g));
    box.appendChild(el('div', '', it.imp ? 'continuation (imported: already cut where it was generated):'
      : 'raw continuation (finish: ' + it.f + '), with each setting\u2019s cut point:'));
    box.appendChild(raw(D, it));
    if (it.e) box.appendChild(el('pre', 'chip fail', 'error: ' + it.e));
    var ms = D.metrics[it.t] || [];
    var t = el('table'), h = el('tr');
    ['setting', 'cut at', 'prediction'].concat(ms).forEach(function (x) { h.appendChild(el('th', '', x)); });
    t.appendChild(h);
    it.u.forEach(function (u) {
      var r = el('tr');
      r.appendChild(el('td', '', D.cols[it.t][u.c]));
      r.appendChild(el('td', 'n', u.cut >= 0 ? String(u.cut) + ' ' + JSON.stringify(u.seq) : '–'));
      r.appendChild(el('td', '', u.pred));
      ms.forEach(function (m) { r.appendChild(el('td', 'n', fmt(u.v[m]))); });
      t.appendChild(r);
    });
    box.appendChild(t);
    return box;
  }
  function start(D) {
    var $ = function (id) { return document.getElementById(id); };
    var tasks = Object.keys(D.cols).sort(), metrics = {};
    tasks.forEach(function (t) {
      $('f-task').appendChild(el('option', '', t));
      (D.metrics[t] || []).forEach(function (m) { metrics[m] = 1; });
    });
    Object.keys(metrics).sort().forEach(function (m) { $('f-metric').appendChild(el('option', '', m)); });
    var page = 0, list = D.items;
    function filter() {
      var task = $('f-task').value, metric = $('f-metric').value, q = $('f-q').value;
      var ch = $('f-changed').checked, fl = $('f-failed').checked;
      list = D.items.filter(function (it) {
        if (task && it.t !== task) return false;
        if (metric && !it.u.some(function (u) { return metric in u.v; })) return false;
        if (fl && !failed(it)) return false;
        if (ch && !changed(D, it, metric)) return false;
        if (q && it.id.indexOf(q) < 0 && it.m.indexOf(q) < 0 && it.x.indexOf(q) < 0) return false;
        return true;
      });
      page = 0;
      render();
    }
    function render() {
      var size = +$('p-size').value, pages = Math.max(1, Math.ceil(list.length / size));
      page = Math.max(0, Math.min(page, pages - 1));
      $('p-num').value = page + 1; $('p-num').max = pages; $('p-count').textContent = String(pages);
      var metric = $('f-metric').value, rows = $('rows');
      rows.textContent = '';
      var slice = list.slice(page * size, (page + 1) * size);
      slice.forEach(function (it) {
        var d = el('details', 'sample');
        var s = el('summary');
        s.appendChild(el('b', '', it.id));
        s.appendChild(document.createTextNode(' · ' + it.t + ' · ' + it.m));
        var m = metric || (D.metrics[it.t] || [])[0];
        it.u.forEach(function (u) { s.appendChild(el('span', 'chip', D.cols[it.t][u.c] + ': ' + fmt(u.v[m]))); });
        if (changed(D, it, metric)) s.appendChild(el('span', 'chip ch', 'changed'));
        if (failed(it)) s.appendChild(el('span', 'chip fail', 'failed'));
        d.appendChild(s);
        var filled = false;
        d.addEventListener('toggle', function () { if (d.open && !filled) { filled = true; d.appendChild(details(D, it)); } });
        rows.appendChild(d);
      });
      $('shown').textContent = list.length ? (page * size + 1) + '–' + (page * size + slice.length) + ' of ' + list.length : 'no samples match';
      document.body.setAttribute('data-rendered', String(slice.length));
      document.body.setAttribute('data-total', String(list.length));
    }
    ['f-task', 'f-metric', 'f-changed', 'f-failed', 'f-q'].forEach(function (id) { $(id).addEventListener('input', filter); });
    $('p-size').addEventListener('input', function () { page = 0; render(); });
    $('p-prev').addEventListener('click', function () { page--; render(); });
    $('p-next').addEventListener('click', function () { page++; render(); });
    $('p-num').addEventListener('change', function () { page = (+$('p-num').value || 1) - 1; render(); });
    window.tallyOpenAll = function () {
      Array.prototype.forEach.call(document.querySelectorAll('details.sample'), function (d) { d.open = true; });
    };
    filter();
    if (location.hash === '#open') window.tallyOpenAll();
    document.body.setAttribute('data-ready', '1');
    document.body.setAttribute('data-load-ms', String(Math.round(performance.now())));
  }
  load().then(start).catch(function (e) { recordError('loading samples: ' + (e && e.message ? e.message : e)); });
})();
</script>
</body></html>
`
