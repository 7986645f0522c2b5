// The page's cursor: ← → (or the slider) move over the steps; the panes
// show the coordinator row, the messages in flight and the resource after
// the moves made; a move chosen in the diagram or the list shows its SQL,
// arguments, command tag, HTTP call and narration. Everything comes from
// the transcript embedded in the page; nothing is fetched.
(function () {
  "use strict";
  var tr = JSON.parse(document.getElementById("leaserace-transcript").textContent);
  var steps = tr.steps || [];
  var n = steps.length;
  var labelW = 64, colW = 100; // as the SVG's geometry (svg.go)
  var pos = n;
  var selected = n > 0 ? n - 1 : -1;
  var slider = document.getElementById("slider");
  var where = document.getElementById("where");
  var cursor = document.getElementById("cursor");
  var marks = document.querySelectorAll("#lanes .mark");
  var msgs = document.querySelectorAll("#lanes .msg");
  var items = document.querySelectorAll("#steps li.step");

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function value(v) {
    if (v === null || v === undefined || v === "") return "none";
    return typeof v === "string" ? v : JSON.stringify(v);
  }
  function fill(id, nodes) {
    var body = document.querySelector("#" + id + " .body");
    body.replaceChildren.apply(body, nodes);
  }
  function leaseWords(l) {
    if (!l) return "no row: nobody holds the lease";
    return "owner " + l.owner + " · fence " + l.fence + " · lease_version " + l.lease_version + " · expires_at " + l.expires_at;
  }
  function stateAt(p) {
    if (p === 0) {
      return {
        coord: tr.initial.coordinator,
        flight: [],
        res: { fence: tr.initial.resource.fence, value: tr.initial.resource.value, effects: [] },
      };
    }
    var s = steps[p - 1];
    return { coord: s.coordinator, flight: s.in_flight || [], res: s.resource };
  }
  function effectLine(e) {
    var words = e.actor + " fence " + e.fence + ": " + (e.accepted ? "accepted" : "refused");
    var li = el("li", null);
    var glyph = e.accepted ? "✓ " : "✗ ";
    if (e.judgement === "conflict") { glyph = "! "; words += " but stale (CONFLICT)"; li.className = "danger-text"; }
    if (e.judgement === "blocked") { glyph = "⊘ "; words += ": a valid write, BLOCKED"; li.className = "danger-text"; }
    li.textContent = glyph + words + (e.reason ? " (" + e.reason + ")" : "");
    return li;
  }
  function verdictAt(res) {
    var eff = res.effects || [];
    for (var i = 0; i < eff.length; i++) if (eff[i].judgement === "conflict") return "CONFLICT";
    for (var j = 0; j < eff.length; j++) if (eff[j].judgement === "blocked") return "BLOCKED";
    return "SAFE so far";
  }
  function panes() {
    var st = stateAt(pos);
    fill("pane-coord", [el("p", leaseWords(st.coord))]);
    var fl = [];
    if (st.flight.length === 0) fl.push(el("p", "nothing in flight"));
    else {
      var ul = el("ul");
      st.flight.forEach(function (m) {
        var what = m.kind === "write" ? "write, fence " + m.fence : m.kind === "reply" ? "reply" : "heartbeat";
        var text = m.id + " from " + m.from + " (" + what + ", carries fence " + m.snapshot.fence + ", lease_version " + m.snapshot.lease_version + "), sent " + m.sent + ", " + (m.due < 0 ? "lost: never arrives" : "due " + m.due);
        var li = el("li", text + (m.stale ? " · STALE" + (m.stale_reason ? ": " + m.stale_reason : "") : ""));
        if (m.stale) li.className = "danger-text";
        ul.appendChild(li);
      });
      fl.push(ul);
    }
    fill("pane-flight", fl);
    var res = st.res;
    var eff = res.effects || [];
    // The highest fence accepted: the initial one and every accepted
    // write's; the stored fence is named apart only where it fell below.
    var high = tr.initial.resource.fence;
    eff.forEach(function (e) { if (e.accepted && e.fence > high) high = e.fence; });
    var r = [el("p", "the resource's highest fence accepted: " + high)];
    if (res.fence !== high) r.push(el("p", "⚠ regressed: stored fence " + res.fence));
    r.push(el("p", "value: " + value(res.value)));
    r.push(el("p", eff.length + (eff.length === 1 ? " effect" : " effects") + " · " + verdictAt(res)));
    if (eff.length) { var ul2 = el("ul"); eff.forEach(function (e) { ul2.appendChild(effectLine(e)); }); r.push(ul2); }
    fill("pane-resource", r);
  }
  function detail() {
    if (selected < 0 || selected >= n) { fill("detail", [el("p", "No move chosen.")]); return; }
    var s = steps[selected];
    var li = items[selected];
    var kind = li ? li.querySelector(".words").textContent : s.result;
    var nodes = [el("p", "Move " + (selected + 1) + " of " + n + " at t=" + s.t + ": " + (li ? li.getAttribute("data-move") : s.actor + " " + s.action))];
    nodes.push(el("p", "result: " + (s.result || "") + " · " + kind));
    if (s.sql) {
      nodes.push(el("h3", "SQL"));
      nodes.push(el("pre", s.sql));
      nodes.push(el("p", "arguments: " + JSON.stringify(s.args || [])));
      nodes.push(el("p", "command tag: " + s.tag + " (" + s.rows + (s.rows === 1 ? " row" : " rows") + ")", "tag"));
    } else {
      nodes.push(el("p", "no SQL: this move ran no statement"));
    }
    if (s.call) {
      nodes.push(el("p", "HTTP: " + s.call.method + " " + s.call.path + " → " + s.call.status + (s.call.accepted ? " accepted" : " refused") + (s.call.reason ? " (" + s.call.reason + ")" : ""), "call"));
    }
    nodes.push(el("p", s.note, "note"));
    fill("detail", nodes);
  }
  function render() {
    slider.value = String(pos);
    var x = labelW + pos * colW;
    cursor.setAttribute("x1", x);
    cursor.setAttribute("x2", x);
    marks.forEach(function (m) {
      var i = Number(m.getAttribute("data-step"));
      m.classList.toggle("future", i >= pos);
      m.classList.toggle("selected", i === selected);
    });
    msgs.forEach(function (m) {
      m.classList.toggle("future", Number(m.getAttribute("data-from")) >= pos);
    });
    items.forEach(function (li, i) {
      li.classList.toggle("future", i >= pos);
      li.classList.toggle("selected", i === selected);
    });
    var t = pos === 0 ? "before the first move" : "after move " + pos + " of " + n + ", t=" + steps[pos - 1].t;
    where.textContent = t;
    panes();
    detail();
  }
  function go(p, sel) {
    pos = Math.max(0, Math.min(n, p));
    selected = sel === undefined ? pos - 1 : sel;
    render();
  }
  function choose(i) { go(i + 1, i); }

  document.getElementById("first").addEventListener("click", function () { go(0); });
  document.getElementById("prev").addEventListener("click", function () { go(pos - 1); });
  document.getElementById("next").addEventListener("click", function () { go(pos + 1); });
  document.getElementById("last").addEventListener("click", function () { go(n); });
  var danger = document.getElementById("danger");
  function jumpDanger() {
    var d = Number(danger.getAttribute("data-step"));
    if (d < 0) return;
    choose(d);
    var m = document.querySelector('#lanes .mark[data-step="' + d + '"]');
    if (m) { m.focus(); if (m.scrollIntoView) m.scrollIntoView({ block: "nearest", inline: "center" }); }
  }
  danger.addEventListener("click", jumpDanger);
  slider.addEventListener("input", function () { go(Number(slider.value)); });
  marks.forEach(function (m) {
    var i = Number(m.getAttribute("data-step"));
    m.addEventListener("click", function () { choose(i); });
    m.addEventListener("focus", function () { if (selected !== i || pos !== i + 1) choose(i); });
    m.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); choose(i); }
    });
  });
  document.querySelectorAll("#steps button[data-step]").forEach(function (b) {
    b.addEventListener("click", function () { choose(Number(b.getAttribute("data-step"))); });
  });
  document.addEventListener("keydown", function (e) {
    if (e.target === slider || e.altKey || e.ctrlKey || e.metaKey) return;
    switch (e.key) {
      case "ArrowLeft": go(pos - 1); break;
      case "ArrowRight": go(pos + 1); break;
      case "Home": go(0); break;
      case "End": go(n); break;
      case "d": jumpDanger(); break;
      default: return;
    }
    e.preventDefault();
  });
  render();
})();
