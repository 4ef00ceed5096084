import ATSPolicy
import ProxyCore

/// The admin listener's live page: one self-contained document (no external assets; its script and
/// style are inline and its Content-Security-Policy allows nothing else) that shows the recent
/// decisions embedded in it at once, then follows `/events`.
enum LivePage {
    static let headers = [
        ("Content-Security-Policy",
         "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'"),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
    ]

    /// The totals by app, action and reason (from the counters, so older than the kept records
    /// too), the inspected handshakes by app and key exchange, the kept records, and the number of
    /// the last one the totals include.
    static func snapshot(metrics: LoopMetrics, entries: [LiveFeed.Entry], through: Int) -> String {
        let counts = metrics.decisions.sorted { ($0.key.app, $0.key.action, $0.key.reason) < ($1.key.app, $1.key.action, $1.key.reason) }
            .map { key, count -> JSONValue in
                .object([("app", .string(key.app)), ("action", .string(key.action)), ("reason", .string(key.reason)),
                         ("enforced", .bool(key.enforced)), ("count", .int(count))])
            }
        let recent = entries.map { entry -> JSONValue in
            guard case .object(var fields) = entry.record.json(policy: entry.policy) else { return .null }
            fields.append(("seq", .int(entry.sequence)))
            return .object(fields)
        }
        let keyExchanges = metrics.keyExchanges.sorted { $0.key < $1.key }.map { key, count -> JSONValue in
            .object([("app", .string(key.app)), ("group", .string(key.groupName)),
                     ("pq_offered", .bool(key.postQuantumOffered)), ("count", .int(count))])
        }
        return JSONValue.object([("through", .int(through)), ("counts", .array(counts)),
                                 ("key_exchange", .array(keyExchanges)),
                                 ("pq_groups", .array(KeyExchangeFacts.postQuantumGroupNames.map(JSONValue.string))),
                                 ("recent", .array(recent))]).compact
    }

    /// The page with `snapshot` embedded (`</` escaped so no value can end the script element).
    static func html(snapshot: String) -> String {
        page.replacing("@SNAPSHOT@", with: snapshot.replacing("</", with: "<\\/"))
    }

    private static let page = #"""
    <!DOCTYPE html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>atsgate live</title>
    <style>
    :root { --bg:#f6f7f9; --card:#fff; --ink:#1d2330; --muted:#687084; --line:#e3e6ec;
            --allow:#1f8f4e; --block:#c62f2f; --upgrade:#2a64c5; --error:#b7791f; }
    * { box-sizing: border-box; }
    body { margin:0; font:14px/1.4 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; background:var(--bg); color:var(--ink); }
    header { display:flex; align-items:center; gap:16px; padding:12px 20px; background:#1d2330; color:#fff; }
    header h1 { font-size:18px; margin:0; font-weight:600; }
    header .status { font-size:12px; color:#c9cfdb; }
    header .status::before { content:"\25CF "; color:#888; }
    header .status.live::before { color:#3ecf7a; }
    header label { margin-left:auto; font-size:13px; }
    select { font:inherit; padding:3px 6px; border-radius:4px; border:1px solid #555; }
    main { display:grid; grid-template-columns: minmax(360px, 1fr) 1.6fr; gap:16px; padding:16px 20px; }
    section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:12px 14px; min-width:0; }
    section h2 { font-size:13px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); margin:0 0 8px; }
    .wide { grid-column: 1 / -1; }
    table { width:100%; border-collapse:collapse; font-size:13px; }
    th, td { text-align:left; padding:4px 6px; border-bottom:1px solid var(--line); vertical-align:top; }
    th { color:var(--muted); font-weight:600; }
    td.num, th.num { text-align:right; font-variant-numeric: tabular-nums; }
    td.mono, div.mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size:12px; overflow-wrap:anywhere; }
    #byApp td.mono { white-space:nowrap; }
    .tag { display:inline-block; padding:0 6px; border-radius:9px; font-size:12px; color:#fff; }
    .allow { background:var(--allow); } .block { background:var(--block); }
    .upgrade { background:var(--upgrade); } .error { background:var(--error); }
    .blocks li { margin:0 0 8px; padding-left:8px; border-left:3px solid var(--block); list-style:none; }
    .blocks ul { padding:0; margin:0; }
    .blocks .meta { color:var(--muted); font-size:12px; }
    .empty { color:var(--muted); font-style:italic; }
    tr.fresh td { background:#fff8dc; }
    .totals { display:flex; gap:10px; flex-wrap:wrap; margin-bottom:8px; }
    .totals div { flex:1; min-width:70px; border-radius:6px; padding:6px 8px; color:#fff; }
    .totals b { display:block; font-size:20px; }
    </style>
    </head>
    <body>
    <header>
      <h1>atsgate &middot; live decisions</h1>
      <span id="status" class="status">connecting</span>
      <label>App <select id="app"><option value="">all apps</option></select></label>
    </header>
    <main>
      <section>
        <h2>Totals</h2>
        <div class="totals" id="totals"></div>
        <h2>By app</h2>
        <table id="byApp"><thead><tr><th>app</th><th class="num">allow</th><th class="num">block</th><th class="num">upgrade</th><th class="num">error</th></tr></thead><tbody></tbody></table>
        <h2 style="margin-top:12px">By reason</h2>
        <table id="byReason"><thead><tr><th>action</th><th>reason</th><th class="num">count</th></tr></thead><tbody></tbody></table>
      </section>
      <section class="blocks">
        <h2>Latest blocks</h2>
        <ul id="blocks"></ul>
      </section>
      <section class="wide">
        <h2>Post-quantum key exchange <span class="meta">(iOS 26 and macOS 26 offer X25519MLKEM768 in every TLS 1.3 ClientHello)</span></h2>
        <table id="pqByApp"><thead><tr><th>app</th><th class="num">TLS handshakes</th><th class="num">post-quantum offered</th><th class="num">answered post-quantum</th><th class="num">answered classically</th><th class="num">post-quantum share</th></tr></thead><tbody></tbody></table>
        <div class="meta">Of the handshakes whose client offered a post-quantum group, the share whose server chose one. A classical answer can be recorded now and decrypted once quantum computers exist; TLS 1.2 is always classical.</div>
      </section>
      <section class="wide">
        <h2>Decisions <span id="shown" class="meta"></span></h2>
        <table id="decisions"><thead><tr><th>time</th><th>app</th><th>route</th><th>user</th><th>method</th><th>destination</th><th>action</th><th>reason</th></tr></thead><tbody></tbody></table>
      </section>
    </main>
    <script id="snapshot" type="application/json">@SNAPSHOT@</script>
    <script>
    "use strict";
    const ACTIONS = ["allow", "block", "upgrade", "error"];
    const KEEP = 500;
    const snapshot = JSON.parse(document.getElementById("snapshot").textContent);
    const counts = new Map();   // "app\u0000action\u0000reason" -> count
    let records = [];
    let through = snapshot.through;
    const params = new URLSearchParams(location.search);
    let filter = params.get("app") || "";

    function countKey(app, action, reason) { return [app, action, reason].join("\u0000"); }
    function addCount(app, action, reason, n) {
      const key = countKey(app || "", action, reason || "");
      counts.set(key, (counts.get(key) || 0) + n);
    }
    for (const c of snapshot.counts) addCount(c.app, c.action, c.reason, c.count);
    // Inspected handshakes: "app\u0000group\u0000offered" -> count.
    const pqGroups = new Set(snapshot.pq_groups);
    const exchanges = new Map();
    function addExchange(app, group, offered, n) {
      const key = [app || "", group || "", offered ? "1" : ""].join("\u0000");
      exchanges.set(key, (exchanges.get(key) || 0) + n);
    }
    for (const k of snapshot.key_exchange) addExchange(k.app, k.group, k.pq_offered, k.count);
    records = snapshot.recent.slice(-KEEP);

    function el(tag, text, cls) {
      const node = document.createElement(tag);
      if (text !== undefined && text !== null) node.textContent = String(text);
      if (cls) node.className = cls;
      return node;
    }
    function destination(r) {
      if (!r.host) return "-";
      const host = r.host.includes(":") ? "[" + r.host + "]" : r.host;
      return (r.scheme ? r.scheme + "://" : "") + host + (r.port ? ":" + r.port : "");
    }
    function timeOf(r) { return (r.time || "").replace("T", " ").replace("Z", ""); }
    function matches(app) { return !filter || app === filter; }

    let pending = false;
    // A microtask, not a timer: one render per batch of events, even where timers are held (a
    // headless browser's virtual time stands still while the stream is open).
    function schedule() { if (!pending) { pending = true; queueMicrotask(render); } }

    function render() {
      pending = false;
      const apps = new Set();
      const perApp = new Map(), perReason = new Map(), totals = {allow:0, block:0, upgrade:0, error:0};
      for (const [key, n] of counts) {
        const [app, action, reason] = key.split("\u0000");
        if (app) apps.add(app);
        if (!matches(app)) continue;
        totals[action] = (totals[action] || 0) + n;
        const row = perApp.get(app) || {allow:0, block:0, upgrade:0, error:0};
        row[action] = (row[action] || 0) + n;
        perApp.set(app, row);
        if (reason) {
          const rk = action + "\u0000" + reason;
          perReason.set(rk, (perReason.get(rk) || 0) + n);
        }
      }
      for (const r of records) if (r.app) apps.add(r.app);

      const select = document.getElementById("app");
      const known = new Set(Array.from(select.options).map(o => o.value));
      for (const app of Array.from(apps).sort()) if (!known.has(app)) select.appendChild(new Option(app, app));
      if (filter && !known.has(filter) && !apps.has(filter)) select.appendChild(new Option(filter, filter));
      select.value = filter;

      const totalsBox = document.getElementById("totals");
      totalsBox.replaceChildren(...ACTIONS.map(a => { const d = el("div", null, a); d.appendChild(el("b", totals[a] || 0)); d.appendChild(document.createTextNode(a)); return d; }));

      const appBody = document.querySelector("#byApp tbody");
      const appRows = Array.from(perApp.entries()).sort((a, b) => a[0].localeCompare(b[0]));
      appBody.replaceChildren(...appRows.map(([app, row]) => {
        const tr = el("tr"); tr.appendChild(el("td", app || "(none)", "mono"));
        for (const a of ACTIONS) tr.appendChild(el("td", row[a] || 0, "num"));
        return tr;
      }));
      if (!appRows.length) appBody.appendChild(emptyRow(5, "no decisions yet"));

      const reasonBody = document.querySelector("#byReason tbody");
      const reasonRows = Array.from(perReason.entries()).sort((a, b) => b[1] - a[1]);
      reasonBody.replaceChildren(...reasonRows.map(([key, n]) => {
        const [action, reason] = key.split("\u0000");
        const tr = el("tr"); const td = el("td"); td.appendChild(el("span", action, "tag " + action));
        tr.appendChild(td); tr.appendChild(el("td", reason, "mono")); tr.appendChild(el("td", n, "num"));
        return tr;
      }));
      if (!reasonRows.length) reasonBody.appendChild(emptyRow(3, "no reasons yet"));

      const pqRows = new Map();
      for (const [key, n] of exchanges) {
        const [app, group, offered] = key.split("\u0000");
        if (!matches(app)) continue;
        const row = pqRows.get(app) || {tls:0, offered:0, pq:0, classical:0};
        row.tls += n;
        if (offered) {
          row.offered += n;
          if (pqGroups.has(group)) row.pq += n; else if (group) row.classical += n;
        }
        pqRows.set(app, row);
      }
      const pqBody = document.querySelector("#pqByApp tbody");
      const pqSorted = Array.from(pqRows.entries()).sort((a, b) => a[0].localeCompare(b[0]));
      pqBody.replaceChildren(...pqSorted.map(([app, row]) => {
        const tr = el("tr", null, "pq-app"); tr.dataset.app = app;
        tr.appendChild(el("td", app || "(none)", "mono"));
        for (const n of [row.tls, row.offered, row.pq, row.classical]) tr.appendChild(el("td", n, "num"));
        const share = row.offered ? Math.round(100 * row.pq / row.offered) + "%" : "-";
        const cell = el("td", share, "num share"); tr.appendChild(cell);
        return tr;
      }));
      if (!pqSorted.length) pqBody.appendChild(emptyRow(6, "no inspected TLS handshakes yet"));

      const shown = records.filter(r => matches(r.app));
      const blocks = shown.filter(r => r.action === "block").slice(-20).reverse();
      const list = document.getElementById("blocks");
      list.replaceChildren(...blocks.map(r => {
        const li = el("li", null, "block-item");
        li.appendChild(el("div", (r.reason || "block") + (r.host ? " \u2014 " + destination(r) : ""), "mono"));
        li.appendChild(el("div", r.message || ""));
        li.appendChild(el("div", timeOf(r) + " \u00b7 " + (r.app || "no app") + (r.proxy_user ? " \u00b7 " + r.proxy_user : ""), "meta"));
        return li;
      }));
      if (!blocks.length) list.appendChild(el("li", "no blocks", "empty"));

      const body = document.querySelector("#decisions tbody");
      const rows = shown.slice(-200).reverse();
      body.replaceChildren(...rows.map(r => {
        // Arrived while the page was open (marked so the eye finds the new ones).
        const tr = el("tr", null, r.fresh ? "decision fresh" : "decision");
        tr.dataset.app = r.app || "";
        tr.appendChild(el("td", timeOf(r), "mono"));
        tr.appendChild(el("td", r.app || "-", "mono"));
        tr.appendChild(el("td", r.route || "-"));
        tr.appendChild(el("td", r.proxy_user || "-"));
        tr.appendChild(el("td", r.method || "-"));
        tr.appendChild(el("td", destination(r), "mono"));
        const action = el("td"); action.appendChild(el("span", r.action, "tag " + r.action)); tr.appendChild(action);
        const reason = el("td", r.reason || "", "mono"); reason.title = r.message || ""; tr.appendChild(reason);
        return tr;
      }));
      if (!rows.length) body.appendChild(emptyRow(8, "no decisions yet"));
      document.getElementById("shown").textContent = "(" + rows.length + " most recent" + (filter ? " for " + filter : "") + ")";
    }
    function emptyRow(span, text) { const tr = el("tr"); const td = el("td", text, "empty"); td.colSpan = span; tr.appendChild(td); return tr; }

    document.getElementById("app").addEventListener("change", e => {
      filter = e.target.value;
      const url = new URL(location.href);
      if (filter) url.searchParams.set("app", filter); else url.searchParams.delete("app");
      history.replaceState(null, "", url);
      render();
    });

    render();
    const status = document.getElementById("status");
    // ?stream=SECONDS (the admin's choice) ends each event stream after that long; the browser
    // reconnects and resumes after the last record it has.
    const stream = params.get("stream");
    const source = new EventSource("events?after=" + through + (stream ? "&max=" + encodeURIComponent(stream) : ""));
    source.onopen = () => { status.textContent = "live"; status.className = "status live"; };
    source.onerror = () => { status.textContent = "reconnecting"; status.className = "status"; };
    source.onmessage = e => {
      const r = JSON.parse(e.data);
      const id = Number(e.lastEventId);
      if (id <= through) return;
      through = id;
      addCount(r.app, r.action, r.reason, 1);
      if (typeof r.pq_offered === "boolean") addExchange(r.app, r.key_exchange, r.pq_offered, 1);
      r.fresh = true;
      records.push(r);
      if (records.length > KEEP) records = records.slice(-KEEP);
      schedule();
    };
    </script>
    </body>
    </html>
    """#
}
