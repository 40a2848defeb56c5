/* pollution.html: filter, expand and copy.  Never builds HTML from strings: every piece of
   record text goes into textContent or an attribute value. */
(function () {
  "use strict";

  var SVGNS = "http://www.w3.org/2000/svg";
  var dataNode = document.getElementById("statesnap-data");
  var DATA = dataNode ? JSON.parse(dataNode.textContent) : { lanes: [], tests: [], details: {} };
  var LANES = DATA.lanes, TESTS = DATA.tests, DETAILS = DATA.details;
  var NOTABLE = { failed: 1, error: 1, xpassed: 1, crashed: 1 };
  var MAX_RESULTS = 200;

  function $(id) { return document.getElementById(id); }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function svgRect(x, w, y, h) {
    var r = document.createElementNS(SVGNS, "rect");
    r.setAttribute("x", String(x));
    r.setAttribute("width", String(w));
    r.setAttribute("y", String(y));
    r.setAttribute("height", String(h));
    return r;
  }

  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }

  /* ---- tests: a row is [lane, position, nodeid, outcome, duration, leaks, changes] ---- */
  function keyOf(row) { return row[0] + "." + row[1]; }

  function rowOf(key) {
    var parts = String(key).split(".");
    var lane = LANES[Number(parts[0])];
    if (!lane) { return null; }
    var pos = Number(parts[1]);
    if (!(pos >= 0 && pos < lane.count)) { return null; }
    return TESTS[lane.offset + pos] || null;
  }

  function laneWidth() {
    var w = 1;
    for (var i = 0; i < LANES.length; i++) { w = Math.max(w, LANES[i].count); }
    return w;
  }
  var WIDTH = laneWidth();
  var LEAST = Math.max(1, WIDTH / 600);

  function strips() { return document.querySelectorAll("svg.strip"); }

  function stripOf(lane) { return document.querySelector('svg.strip[data-lane="' + Number(lane) + '"]'); }

  /* ---- the per-test panel ---- */
  function valueNode(v) {
    if (!v || v.absent) { return el("span", "absent", "absent"); }
    var wrap = el("span");
    wrap.appendChild(el("code", "value", v.text));
    if (v.length) { wrap.appendChild(el("span", "cut", "\u2026 (" + v.length.toLocaleString() + " characters)")); }
    return wrap;
  }

  function diffNode(change) {
    var d = el("details", "sdiff");
    var n = change.diff.length + (change.diff_more || 0);
    d.appendChild(el("summary", null, "structural diff (" + n + " difference" + (n === 1 ? "" : "s") + ")"));
    var ul = el("ul", "sdiff-lines");
    change.diff.forEach(function (ln) {
      var cls = ln[0] === "+" ? "sd sd-add" : (ln[0] === "-" ? "sd sd-del" : "sd sd-chg");
      var li = el("li", cls);
      li.appendChild(el("span", "sd-sign", ln[0]));
      li.appendChild(document.createTextNode(" "));
      li.appendChild(el("span", "sd-path", ln[1]));
      li.appendChild(document.createTextNode(" "));
      li.appendChild(el("span", "sd-text", ln[2]));
      ul.appendChild(li);
    });
    if (change.diff_more) { ul.appendChild(el("li", "sd sd-more", "\u2026 " + change.diff_more + " more")); }
    d.appendChild(ul);
    return d;
  }

  function changesTable(changes) {
    var table = el("table", "changes");
    var head = el("tr");
    ["probe", "key", "change", "before", "after", "where", "leak"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
    var body = el("tbody");
    changes.forEach(function (c) {
      var tr = el("tr");
      var probe = el("td"); probe.appendChild(el("code", null, c.probe)); tr.appendChild(probe);
      var key = el("td"); key.appendChild(el("code", "key", c.key)); tr.appendChild(key);
      tr.appendChild(el("td", "chg-" + (c.change === "added" || c.change === "removed" ? c.change : "changed"), c.change));
      var before = el("td"); before.appendChild(valueNode(c.before)); tr.appendChild(before);
      var after = el("td"); after.appendChild(valueNode(c.after));
      if (c.diff) { after.appendChild(diffNode(c)); }
      if (c.delta) { after.appendChild(el("div", "delta", "what changed: " + c.delta)); }
      tr.appendChild(after);
      tr.appendChild(el("td", null, c.where || ""));
      tr.appendChild(el("td", c.leak ? "leak-yes" : "", c.leak ? "leak" : "undone"));
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }

  function select(row) {
    strips().forEach(function (s) { clear(s.querySelector("g.sel")); });
    if (!row) { return; }
    var strip = stripOf(row[0]);
    if (strip) { strip.querySelector("g.sel").appendChild(svgRect(row[1], LEAST, 0.5, 13)); }
  }

  function openTest(key, scroll) {
    var row = rowOf(key);
    var panel = $("test-detail");
    if (!row || !panel) { return; }
    var detail = DETAILS[keyOf(row)] || null;
    var lane = LANES[row[0]];
    $("td-name").textContent = row[2];
    var meta = [lane.label, "#" + (row[1] + 1) + " in run order", row[3]];
    if (row[4] !== null && row[4] !== undefined) { meta.push(row[4] + " s"); }
    if (detail && detail.phases) {
      var phases = Object.keys(detail.phases).map(function (p) { return p + " " + detail.phases[p]; });
      if (phases.length) { meta.push(phases.join(", ")); }
    }
    $("td-meta").textContent = meta.join(" \u00b7 ");
    var failure = detail && detail.failure;
    $("td-failure").hidden = !failure;
    $("td-failure-text").textContent = failure
      ? [failure.exc_type, failure.message].filter(Boolean).join(": ") + (failure.text ? "\n\n" + failure.text : "")
      : "";
    var box = $("td-changes");
    clear(box);
    if (detail && detail.crashed) {
      box.appendChild(el("p", "crash", "The process died while this test was running; nothing after it was recorded."));
    } else if (detail && detail.changes && detail.changes.length) {
      box.appendChild(el("h4", null, "State changes (before setup \u2192 after teardown)"));
      box.appendChild(changesTable(detail.changes));
    } else {
      box.appendChild(el("p", "empty", "This test changed no recorded state."));
    }
    panel.hidden = false;
    select(row);
    if (window.history && window.history.replaceState) {
      try { window.history.replaceState(null, "", "#test=" + keyOf(row)); } catch (e) { /* file:// in some browsers */ }
    }
    if (scroll !== false) { panel.scrollIntoView({ block: "nearest" }); }
  }

  /* ---- the timeline: hover, click, filter ---- */
  var tip = $("tl-tip");
  var filterState = null;

  function interesting(row) {
    if (filterState) { return matches(row, filterState); }
    return NOTABLE[row[3]] === 1 || row[5] > 0;
  }

  function testAt(strip, clientX) {
    var lane = LANES[Number(strip.getAttribute("data-lane"))];
    if (!lane || !lane.count) { return null; }
    var box = strip.getBoundingClientRect();
    var pos = Math.floor((clientX - box.left) / box.width * WIDTH);
    if (pos < 0 || pos >= lane.count) { return null; }
    // Markers are drawn wider than one test: snap to the marked test under the pointer.
    var radius = Math.ceil(LEAST);
    for (var d = 0; d <= radius; d++) {
      var candidates = [pos - d, pos + d];
      for (var i = 0; i < candidates.length; i++) {
        var p = candidates[i];
        if (p >= 0 && p < lane.count && interesting(TESTS[lane.offset + p])) { return TESTS[lane.offset + p]; }
      }
    }
    return TESTS[lane.offset + pos];
  }

  function describe(row) {
    var text = row[2] + " \u2014 " + row[3];
    if (row[5]) { text += " \u00b7 leaked " + row[5] + " key" + (row[5] === 1 ? "" : "s"); }
    return text;
  }

  strips().forEach(function (strip) {
    strip.addEventListener("mousemove", function (ev) {
      var row = testAt(strip, ev.clientX);
      if (!row || !tip) { if (tip) { tip.hidden = true; } return; }
      tip.textContent = describe(row);
      tip.hidden = false;
      tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 300) + "px";
      tip.style.top = (ev.clientY + 14) + "px";
    });
    strip.addEventListener("mouseleave", function () { if (tip) { tip.hidden = true; } });
    strip.addEventListener("click", function (ev) {
      var row = testAt(strip, ev.clientX);
      if (row) { openTest(keyOf(row)); }
    });
  });

  function matches(row, f) {
    if (f.leaked && !row[5]) { return false; }
    if (f.outcome && row[3] !== f.outcome) { return false; }
    if (f.text && String(row[2]).toLowerCase().indexOf(f.text) < 0) { return false; }
    return true;
  }

  function applyFilter() {
    var text = ($("tl-filter").value || "").trim().toLowerCase();
    var outcome = $("tl-outcome").value;
    var leaked = $("tl-leaked").checked;
    var results = $("tl-results"), count = $("tl-count");
    strips().forEach(function (s) { clear(s.querySelector("g.hl")); });
    clear(results);
    if (!text && !outcome && !leaked) {
      filterState = null;
      strips().forEach(function (s) { s.classList.remove("filtering"); });
      results.hidden = true;
      count.textContent = "";
      return;
    }
    filterState = { text: text, outcome: outcome, leaked: leaked };
    var found = 0, runStart = -1, runEnd = -1, runLane = -1;
    function flush() {
      if (runLane < 0) { return; }
      var strip = stripOf(runLane);
      if (strip) { strip.querySelector("g.hl").appendChild(svgRect(runStart, Math.max(runEnd - runStart, LEAST), 5, 9)); }
      runLane = -1;
    }
    for (var i = 0; i < TESTS.length; i++) {
      var row = TESTS[i];
      if (!matches(row, filterState)) { continue; }
      found++;
      if (row[0] === runLane && row[1] === runEnd) { runEnd++; } else { flush(); runLane = row[0]; runStart = row[1]; runEnd = row[1] + 1; }
      if (found <= MAX_RESULTS) {
        var li = el("li");
        var b = el("button", "test-link", row[2]);
        b.type = "button";
        b.setAttribute("data-test", keyOf(row));
        li.appendChild(b);
        li.appendChild(el("span", "oc", (LANES.length > 1 ? LANES[row[0]].label + " \u00b7 " : "") + row[3] + (row[5] ? " \u00b7 leaked" : "")));
        results.appendChild(li);
      }
    }
    flush();
    strips().forEach(function (s) { s.classList.add("filtering"); });
    results.hidden = found === 0;
    count.textContent = found.toLocaleString() + " of " + TESTS.length.toLocaleString() + " tests match" +
      (found > MAX_RESULTS ? " (first " + MAX_RESULTS + " listed)" : "");
  }

  function debounce(fn, ms) {
    var t = null;
    return function () { if (t) { clearTimeout(t); } t = setTimeout(fn, ms); };
  }

  if ($("tl-form")) {
    $("tl-form").addEventListener("submit", function (ev) { ev.preventDefault(); applyFilter(); });
    $("tl-filter").addEventListener("input", debounce(applyFilter, 120));
    $("tl-outcome").addEventListener("change", applyFilter);
    $("tl-leaked").addEventListener("change", applyFilter);
  }
  if ($("td-close")) {
    $("td-close").addEventListener("click", function () { $("test-detail").hidden = true; select(null); });
  }

  /* ---- the leak table: sorted, filtered and paged from the data; one page in the DOM ----
     a row is [probe, key, change, before, after, severity, where, test key, node id, lane,
     position] */
  var SEVERITY = { 1: "low", 2: "medium", 3: "high" };
  var LEAKS = DATA.leaks || [];
  var PAGE = DATA.leak_page || 100;
  var leakTable = $("leak-table");
  var leakState = { order: null, text: "", probe: "", page: 0 };
  var leakSearch = null;

  function leakRowNode(r) {
    var tr = el("tr");
    var probe = el("td"); probe.appendChild(el("code", null, r[0])); tr.appendChild(probe);
    var key = el("td"); key.appendChild(el("code", "key", r[1])); tr.appendChild(key);
    tr.appendChild(el("td", "chg-" + (r[2] === "added" || r[2] === "removed" ? r[2] : "changed"), r[2]));
    var change = el("td", "change");
    change.appendChild(valueNode(r[3]));
    change.appendChild(document.createTextNode(" \u2192 "));
    change.appendChild(valueNode(r[4]));
    tr.appendChild(change);
    tr.appendChild(el("td", "sev sev-" + Number(r[5]), SEVERITY[r[5]] || String(r[5])));
    tr.appendChild(el("td", null, r[6]));
    var test = el("td");
    var b = el("button", "test-link", r[8]);
    b.type = "button";
    b.setAttribute("data-test", r[7]);
    test.appendChild(b);
    if (r[9]) { test.appendChild(document.createTextNode(" ")); test.appendChild(el("span", "lane-tag", r[9])); }
    tr.appendChild(test);
    tr.appendChild(el("td", "num", r[10] + 1));
    return tr;
  }

  function leakMatches(i) {
    var r = LEAKS[i];
    if (leakState.probe && r[0] !== leakState.probe) { return false; }
    if (!leakState.text) { return true; }
    if (!leakSearch) {
      leakSearch = LEAKS.map(function (x) {
        return [x[0], x[1], x[2], x[3].text, x[4].text, x[6], x[8], x[9]].join("\n").toLowerCase();
      });
    }
    return leakSearch[i].indexOf(leakState.text) >= 0;
  }

  function renderLeaks() {
    var order = leakState.order || LEAKS.map(function (_, i) { return i; });
    var shown = order.filter(leakMatches);
    var pages = Math.max(1, Math.ceil(shown.length / PAGE));
    leakState.page = Math.min(Math.max(leakState.page, 0), pages - 1);
    var from = leakState.page * PAGE;
    var tbody = leakTable.tBodies[0];
    clear(tbody);
    var frag = document.createDocumentFragment();
    shown.slice(from, from + PAGE).forEach(function (i) { frag.appendChild(leakRowNode(LEAKS[i])); });
    tbody.appendChild(frag);
    $("leak-range").textContent = shown.length
      ? (from + 1).toLocaleString() + "\u2013" + Math.min(from + PAGE, shown.length).toLocaleString() + " of " + shown.length.toLocaleString()
      : "none";
    $("leak-prev").disabled = leakState.page === 0;
    $("leak-next").disabled = leakState.page >= pages - 1;
    $("leak-pager").hidden = shown.length <= PAGE;
    $("leak-count").textContent = (leakState.text || leakState.probe)
      ? shown.length.toLocaleString() + " of " + LEAKS.length.toLocaleString() + " leaks" : "";
  }

  function sortValue(r, col) {
    var v = r[col];
    return typeof v === "number" ? v : String(v).toLowerCase();
  }

  if (leakTable) {
    leakTable.querySelectorAll("th button[data-sort]").forEach(function (button) {
      button.addEventListener("click", function () {
        var col = Number(button.getAttribute("data-sort"));
        var dir = button.getAttribute("data-dir") === "asc" ? "desc" : "asc";
        leakTable.querySelectorAll("th button").forEach(function (x) { x.removeAttribute("data-dir"); });
        button.setAttribute("data-dir", dir);
        var sign = dir === "asc" ? 1 : -1;
        var order = LEAKS.map(function (_, i) { return i; });
        order.sort(function (a, b) {
          var x = sortValue(LEAKS[a], col), y = sortValue(LEAKS[b], col);
          return x < y ? -sign : (x > y ? sign : a - b);
        });
        leakState.order = order;
        leakState.page = 0;
        renderLeaks();
      });
    });
    var applyLeakFilter = function () {
      leakState.text = ($("leak-filter").value || "").trim().toLowerCase();
      leakState.probe = $("leak-probe").value;
      leakState.page = 0;
      renderLeaks();
    };
    $("leak-form").addEventListener("submit", function (ev) { ev.preventDefault(); applyLeakFilter(); });
    $("leak-filter").addEventListener("input", debounce(applyLeakFilter, 120));
    $("leak-probe").addEventListener("change", applyLeakFilter);
    $("leak-prev").addEventListener("click", function () { leakState.page--; renderLeaks(); });
    $("leak-next").addEventListener("click", function () { leakState.page++; renderLeaks(); });
    renderLeaks();
  }

  /* ---- copy buttons: the Clipboard API, or a selected textarea where it is unavailable ---- */
  function fallbackCopy(text) {
    var ta = el("textarea", "offscreen");
    ta.value = text;
    ta.setAttribute("readonly", "");
    document.body.appendChild(ta);
    ta.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(ta);
    return ok;
  }

  function copyText(text) {
    if (navigator.clipboard && navigator.clipboard.writeText) {
      return navigator.clipboard.writeText(text).then(
        function () { return true; },
        function () { return fallbackCopy(text); });
    }
    return Promise.resolve(fallbackCopy(text));
  }

  function selectText(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }

  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = $(button.getAttribute("data-copy"));
      if (!source) { return; }
      copyText(source.textContent).then(function (ok) {
        if (!ok) { selectText(source); }
        button.textContent = ok ? "Copied" : "Press Ctrl+C";
        setTimeout(function () { button.textContent = "Copy"; }, 2000);
      });
    });
  });

  /* ---- any element naming a test opens its diff ---- */
  document.addEventListener("click", function (ev) {
    var target = ev.target && ev.target.closest ? ev.target.closest("[data-test]") : null;
    if (target) { ev.preventDefault(); openTest(target.getAttribute("data-test")); }
  });

  var hash = window.location.hash;
  if (hash.indexOf("#test=") === 0) { openTest(decodeURIComponent(hash.slice(6)), true); }
})();
