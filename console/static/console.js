// switchover console: confirmations for actions, and the overview kept
// current over Server-Sent Events. No framework; CSP allows this file
// only (no inline scripts or styles).
"use strict";

(function () {
  const dialog = document.getElementById("confirm");

  // ask shows the confirmation dialog and calls ok if confirmed.
  function ask(text, ok) {
    if (!dialog || typeof dialog.showModal !== "function") {
      if (window.confirm(text)) ok();
      return;
    }
    document.getElementById("confirm-text").textContent = text;
    dialog.returnValue = "";
    dialog.onclose = function () {
      if (dialog.returnValue === "ok") ok();
    };
    dialog.showModal();
    document.getElementById("confirm-cancel").focus();
  }

  // memberText says what a priority/weight form will do.
  function memberText(form) {
    const p = form.elements.priority.value.trim();
    const w = form.elements.weight.value.trim();
    const parts = [];
    if (p) parts.push("priority " + p);
    if (w) parts.push("weight " + w);
    if (!parts.length) return "";
    return "Set " + form.dataset.confirmMember + " in pool " + form.dataset.pool + " to " + parts.join(", ") +
      " until reset (it survives reloads; Reset undoes it).";
  }

  document.addEventListener("submit", function (ev) {
    const form = ev.target;
    if (!form.classList || !form.classList.contains("act")) return;
    ev.preventDefault();
    let text = form.dataset.confirm || "";
    if (form.dataset.confirmMember !== undefined) {
      text = memberText(form);
      if (!text) {
        form.elements.priority.focus();
        return;
      }
    }
    if (!form.elements.back) {
      const back = document.createElement("input");
      back.type = "hidden";
      back.name = "back";
      back.value = location.pathname + location.search;
      form.appendChild(back);
    }
    ask(text, function () { form.submit(); });
  });

  if (document.body.dataset.page !== "overview") return;

  const overview = document.getElementById("overview");
  const live = document.getElementById("live");
  const svgNS = "http://www.w3.org/2000/svg";

  function set(row, field, text) {
    const el = row.querySelector('[data-f="' + field + '"]');
    if (el && el.textContent !== text) el.textContent = text;
  }
  function pct(f) { return f === undefined || f === null ? "–" : Math.round(f * 100) + "%"; }
  function ms(f) { return f === undefined || f === null ? "–" : Math.round(f) + " ms"; }
  function when(s) {
    if (!s) return "";
    return s.replace("T", " ").replace(/\.\d+/, "").replace(/(\+00:00|Z)$/, "Z");
  }

  // drawChart draws a pool's attempts per second by backend as lines.
  function drawChart(svg, legend, chart) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const W = 600, H = 120, top = Math.max(chart.max, 1);
    const axis = document.createElementNS(svgNS, "line");
    axis.setAttribute("x1", "0"); axis.setAttribute("x2", String(W));
    axis.setAttribute("y1", String(H - 0.5)); axis.setAttribute("y2", String(H - 0.5));
    axis.setAttribute("class", "axis");
    svg.appendChild(axis);
    chart.series.forEach(function (s, i) {
      const n = s.points.length;
      if (n === 0) return;
      const pts = s.points.map(function (v, j) {
        const x = n === 1 ? W : (j * W) / (n - 1);
        const y = H - 2 - (v / top) * (H - 6);
        return x.toFixed(1) + "," + y.toFixed(1);
      });
      const line = document.createElementNS(svgNS, "polyline");
      line.setAttribute("points", pts.join(" "));
      line.setAttribute("class", "s" + (i % 8));
      line.setAttribute("data-backend", s.backend);
      svg.appendChild(line);
    });
    svg.dataset.drawn = String(chart.end);
    svg.dataset.points = String(chart.series.length ? chart.series[0].points.length : 0);
    if (legend) {
      while (legend.firstChild) legend.removeChild(legend.firstChild);
      const span = (chart.end - chart.start) / 1000;
      const last = span < 120 ? Math.round(span) + " s" : Math.round(span / 60) + " min";
      legend.appendChild(document.createTextNode("attempts/s by backend, last " + last + " (max " + chart.max.toFixed(1) + "/s): "));
      chart.series.forEach(function (s, i) {
        const k = document.createElement("span");
        k.className = "key k" + (i % 8);
        k.textContent = s.backend;
        legend.appendChild(k);
        legend.appendChild(document.createTextNode(" "));
      });
    }
  }

  function update(v) {
    if (v.shape !== overview.dataset.shape) {
      location.reload(); // the configuration changed: pools or members differ
      return;
    }
    document.getElementById("at").textContent = when(v.at);
    v.pools.forEach(function (p) {
      const sec = overview.querySelector('section[data-pool="' + CSS.escape(p.name) + '"]');
      if (!sec) return;
      const none = !(p.active && p.active.length);
      set(sec, "active", none ? "none: no member can take requests" : p.active.join(", "));
      set(sec, "since", !p.active_since ? "" : p.active_since_start ?
        "since start (" + when(p.active_since) + "; earlier unknown)" : "since " + when(p.active_since));
      const as = sec.querySelector('[data-f="activeset"]');
      if (as) as.classList.toggle("alarm", none);
      p.members.forEach(function (m) {
        const row = sec.querySelector('tr[data-member="' + CSS.escape(p.name + "/" + m.backend) + '"]');
        if (!row) return;
        row.className = "member state-" + m.breaker + (m.drained ? " drained" : "") + (m.overridden ? " overridden" : "") + (m.active ? " active" : "");
        set(row, "priority", String(m.priority));
        set(row, "weight", String(m.weight));
        set(row, "breaker", m.breaker);
        set(row, "left", m.left || "");
        set(row, "why", m.why || "");
        set(row, "in_flight", String(m.in_flight));
        set(row, "rps", String(m.rps));
        set(row, "err", pct(m.err_share));
        set(row, "p95", ms(m.p95_ms));
        set(row, "headroom", pct(m.headroom));
        set(row, "probe", m.probe || "");
        set(row, "flags", (m.active ? "active " : "") + (m.drained ? "drained " : "") + (m.overridden ? "overridden" : ""));
      });
      drawChart(sec.querySelector("svg[data-chart]"), sec.querySelector("[data-legend]"), p.chart);
    });
  }

  // stale says, in a banner over the page, that what it shows is old:
  // the stream is down (the admin listener does not answer) or has sent
  // nothing for a while. A view received takes the banner down.
  const staleBanner = document.getElementById("stale");
  let lastView = Date.now();
  function stale(on) {
    if (!staleBanner) return;
    if (on && staleBanner.hidden) document.getElementById("stale-at").textContent = document.getElementById("at").textContent;
    staleBanner.hidden = !on;
    overview.classList.toggle("stale", on);
  }
  setInterval(function () { if (Date.now() - lastView > 5000) stale(true); }, 1000);

  let es;
  // Once the page is being left (a sign-out's form post, a link), the
  // stream's end is not news: navigating to the login page from it would
  // abort the navigation under way (the sign-out's own redirect).
  let leaving = false;
  window.addEventListener("beforeunload", function () { leaving = true; if (es) es.close(); });
  // A page brought back from the back-forward cache has its stream closed.
  window.addEventListener("pageshow", function (e) { if (e.persisted) location.reload(); });
  function toLogin() { if (!leaving) { es.close(); location.href = "/console/login"; } }
  function connect() {
    es = new EventSource("/console/stream");
    es.addEventListener("open", function () { live.textContent = "live"; live.className = "live on"; });
    es.addEventListener("view", function (e) { lastView = Date.now(); stale(false); update(JSON.parse(e.data)); });
    es.addEventListener("signedout", toLogin);
    es.addEventListener("error", function () {
      if (leaving) return;
      live.textContent = "reconnecting…";
      live.className = "live off";
      stale(true);
      // A stream refused for want of a session does not come back.
      fetch("/console/api/view", { credentials: "same-origin" }).then(function (r) {
        if (r.status === 401) toLogin();
      }).catch(function () {});
    });
  }
  connect();
})();
