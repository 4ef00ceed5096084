import ATSPolicy
import DecisionLog
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

    /// The records embedded in the page: its first screen, grouped (the stream brings the rest).
    static let embedded = 500

    /// The totals by app, device, action, reason and enforcement (of every record the feed numbered, up to
    /// `through`), the inspected handshakes by app and key exchange, the mode new connections get,
    /// the records given, and, for a `counts` event after a gap, how many records the stream skipped.
    static func snapshot(_ snapshot: LiveFeed.Snapshot, mode: ProxyMode, skipped: Int? = nil) -> String {
        let counts = snapshot.totals.decisions
            .sorted { $0.key < $1.key }
            .map { key, count -> JSONValue in
                .object([("app", .string(key.app))] + device(key.device)
                        + [("action", .string(key.action)), ("reason", .string(key.reason)), ("enforced", .bool(key.enforced)),
                           ("count", .int(count))])
            }
        let recent = snapshot.entries.map { entry -> JSONValue in
            guard case .object(var fields) = entry.record.json(policy: entry.policy) else { return .null }
            fields.append(("seq", .int(entry.sequence)))
            return .object(fields)
        }
        let keyExchanges = snapshot.totals.keyExchanges.sorted { $0.key < $1.key }.map { key, count -> JSONValue in
            .object([("app", .string(key.app))] + device(key.device) + [("group", .string(key.groupName)),
                     ("pq_offered", .bool(key.postQuantumOffered)), ("count", .int(count))])
        }
        var fields: [(String, JSONValue)] = [("through", .int(snapshot.through)), ("mode", .string(mode.rawValue)),
                                             ("counts", .array(counts)), ("key_exchange", .array(keyExchanges)),
                                             ("pq_groups", .array(KeyExchangeFacts.postQuantumGroupNames.map(JSONValue.string))),
                                             ("recent", .array(recent))]
        if let skipped { fields.append(("skipped", .int(skipped))) }
        return JSONValue.object(fields).compact
    }

    /// A count's `device` field: left out when no --device matched (the page reads it as ""), so a
    /// proxy without devices sends what it sent before.
    private static func device(_ name: String) -> [(String, JSONValue)] {
        name.isEmpty ? [] : [("device", .string(name))]
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
    header { display:flex; align-items:center; gap:16px; padding:12px 20px; background:#1d2330; color:#fff; flex-wrap:wrap; }
    header h1 { font-size:18px; margin:0; font-weight:600; }
    header .status { font-size:12px; color:#c9cfdb; font-variant-numeric: tabular-nums; }
    header .status::before { content:"\25CF "; color:#888; }
    header .status.live::before { color:#3ecf7a; }
    header .mode { font-size:12px; padding:1px 8px; border-radius:9px; border:1px dashed #ff9b9b; color:#ffd0d0; }
    header .mode[hidden] { display:none; }
    header .filters { margin-left:auto; display:flex; gap:12px; }
    header label { font-size:13px; }
    select { font:inherit; padding:3px 6px; border-radius:4px; border:1px solid #555; }
    main { display:grid; grid-template-columns: minmax(360px, 1fr) 1.6fr; gap:16px; padding:16px 20px; }
    section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:12px 14px; min-width:0; }
    section h2 { font-size:13px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); margin:0 0 8px; }
    section h2 .meta { text-transform:none; letter-spacing:0; font-weight:normal; }
    .wide { grid-column: 1 / -1; }
    table { width:100%; border-collapse:collapse; font-size:13px; }
    th, td { text-align:left; padding:4px 6px; border-bottom:1px solid var(--line); vertical-align:top; }
    th { color:var(--muted); font-weight:600; }
    td.num, th.num { text-align:right; font-variant-numeric: tabular-nums; }
    td.mono, div.mono, span.mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size:12px; overflow-wrap:anywhere; }
    td.time { white-space:nowrap; font-variant-numeric: tabular-nums; color:var(--muted); }
    td.count { white-space:nowrap; font-weight:600; }
    #byApp td.mono { white-space:nowrap; }
    /* Fixed columns: a redraw that changes rows does not lay the whole table out again. */
    #decisions { table-layout:fixed; }
    #decisions col.time { width:84px; } #decisions col.times { width:76px; } #decisions col.app { width:17%; }
    #decisions col.action { width:112px; } #decisions col.reason { width:15%; } #decisions col.user { width:9%; }
    #decisions col.device { width:9%; }
    .tag { display:inline-block; padding:0 6px; border-radius:9px; font-size:12px; color:#fff; border:1px solid transparent; white-space:nowrap; }
    .allow { background:var(--allow); } .block { background:var(--block); }
    .upgrade { background:var(--upgrade); } .error { background:var(--error); }
    /* What report mode only recorded: the outline of a block (or an upgrade), never its fill. */
    .would-block { background:#fff; color:var(--block); border:1px dashed var(--block); }
    .would-upgrade { background:#fff; color:var(--upgrade); border:1px dashed var(--upgrade); }
    .blocks h2 + ul + h2 { margin-top:14px; }
    /* Many distinct blocks scroll inside their card rather than push the decisions off the screen. */
    .blocks { max-height:560px; overflow-y:auto; }
    .blocks ul { padding:0; margin:0; }
    .blocks li { margin:0 0 8px; padding-left:8px; border-left:3px solid var(--block); list-style:none; }
    .blocks li.would-block-item { border-left:3px dashed var(--block); }
    .blocks .meta { color:var(--muted); font-size:12px; }
    .blocks .times { font-weight:600; color:var(--ink); }
    .empty { color:var(--muted); font-style:italic; }
    .meta { color:var(--muted); font-size:12px; }
    tr.fresh td { background:#fff8dc; }
    .totals { display:flex; gap:10px; flex-wrap:wrap; margin-bottom:8px; }
    .totals div { flex:1; min-width:70px; border-radius:6px; padding:6px 8px; color:#fff; font-variant-numeric: tabular-nums; }
    .totals div.would-block, .totals div.would-upgrade { border-width:2px; padding:4px 6px; }
    .totals div.would-block { color:var(--block); } .totals div.would-upgrade { color:var(--upgrade); }
    .totals b { display:block; font-size:20px; }
    .totals span { font-size:12px; white-space:nowrap; }
    </style>
    </head>
    <body>
    <header>
      <h1>atsgate &middot; live decisions</h1>
      <span id="status" class="status">connecting</span>
      <span id="mode" class="mode" hidden>report mode: blocks are recorded, not enforced</span>
      <span class="filters">
        <label>App <select id="app" data-field="app"><option value="">all apps</option></select></label>
        <label>Device <select id="device" data-field="device"><option value="">all devices</option></select></label>
      </span>
    </header>
    <main>
      <section>
        <h2>Totals</h2>
        <div class="totals" id="totals"></div>
        <h2>By app</h2>
        <table id="byApp"><thead></thead><tbody></tbody></table>
        <h2 id="byDeviceTitle" style="margin-top:12px" hidden>By device</h2>
        <table id="byDevice" hidden><thead></thead><tbody></tbody></table>
        <h2 style="margin-top:12px">By reason</h2>
        <table id="byReason"><thead><tr><th>action</th><th>reason</th><th class="num">count</th></tr></thead><tbody></tbody></table>
      </section>
      <section class="blocks">
        <h2>Latest blocks</h2>
        <ul id="blocks"></ul>
        <h2 id="wouldBlocksTitle" hidden>Would block <span class="meta">(report mode let these through)</span></h2>
        <ul id="wouldBlocks" hidden></ul>
      </section>
      <section class="wide">
        <h2>Post-quantum key exchange <span class="meta">(iOS 26 and macOS 26 offer X25519MLKEM768 in every TLS 1.3 ClientHello)</span></h2>
        <table id="pqByApp"><thead><tr><th>app</th><th class="num">TLS handshakes</th><th class="num">post-quantum offered</th><th class="num">answered post-quantum</th><th class="num">answered classically</th><th class="num">post-quantum share</th></tr></thead><tbody></tbody></table>
        <div class="meta">Of the handshakes whose client offered a post-quantum group, the share whose server chose one. A classical answer can be recorded now and decrypted once quantum computers exist; TLS 1.2 is always classical.</div>
      </section>
      <section class="wide">
        <h2>Decisions <span class="meta">grouped by app, destination and reason, the most recent first; highlighted: joined in the last 5 s</span> <span id="shown" class="meta"></span></h2>
        <table id="decisions"><colgroup><col class="time"><col class="times"><col class="app"><col><col class="action"><col class="reason"><col class="user"><col class="device"><col class="time"></colgroup><thead><tr><th>last</th><th class="num">times</th><th>app</th><th>destination</th><th>action</th><th>reason</th><th>user</th><th>device</th><th>first</th></tr></thead><tbody></tbody></table>
      </section>
    </main>
    <script id="snapshot" type="application/json">@SNAPSHOT@</script>
    <script>
    "use strict";
    const snapshot = JSON.parse(document.getElementById("snapshot").textContent);
    const KINDS = ["allow", "block", "would-block", "upgrade", "would-upgrade", "error"];
    const LABELS = {"allow": "allow", "block": "block", "would-block": "would block", "upgrade": "upgrade",
                    "would-upgrade": "would upgrade", "error": "error"};
    // Bounds that keep the page light however fast decisions come: groups kept in memory (the least
    // recently seen go first), rows in the decisions table, entries in each list of blocks, and how
    // often what arrived is put on the page (events are only counted and queued as they come).
    const GROUPS_KEPT = 2000, ROWS = 200, LISTED = 20, FLUSH_MS = 250;
    // A row that a live decision joined stays highlighted this long, so the eye finds what is active.
    const FRESH_MS = 5000;
    const params = new URLSearchParams(location.search);

    // The filters: each <select data-field> picks a value of that record field (and of the counts').
    const selects = Array.from(document.querySelectorAll("select[data-field]"));
    const filter = {};
    for (const s of selects) filter[s.dataset.field] = params.get(s.dataset.field) || "";
    function matches(item) {
      return selects.every(s => !filter[s.dataset.field] || (item[s.dataset.field] || "") === filter[s.dataset.field]);
    }

    // A block or an upgrade that report mode only recorded (enforced:false) is what would have been done.
    function kindOf(action, enforced) {
      return enforced === false && (action === "block" || action === "upgrade") ? "would-" + action : action;
    }

    let mode = snapshot.mode;
    let through = snapshot.through;   // the number of the newest record the totals include
    let received = 0, skipped = 0;
    let counts = new Map();           // app, device, kind, reason -> {app, device, kind, reason, n}
    let exchanges = new Map();        // app, device, group, offered -> {app, device, group, offered, n}
    const pqGroups = new Set(snapshot.pq_groups);
    function addCount(r, n) {
      const kind = kindOf(r.action, r.enforced), app = r.app || "", device = r.device || "", reason = r.reason || "";
      const key = [app, device, kind, reason].join("\u0000");
      const c = counts.get(key);
      if (c) c.n += n; else counts.set(key, {app, device, kind, reason, n});
    }
    function addExchange(app, device, group, offered, n) {
      const key = [app || "", device || "", group || "", offered ? "1" : ""].join("\u0000");
      const e = exchanges.get(key);
      if (e) e.n += n; else exchanges.set(key, {app: app || "", device: device || "", group: group || "", offered: !!offered, n});
    }
    function setTotals(s) {
      counts = new Map(); exchanges = new Map();
      for (const c of s.counts) addCount(c, c.count);
      for (const k of s.key_exchange) addExchange(k.app, k.device, k.group, k.pq_offered, k.count);
    }

    function el(tag, text, cls) {
      const node = document.createElement(tag);
      if (text !== undefined && text !== null) node.textContent = String(text);
      if (cls) node.className = cls;
      return node;
    }
    function tag(kind) { return el("span", LABELS[kind] || kind, "tag " + kind); }
    function destination(r) {
      // Refused before a destination was read (no policy, credentials): what the client said it is.
      if (!r.host) return r.user_agent ? "User-Agent: " + r.user_agent : "-";
      const host = r.host.includes(":") ? "[" + r.host + "]" : r.host;
      return (r.scheme ? r.scheme + "://" : "") + host + (r.port ? ":" + r.port : "");
    }
    function timeOf(t) { return (t || "").replace("T", " ").replace("Z", ""); }
    function clock(t) { return (t || "").slice(11, 19); }
    function number(n) { return n.toLocaleString("en-US"); }

    // Repeated decisions are one group: app, device, destination, what was done and why. The Map is in
    // the order groups were last seen (a group seen again moves to its end).
    const groups = new Map();
    function addRecord(r, now) {
      const app = r.app || "", device = r.device || "", dest = destination(r), kind = kindOf(r.action, r.enforced);
      const reason = r.reason || "";
      const key = [app, device, dest, kind, reason].join("\u0000");
      let g = groups.get(key);
      if (g) groups.delete(key);
      else g = {app, device, dest, kind, reason, count: 0, first: r.time, users: new Set(), row: null, rowCount: 0, item: null, itemCount: 0};
      g.count += 1; g.last = r.time; g.record = r;
      if (now) g.touched = now;
      if (r.proxy_user && g.users.size < 100) g.users.add(r.proxy_user);
      groups.set(key, g);
      if (groups.size > GROUPS_KEPT) groups.delete(groups.keys().next().value);
    }
    function users(g) {
      if (g.users.size > 1) return g.users.size + " users";
      return g.record.proxy_user || "-";
    }

    // Puts `items`' nodes in `box` in that order, moving only what moved (rows are updated in place).
    function reconcile(box, items, nodeOf, empty) {
      let at = box.firstChild;
      for (const item of items) {
        const node = nodeOf(item);
        if (node === at) at = at.nextSibling; else box.insertBefore(node, at);
      }
      while (at) { const next = at.nextSibling; at.remove(); at = next; }
      if (!items.length) box.appendChild(empty);
    }
    function emptyRow(span, text) { const tr = el("tr"); const td = el("td", text, "empty"); td.colSpan = span; tr.appendChild(td); return tr; }

    function rowOf(g) {
      if (!g.row) {
        g.row = el("tr");
        g.row.dataset.app = g.app;
        g.row.dataset.device = g.device;
        g.row.dataset.kind = g.kind;
        for (const cls of ["time", "num count", "mono", "mono", "", "mono", "", "mono", "time"]) g.row.appendChild(el("td", null, cls));
        const [, , app, dest, action, reason, , device] = g.row.children;
        app.textContent = g.app || "(none)"; dest.textContent = g.dest; action.appendChild(tag(g.kind)); reason.textContent = g.reason;
        device.textContent = g.device || "-";
      }
      if (g.rowCount !== g.count) {
        g.rowCount = g.count;
        // Arrived while the page was open: marked so the eye finds the new ones.
        g.row.dataset.count = g.count;
        const [last, times, , , , reason, user, , first] = g.row.children;
        last.textContent = clock(g.last); last.title = timeOf(g.last);
        times.textContent = "\u00d7" + number(g.count);
        reason.title = g.record.message || "";
        user.textContent = users(g);
        first.textContent = g.count > 1 ? clock(g.first) : ""; first.title = timeOf(g.first);
      }
      const className = g.touched && renderedAt - g.touched < FRESH_MS ? "group fresh" : "group";
      if (g.row.className !== className) g.row.className = className;
      return g.row;
    }
    function itemOf(g) {
      if (!g.item) {
        g.item = el("li", null, g.kind + "-item");
        g.item.appendChild(el("div", (g.reason || g.kind) + (g.dest !== "-" ? " \u2014 " + g.dest : ""), "mono"));
        g.item.appendChild(el("div"));
        g.item.appendChild(el("div", null, "meta"));
      }
      if (g.itemCount !== g.count) {
        g.itemCount = g.count;
        const [, message, meta] = g.item.children;
        message.textContent = g.record.message || "";
        meta.replaceChildren();
        if (g.count > 1) meta.appendChild(el("span", "\u00d7" + number(g.count) + " ", "times"));
        meta.appendChild(document.createTextNode(timeOf(g.last) + (g.count > 1 ? " (since " + clock(g.first) + ")" : "")
          + " \u00b7 " + (g.app || "no app") + (g.device ? " \u00b7 " + g.device : "") + (g.users.size ? " \u00b7 " + users(g) : "")));
      }
      return g.item;
    }

    const placeholders = {
      decisions: emptyRow(9, "no decisions yet"), blocks: el("li", "no blocks", "empty"),
      wouldBlocks: el("li", "nothing would have been blocked", "empty"),
    };

    let renderedAt = 0;
    function render() {
      renderedAt = performance.now();
      const totals = {}, perApp = new Map(), perDevice = new Map(), perReason = new Map();
      for (const c of counts.values()) {
        if (!matches(c)) continue;
        totals[c.kind] = (totals[c.kind] || 0) + c.n;
        const row = perApp.get(c.app) || {};
        row[c.kind] = (row[c.kind] || 0) + c.n;
        perApp.set(c.app, row);
        const deviceRow = perDevice.get(c.device) || {};
        deviceRow[c.kind] = (deviceRow[c.kind] || 0) + c.n;
        perDevice.set(c.device, deviceRow);
        if (c.reason) {
          const rk = c.kind + "\u0000" + c.reason;
          perReason.set(rk, (perReason.get(rk) || 0) + c.n);
        }
      }
      const wouldSeen = {};
      for (const c of counts.values()) if (c.kind.startsWith("would-")) wouldSeen[c.kind] = true;
      // The would-* columns appear in report mode, or once such a record exists (a reload may switch).
      const kinds = KINDS.filter(k => k === "would-block" ? mode === "report" || wouldSeen[k] : k === "would-upgrade" ? wouldSeen[k] : true);
      document.getElementById("mode").hidden = mode !== "report";

      for (const s of selects) {
        const field = s.dataset.field, values = new Set();
        for (const c of counts.values()) if (c[field]) values.add(c[field]);
        for (const g of groups.values()) if (g[field]) values.add(g[field]);
        if (filter[field]) values.add(filter[field]);
        const known = new Set(Array.from(s.options).map(o => o.value));
        for (const v of Array.from(values).sort()) if (!known.has(v)) s.appendChild(new Option(v, v));
        s.value = filter[field];
      }

      document.getElementById("totals").replaceChildren(...kinds.map(k => {
        const d = el("div", null, k); d.appendChild(el("b", number(totals[k] || 0))); d.appendChild(el("span", LABELS[k])); return d;
      }));

      const head = document.querySelector("#byApp thead");
      const headRow = el("tr"); headRow.appendChild(el("th", "app"));
      for (const k of kinds) headRow.appendChild(el("th", LABELS[k], "num"));
      head.replaceChildren(headRow);
      const appBody = document.querySelector("#byApp tbody");
      const appRows = Array.from(perApp.entries()).sort((a, b) => a[0].localeCompare(b[0]));
      appBody.replaceChildren(...appRows.map(([app, row]) => {
        const tr = el("tr"); tr.appendChild(el("td", app || "(none)", "mono"));
        for (const k of kinds) tr.appendChild(el("td", number(row[k] || 0), "num"));
        return tr;
      }));
      if (!appRows.length) appBody.appendChild(emptyRow(kinds.length + 1, "no decisions yet"));

      // By device: shown once any record names a device (--device).
      const named = Array.from(perDevice.keys()).some(d => d);
      document.getElementById("byDeviceTitle").hidden = !named;
      document.getElementById("byDevice").hidden = !named;
      if (named) {
        const deviceHead = el("tr"); deviceHead.appendChild(el("th", "device"));
        for (const k of kinds) deviceHead.appendChild(el("th", LABELS[k], "num"));
        document.querySelector("#byDevice thead").replaceChildren(deviceHead);
        const deviceRows = Array.from(perDevice.entries()).sort((a, b) => a[0].localeCompare(b[0]));
        document.querySelector("#byDevice tbody").replaceChildren(...deviceRows.map(([device, row]) => {
          const tr = el("tr", null, "device-row"); tr.dataset.device = device;
          tr.appendChild(el("td", device || "(none)", "mono"));
          for (const k of kinds) tr.appendChild(el("td", number(row[k] || 0), "num"));
          return tr;
        }));
      }

      const reasonBody = document.querySelector("#byReason tbody");
      const reasonRows = Array.from(perReason.entries()).sort((a, b) => b[1] - a[1]);
      reasonBody.replaceChildren(...reasonRows.map(([key, n]) => {
        const [kind, reason] = key.split("\u0000");
        const tr = el("tr"); const td = el("td"); td.appendChild(tag(kind));
        tr.appendChild(td); tr.appendChild(el("td", reason, "mono")); tr.appendChild(el("td", number(n), "num"));
        return tr;
      }));
      if (!reasonRows.length) reasonBody.appendChild(emptyRow(3, "no reasons yet"));

      const pqRows = new Map();
      for (const x of exchanges.values()) {
        if (!matches(x)) continue;
        const row = pqRows.get(x.app) || {tls:0, offered:0, pq:0, classical:0};
        row.tls += x.n;
        if (x.offered) {
          row.offered += x.n;
          if (pqGroups.has(x.group)) row.pq += x.n; else if (x.group) row.classical += x.n;
        }
        pqRows.set(x.app, row);
      }
      const pqBody = document.querySelector("#pqByApp tbody");
      const pqSorted = Array.from(pqRows.entries()).sort((a, b) => a[0].localeCompare(b[0]));
      pqBody.replaceChildren(...pqSorted.map(([app, row]) => {
        const tr = el("tr", null, "pq-app"); tr.dataset.app = app;
        tr.appendChild(el("td", app || "(none)", "mono"));
        for (const n of [row.tls, row.offered, row.pq, row.classical]) tr.appendChild(el("td", number(n), "num"));
        const share = row.offered ? Math.round(100 * row.pq / row.offered) + "%" : "-";
        tr.appendChild(el("td", share, "num share"));
        return tr;
      }));
      if (!pqSorted.length) pqBody.appendChild(emptyRow(6, "no inspected TLS handshakes yet"));

      // The newest groups first, as many as each place shows.
      const rows = [], blocked = [], would = [];
      const all = Array.from(groups.values());
      for (let i = all.length - 1; i >= 0 && (rows.length < ROWS || blocked.length < LISTED || would.length < LISTED); i--) {
        const g = all[i];
        if (!matches(g)) continue;
        if (rows.length < ROWS) rows.push(g);
        if (g.kind === "block" && blocked.length < LISTED) blocked.push(g);
        if (g.kind === "would-block" && would.length < LISTED) would.push(g);
      }
      reconcile(document.querySelector("#decisions tbody"), rows, rowOf, placeholders.decisions);
      reconcile(document.getElementById("blocks"), blocked, itemOf, placeholders.blocks);
      reconcile(document.getElementById("wouldBlocks"), would, itemOf, placeholders.wouldBlocks);
      const showWould = kinds.includes("would-block");
      document.getElementById("wouldBlocksTitle").hidden = !showWould;
      document.getElementById("wouldBlocks").hidden = !showWould;
      const filtered = Object.values(filter).filter(v => v).join(", ");
      document.getElementById("shown").textContent = "(" + rows.length + (rows.length === 1 ? " group" : " groups")
        + (filtered ? " for " + filtered : "") + ")"
        + (skipped ? " \u00b7 " + number(skipped) + " decisions arrived faster than the page could take them and are not listed; every total counts them" : "");
    }

    // Events are counted as they come and queued; the page is redrawn at most every FLUSH_MS.
    let queue = [], timer = 0, lastFlush = 0;
    // A redraw that took long spaces the next ones out (four times its length), so drawing never
    // takes more than a fifth of the page's time, however many groups change.
    let interval = FLUSH_MS;
    function schedule() {
      if (!timer) timer = setTimeout(flush, Math.max(0, lastFlush + interval - performance.now()));
    }
    function flush() {
      timer = 0;
      lastFlush = performance.now();
      for (const r of queue) addRecord(r, lastFlush);
      queue = [];
      render();
      interval = Math.min(2000, Math.max(FLUSH_MS, 4 * (performance.now() - lastFlush)));
      document.body.dataset.through = through;
      document.body.dataset.received = received;
      document.body.dataset.skipped = skipped;
    }

    for (const select of selects) select.addEventListener("change", e => {
      filter[select.dataset.field] = e.target.value;
      const url = new URL(location.href);
      if (e.target.value) url.searchParams.set(select.dataset.field, e.target.value); else url.searchParams.delete(select.dataset.field);
      history.replaceState(null, "", url);
      render();
    });

    setTotals(snapshot);
    for (const r of snapshot.recent) addRecord(r, 0);
    render();

    const status = document.getElementById("status");
    let connected = false;
    const rate = [];   // [time, received] over the last seconds
    function showStatus() {
      const now = performance.now();
      rate.push([now, received]);
      while (rate.length > 2 && now - rate[0][0] > 3000) rate.shift();
      const [t0, n0] = rate[0];
      const perSecond = now > t0 ? Math.round((received - n0) * 1000 / (now - t0)) : 0;
      status.textContent = connected ? "live \u00b7 " + number(perSecond) + " decisions/s" : "reconnecting";
      status.className = connected ? "status live" : "status";
    }
    // Once a second: the rate, and the highlights of rows no decision joined lately fade.
    setInterval(() => { showStatus(); if (performance.now() - lastFlush > 1000) render(); }, 1000);
    // ?stream=SECONDS (the admin's choice) ends each event stream after that long; the browser
    // reconnects and resumes after the last record it has.
    const stream = params.get("stream");
    const source = new EventSource("events?after=" + through + (stream ? "&max=" + encodeURIComponent(stream) : ""));
    source.onopen = () => { connected = true; status.textContent = "live"; status.className = "status live"; };
    source.onerror = () => { connected = false; showStatus(); };
    source.onmessage = e => {
      const id = Number(e.lastEventId);
      if (id <= through) return;
      through = id;
      received += 1;
      const r = JSON.parse(e.data);
      addCount(r, 1);
      if (typeof r.pq_offered === "boolean") addExchange(r.app, r.device, r.key_exchange, r.pq_offered, 1);
      queue.push(r);
      schedule();
    };
    // After a gap (records the stream no longer had for this page), or from a daemon that was
    // restarted meanwhile (its numbers start again): the totals through `through`.
    source.addEventListener("counts", e => {
      const s = JSON.parse(e.data);
      setTotals(s);
      through = s.through;
      mode = s.mode || mode;
      skipped += s.skipped || 0;
      schedule();
    });
    </script>
    </body>
    </html>
    """#
}
