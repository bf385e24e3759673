package report

// htmlPageText is the store-wide report's page. Everything from the store
// reaches the page either through html/template's contextual escaping or,
// for the sample browser, as gzip+base64 JSON in script elements of type
// application/octet-stream (never run) that the script decodes and shows
// with textContent only (never innerHTML).
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
.controls{display:flex;flex-wrap:wrap;gap:.8em;align-items:center;background:#f4f5f8;padding:.6em;border-radius:4px;position:sticky;top:0;z-index:1}
details.sample{border:1px solid #ddd;border-radius:4px;margin:.3em 0;padding:.2em .5em}
details.sample>summary{cursor:pointer}
.chip{display:inline-block;font-size:.8em;background:#eef;border-radius:3px;padding:0 .35em;margin-left:.3em;font-variant-numeric:tabular-nums}
.chip .m{color:#556}.chip.ch{background:#ffe5b4}.chip.fail{background:#f99}
mark.cut{background:#c33;color:#fff;font-size:.75em;padding:0 .2em;margin:0 .1em;border-radius:2px}
pre.raw,pre.prompt{background:#fafafa;border:1px solid #eee;padding:.4em;max-height:30em;overflow:auto}
ol.gold{margin:.2em 0 .6em;padding-left:2em}ol.gold li{font-family:monospace;white-space:pre-wrap}
.ws{color:#b35900;background:#fff1e0;border-radius:2px;font-size:.85em}
.after{color:#999}.after .ws{color:#c9a27a;background:none}
td.pred{font-family:monospace;white-space:pre-wrap}
.failed-list{font-size:.9em}
.legend{font-size:.85em;color:#555}
.only-browser section.task,.only-browser p.intro{display:none}
</style></head>
<body>
<div id="js-errors" hidden></div>
<h1>{{.Title}}</h1>
<p class="intro">{{len .Tasks}} task(s), {{.Samples}} (sample, model) pairs. Means with 95% intervals inside the scores' range: Wilson score intervals (for scores other than 0 or 1 in [0, 1], at the effective number of trials p(1−p)/SE², SE being lm-evaluation-harness's standard error; scores beyond [0, 1]: mean ± 1.96 SE); paired differences against each model's first setting. Failed samples (backend error, prompt beyond the context) count as 0. Jump to the <a href="#browser">sample browser</a>.</p>
{{range .Tasks}}
<section class="task" id="task-{{.Task}}">
<h2>{{.Task}}</h2>
{{range .Metrics}}
<h3>{{.Metric}}</h3>
<div class="charts">
<figure>{{.Means}}<figcaption>mean and 95% interval per model and stop setting</figcaption></figure>
{{if .Diffs}}<figure>{{.Diffs}}<figcaption>paired difference against the model's first setting, with 95% interval</figcaption></figure>{{end}}
</div>
<table><tr><th>setting</th><th>n</th><th>failed</th><th>mean</th><th>95% CI</th><th>diff vs first</th><th>95% CI</th><th>changed</th></tr>
{{range .Rows}}<tr><td><code>{{.Setting}}</code></td><td class="n">{{.N}}</td><td class="n">{{.Failed}}</td><td class="n">{{.Mean}}</td><td>{{.CI}}</td><td class="n">{{.Diff}}</td><td>{{.DCI}}</td><td class="n">{{.Changed}}</td></tr>
{{end}}</table>
{{end}}
{{if .Failed}}<details class="failed-list"><summary>{{len .Failed}} failed samples (count as 0 in the means)</summary><ul>{{range .Failed}}<li><code>{{.}}</code></li>{{end}}</ul></details>{{end}}
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
</table><p><small>Mean {{.Metric}} by the gold answer's type as DROP's gold types it (number, date — a year alone is a date — or span; samples an earlier tally stored without it: judged from the gold text).</small></p>
{{end}}
</section>
{{end}}
<h2 id="browser">Samples</h2>
<div class="controls">
<label>task <select id="f-task"><option value="">all</option></select></label>
<label>metric <select id="f-metric"><option value="">all</option></select></label>
<label><input type="checkbox" id="f-changed"> changed between settings</label>
<label><input type="checkbox" id="f-failed"> failed</label>
<label>search <input type="search" id="f-q" placeholder="id or model"></label>
<label><input type="checkbox" id="f-text"> in texts too</label>
<span>page <button id="p-prev" type="button">‹</button> <input id="p-num" type="number" min="1" value="1" style="width:5em"> of <span id="p-count">1</span> <button id="p-next" type="button">›</button></span>
<label>per page <select id="p-size"><option>25</option><option selected>50</option><option>200</option><option>1000</option></select></label>
<span id="shown"></span>
</div>
<p class="legend">Whitespace is shown: <span class="ws">↵</span> line break, <span class="ws">→</span> tab, <span class="ws">␍</span> carriage return, <span class="ws">⍽</span> other spaces, <span class="ws">·</span> a space in answers and predictions (and where spaces lead, trail or repeat elsewhere).</p>
<div id="rows"></div>
<script type="application/octet-stream" id="index">{{.Index}}</script>
{{range $i, $c := .Chunks}}<script type="application/octet-stream" id="c{{$i}}">{{$c.HTML}}</script>
{{end}}<script>
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
    if (text !== undefined) e.appendChild(typeof text === 'string' ? document.createTextNode(text) : text);
    return e;
  }
  async function unpack(id) {
    var s = atob(document.getElementById(id).textContent.trim());
    var bin = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bin[i] = s.charCodeAt(i);
    var stream = new Blob([bin]).stream().pipeThrough(new DecompressionStream('gzip'));
    return JSON.parse(await new Response(stream).text());
  }
  var chunks = {};
  function chunk(n) { return chunks[n] || (chunks[n] = unpack('c' + n)); }
  // marked shows text with its whitespace visible: line breaks, tabs,
  // carriage returns and other spaces always as marks; ASCII spaces as
  // "·" everywhere when all is set (answers, predictions), else where
  // they lead, trail or repeat.
  var marks = {'\n': '\u21b5', '\t': '\u2192', '\r': '\u240d'};
  function marked(text, all) {
    var f = document.createDocumentFragment(), plain = '';
    function flush() { if (plain) { f.appendChild(document.createTextNode(plain)); plain = ''; } }
    function mark(m, keep) { flush(); f.appendChild(el('span', 'ws', m)); if (keep) f.appendChild(document.createTextNode(keep)); }
    for (var i = 0; i < text.length; i++) {
      var c = text[i];
      if (marks[c]) { mark(marks[c], c === '\n' || c === '\t' ? c : ''); continue; }
      if (c === ' ') {
        var lone = i > 0 && i < text.length - 1 && text[i - 1] !== ' ' && text[i + 1] !== ' ';
        if (all || !lone) { mark('\u00b7', ''); continue; }
      } else if (/\s/.test(c)) { mark('\u237d', ''); continue; }
      plain += c;
    }
    flush();
    return f;
  }
  function fmt(v) { return v === undefined ? '–' : (Math.round(v * 10000) / 10000).toString(); }
  function raw(I, t, it) {
    var pre = el('pre', 'raw');
    var cuts = it.u.filter(function (u) { return u.cut >= 0; }).slice().sort(function (a, b) { return a.cut - b.cut; });
    var pos = 0, first = cuts.length ? cuts[0].cut : -1;
    cuts.forEach(function (u) {
      if (u.cut > pos) { pre.appendChild(el('span', pos >= first && first >= 0 ? 'after' : '', marked(it.x.slice(pos, u.cut), false))); pos = u.cut; }
      pre.appendChild(el('mark', 'cut', '\u2702 ' + I.cols[t][u.c] + ' (' + JSON.stringify(u.seq) + ')'));
    });
    pre.appendChild(el('span', first >= 0 ? 'after' : '', marked(it.x.slice(pos), false)));
    return pre;
  }
  function details(I, t, C, it) {
    var box = el('div');
    var pd = el('details');
    var P = C.p[it.p] || '';
    pd.appendChild(el('summary', '', 'prompt (' + P.length + ' characters)'));
    pd.appendChild(el('pre', 'prompt', marked(P, false)));
    box.appendChild(pd);
    box.appendChild(el('div', '', 'gold answers:'));
    var ol = el('ol', 'gold');
    (it.g || []).forEach(function (g) { ol.appendChild(el('li', '', marked(g, true))); });
    box.appendChild(ol);
    if (it.fr) box.appendChild(el('div', 'chip fail', 'failed: ' + it.fr));
    box.appendChild(el('div', '', it.imp ? 'continuation (imported: already cut where it was generated):'
      : 'raw continuation (finish: ' + it.f + '), with each setting\u2019s cut point:'));
    box.appendChild(raw(I, t, it));
    if (it.e && !it.fr) box.appendChild(el('pre', 'chip fail', 'error: ' + it.e));
    var ms = I.metrics[t] || [];
    var tb = el('table'), h = el('tr');
    ['setting', 'cut at', 'prediction'].concat(ms).forEach(function (x) { h.appendChild(el('th', '', x)); });
    tb.appendChild(h);
    it.u.forEach(function (u) {
      var r = el('tr');
      r.appendChild(el('td', '', I.cols[t][u.c]));
      r.appendChild(el('td', 'n', u.cut >= 0 ? String(u.cut) + ' ' + JSON.stringify(u.seq) : '–'));
      r.appendChild(el('td', 'pred', marked(u.pred, true)));
      ms.forEach(function (m) { r.appendChild(el('td', 'n', fmt(u.v[m]))); });
      tb.appendChild(r);
    });
    box.appendChild(tb);
    return box;
  }
  function start(I) {
    var $ = function (id) { return document.getElementById(id); };
    var metrics = {};
    I.tasks.forEach(function (t) {
      $('f-task').appendChild(el('option', '', t));
      (I.metrics[t] || []).forEach(function (m) { metrics[m] = 1; });
    });
    Object.keys(metrics).sort().forEach(function (m) { $('f-metric').appendChild(el('option', '', m)); });
    var hash = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) { var p = kv.split('='); if (p[0]) hash[p[0]] = p.length > 1 ? decodeURIComponent(p[1]) : '1'; });
    if (hash.failed) $('f-failed').checked = true;
    if (hash.changed) $('f-changed').checked = true;
    if (hash.task) $('f-task').value = hash.task;
    if (hash.metric) $('f-metric').value = hash.metric;
    var n = I.id.length, all = new Array(n);
    for (var k0 = 0; k0 < n; k0++) all[k0] = k0;
    var page = 0, list = all, seq = 0, first = true;
    async function filter() {
      var my = ++seq;
      var task = $('f-task').value, metric = $('f-metric').value, q = $('f-q').value;
      var ch = $('f-changed').checked, fl = $('f-failed').checked, inText = $('f-text').checked && q !== '';
      if (inText) {
        $('shown').textContent = 'searching the texts…';
        for (var cn = 0; cn < I.chunks; cn++) await chunk(cn);
        if (my !== seq) return;
      }
      var texts = {};
      list = [];
      var ti = task ? I.tasks.indexOf(task) : -1, mis = I.tasks.map(function (t) { return metric ? (I.metrics[t] || []).indexOf(metric) : -1; });
      for (var k = 0; k < n; k++) {
        if (task && I.t[k] !== ti) continue;
        var mi = mis[I.t[k]];
        if (metric && mi < 0) continue;
        if (fl && !(I.f[k] & 1)) continue;
        if (ch && !(metric ? (I.ch[k] >> mi) & 1 : I.ch[k])) continue;
        if (q && I.id[k].indexOf(q) < 0 && I.models[I.m[k]].indexOf(q) < 0) {
          if (!inText) continue;
          var it = (await chunk(I.c[k])).i[I.p[k]];
          if (it.x.indexOf(q) < 0 && !it.u.some(function (u) { return u.pred.indexOf(q) >= 0; })) continue;
        }
        list.push(k);
      }
      if (my !== seq) return;
      page = hash.page && first ? (+hash.page || 1) - 1 : 0;
      await render();
    }
    async function render() {
      var my = ++seq;
      var size = +$('p-size').value, pages = Math.max(1, Math.ceil(list.length / size));
      page = Math.max(0, Math.min(page, pages - 1));
      $('p-num').value = page + 1; $('p-num').max = pages; $('p-count').textContent = String(pages);
      var metric = $('f-metric').value;
      var slice = list.slice(page * size, (page + 1) * size);
      var need = {};
      slice.forEach(function (k) { need[I.c[k]] = 1; });
      var got = {};
      await Promise.all(Object.keys(need).map(function (n) { return chunk(+n).then(function (c) { got[n] = c; }); }));
      if (my !== seq) return;
      var rows = $('rows');
      rows.textContent = '';
      slice.forEach(function (k) {
        var t = I.tasks[I.t[k]], C = got[I.c[k]], it = C.i[I.p[k]];
        var d = el('details', 'sample');
        d.setAttribute('data-failed', I.f[k] & 1 ? '1' : '0');
        var s = el('summary');
        s.appendChild(el('b', '', I.id[k]));
        s.appendChild(document.createTextNode(' \u00b7 ' + t + ' \u00b7 ' + I.models[I.m[k]]));
        var m = metric || (I.metrics[t] || [])[0];
        it.u.forEach(function (u) {
          var chip = el('span', 'chip', I.cols[t][u.c] + ' ');
          chip.appendChild(el('span', 'm', m));
          chip.appendChild(document.createTextNode(' ' + fmt(u.v[m])));
          s.appendChild(chip);
        });
        if (I.ch[k]) s.appendChild(el('span', 'chip ch', 'changed'));
        if (I.f[k] & 1) s.appendChild(el('span', 'chip fail', 'failed'));
        d.appendChild(s);
        var filled = false;
        function fill() { if (!filled) { filled = true; d.appendChild(details(I, t, C, it)); } }
        d.addEventListener('toggle', function () { if (d.open) fill(); });
        rows.appendChild(d);
      });
      $('shown').textContent = list.length ? (page * size + 1) + '–' + (page * size + slice.length) + ' of ' + list.length : 'no samples match';
      document.body.setAttribute('data-rendered', String(slice.length));
      document.body.setAttribute('data-total', String(list.length));
      if (first) {
        first = false;
        if (hash.open) window.tallyOpenAll();
        if (hash.only === 'browser') document.body.classList.add('only-browser');
        document.body.setAttribute('data-ready', '1');
        document.body.setAttribute('data-load-ms', String(Math.round(performance.now())));
      }
    }
    ['f-task', 'f-metric', 'f-changed', 'f-failed', 'f-q', 'f-text'].forEach(function (id) { $(id).addEventListener('input', filter); });
    $('p-size').addEventListener('input', function () { page = 0; render(); });
    $('p-prev').addEventListener('click', function () { page--; render(); });
    $('p-next').addEventListener('click', function () { page++; render(); });
    $('p-num').addEventListener('change', function () { page = (+$('p-num').value || 1) - 1; render(); });
    window.tallyOpenAll = function () {
      Array.prototype.forEach.call(document.querySelectorAll('details.sample'), function (d) { d.open = true; });
    };
    return filter();
  }
  unpack('index').then(start).catch(function (e) { recordError('loading samples: ' + (e && e.message ? e.message : e)); });
})();
</script>
</body></html>
`
