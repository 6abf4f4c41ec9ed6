// tabled display: draws what the server derived (roads, statistics); decides nothing.
// Updates arrive by server-sent events on /events: "all" (everything, on connect),
// "table" (one table's view), "meta" (refusals, broker link).
"use strict";

const state = { tables: {}, refused: { total: 0, last: [] }, broker: null, selected: null };

// Every value from the server goes through esc() on its way into markup: payloads are
// signed, but a page is one more wall (issue 25), and the CSP another.
const esc = (s) => String(s ?? "").replace(/[&<>"']/g,
  (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
// A fixed map's own entry only: LETTER["constructor"] is no letter.
const own = (map, key) => (Object.hasOwn(map, key) ? map[key] : "");
const SUIT = { S: "♠", H: "♥", D: "♦", C: "♣" };
const LETTER = { banker: "B", player: "P", tie: "T" };
const GAME = {
  "tiger-buffalo": "Tiger Buffalo", "tiger-buffalo-insurance-plus": "Tiger Buffalo Insurance Plus",
  "tiger-baccarat": "Tiger Baccarat", "tai-sai-open-cover": "Tai Sai",
};
const ROAD_NAMES = { big_eye_boy: "Big eye boy", small_road: "Small road", cockroach_pig: "Cockroach pig" };

function card(c) {
  const rank = c.card[0] === "T" ? "10" : c.card[0];
  const red = c.card[1] === "H" || c.card[1] === "D";
  return `<span class="card${red ? " red" : ""}" data-card="${esc(c.card)}" data-hand="${esc(c.hand)}"
    data-position="${esc(c.position)}">${esc(rank)}${esc(own(SUIT, c.card[1]) || "?")}</span>`;
}

// Grid positions are numbers the server derived; anything else places the cell at 1.
const place = (n) => (Number.isInteger(n) && n >= 0 ? n + 1 : 1);
function cellStyle(c) { return `grid-column:${place(c.col)};grid-row:${place(c.row)}`; }

function beadCell(c) {
  const h = c.hand;
  const w = h.winner || "void";
  const text = h.winner ? own(LETTER, h.winner) : "V";
  const marks = (h.banker_pair ? '<i class="bp"></i>' : "") + (h.player_pair ? '<i class="pp"></i>' : "");
  return `<div class="bead ${esc(w)}${h.tiger ? " tiger" : ""}${h.natural ? " natural" : ""}" style="${cellStyle(c)}"
    data-col="${esc(c.col)}" data-row="${esc(c.row)}" data-seq="${esc(h.seq)}" data-winner="${esc(w)}"
    data-bp="${+h.banker_pair}" data-pp="${+h.player_pair}" data-natural="${+h.natural}"
    data-tiger="${+h.tiger}" data-corrected="${+h.corrected}" title="#${esc(h.seq)}${h.void_clause ? " void, clause " + esc(h.void_clause) : ""}${h.corrected ? " (corrected after it was settled)" : ""}">${esc(text)}${marks}</div>`;
}

function bigCell(c) {
  const h = c.hand;
  const ties = c.ties + c.ties_before;
  const marks = (h.banker_pair ? '<i class="bp"></i>' : "") + (h.player_pair ? '<i class="pp"></i>' : "") +
    (ties ? `<i class="tie-slash"></i>${ties > 1 ? `<b class="ties">${esc(ties)}</b>` : ""}` : "") +
    (h.natural ? '<i class="nat"></i>' : "");
  return `<div class="big ${esc(h.winner)}${h.tiger ? " tiger" : ""}" style="${cellStyle(c)}"
    data-col="${esc(c.col)}" data-row="${esc(c.row)}" data-seq="${esc(h.seq)}" data-winner="${esc(h.winner)}"
    data-ties="${esc(c.ties)}" data-ties-before="${esc(c.ties_before)}" data-bp="${+h.banker_pair}"
    data-pp="${+h.player_pair}" data-natural="${+h.natural}" data-tiger="${+h.tiger}"
    title="#${esc(h.seq)}">${h.tiger ? "6" : ""}${marks}</div>`;
}

function derivedCell(c, name) {
  return `<div class="d ${name} ${esc(c.colour)}" style="${cellStyle(c)}" data-col="${esc(c.col)}"
    data-row="${esc(c.row)}" data-colour="${esc(c.colour)}" data-seq="${esc(c.seq)}"></div>`;
}

function road(name, label, cells, draw, minCols) {
  const cols = Math.max(minCols, ...cells.map((c) => place(c.col)));
  return `<div class="road-wrap"><h3>${label}</h3><div class="road ${name}" data-road="${name}"
    style="grid-template-columns:repeat(${cols},var(--cell-${name}, var(--cell)))">${cells.map(draw).join("")}</div></div>`;
}

function predictions(next) {
  if (!next) return "";
  const one = (w) => `<span class="predict ${w}" data-predict="${w}">${LETTER[w]}?
    ${Object.keys(ROAD_NAMES).map((n) => `<i class="d ${n} ${esc((next[w] || {})[n] || "none")}" title="${ROAD_NAMES[n]}"></i>`).join("")}</span>`;
  return `<div class="predictions">${one("banker")}${one("player")}</div>`;
}

function roundView(t) {
  const r = t.round || {};
  if (!r.round_id) return `<div class="panel round"><h2>Round</h2><p class="empty">No round yet</p></div>`;
  const phase = `<span class="phase" data-phase="${esc(r.phase)}">${esc(r.phase)}</span>`;
  if (t.game === "tai-sai-open-cover") {
    const dice = (r.dice || []).map((d) => `<span class="die" data-die="${esc(d)}">${esc(d)}</span>`).join("");
    return `<div class="panel round" data-round="${esc(r.round_id)}"><h2>Round ${phase}</h2>
      <div class="dice-now">${dice || '<span class="empty">dice not read yet</span>'}</div>
      ${r.dice ? `<div class="total">total <b>${esc(r.dice.reduce((a, b) => a + b, 0))}</b></div>` : ""}
      ${r.result ? wins(r.result) : ""}
      <div class="sub">${esc(r.round_id)}${r.tumbles ? ` · ${esc(r.tumbles)} tumbles` : ""}</div></div>`;
  }
  const hand = (name) => {
    const cs = (r.cards || []).filter((c) => c.hand === name);
    const total = r[name + "_total"];
    const won = r.result && r.result.winner === name;
    return `<div class="hand ${name}${won ? " won" : ""}" data-hand-view="${name}">
      <div class="label">${name === "player" ? "Player" : "Banker"}</div>
      <div class="cards">${cs.map(card).join("")}</div>
      <div class="total" data-total="${cs.length ? esc(total) : ""}">${cs.length ? esc(total) : ""}</div></div>`;
  };
  const res = r.result;
  const outcome = res ? (res.status === "void" ? `<div class="outcome void">VOID clause ${esc(res.void && res.void.clause)}</div>`
    : `<div class="outcome ${esc(res.winner)}" data-outcome="${esc(res.winner)}">${esc(String(res.winner).toUpperCase())}${res.natural ? " · natural" : ""}</div>`) : "";
  const needed = r.needed && !res ? `<div class="needed">next: ${esc(r.needed.replaceAll("_", " "))}</div>` : "";
  return `<div class="panel round" data-round="${esc(r.round_id)}"><h2>Round ${phase}</h2>
    <div class="hands">${hand("player")}${hand("banker")}</div>${outcome}${res ? wins(res) : ""}${needed}
    <div class="sub">${esc(r.round_id)}${r.partial ? " · joined mid-round" : ""}${r.detail ? " · " + esc(r.detail) : ""}</div></div>`;
}

function wins(r) {
  if (r.status === "void") return `<div class="round-wins">bets returned${r.void ? ", clause " + esc(r.void.clause) : ""}</div>`;
  return `<div class="round-wins">${r.wins.map((w) => `<span class="win">${esc(w.bet.replaceAll("_", " "))} <b>${esc(w.pays || "")}</b></span>`).join(" · ")}</div>`;
}

function lastResults(t, limit) {
  const rows = (t.last_results || []).slice(0, limit).map((r) => {
    const wins = r.wins.map((w) => `<span class="win">${esc(w.bet.replaceAll("_", " "))} <b>${esc(w.pays || "")}</b></span>`).join(" ");
    let what;
    if (r.status === "void") what = `<span class="void">VOID ${esc(r.void && r.void.clause)}${r.corrected ? " · corrected by " + esc(r.corrected.by) : ""}</span>`;
    else if (r.dice) what = `${r.dice.map((d) => `<span class="die small">${esc(d)}</span>`).join("")} <b>${esc(r.total)}</b>`;
    else what = `<span class="w ${esc(r.winner)}">${esc(own(LETTER, r.winner))}</span> P ${esc(r.player_total)} · B ${esc(r.banker_total)}`;
    return `<li data-seq="${esc(r.seq)}" data-status="${esc(r.status)}"><span class="seq">#${esc(r.seq)}</span> ${what}
<div class="wins">${wins}</div></li>`;
  }).join("");
  return `<div class="panel last"><h2>Last results</h2><ol class="results">${rows || '<li class="empty">none yet</li>'}</ol></div>`;
}

function shoeView(t) {
  const s = t.shoe || {};
  const v = (x) => (x === null || x === undefined ? "–" : esc(x));
  return `<div class="counters" data-shoe="${esc(s.shoe_id)}">
    <span>shoe <b>${v(s.shoe_id)}</b></span><span>hand <b data-hands>${v(s.hands)}</b></span>
    <span>dealt <b data-dealt>${v(s.dealt)}</b></span><span>left <b data-left>${v(s.left)}</b></span>
    ${s.cut_card ? '<span class="tag warn">cut card</span>' : ""}${s.ended ? '<span class="tag">shoe ended</span>' : ""}</div>
    ${s.catching_up ? '<div class="alert-line" data-catching-up>catching up: fetching the shoe\'s earlier results from the table…</div>' : ""}
    ${s.not_fetched ? `<div class="alert-line" data-not-fetched="${esc(s.not_fetched.results)}">${esc(s.not_fetched.why)}: the shoe's ${s.not_fetched.results === null ? "" : esc(s.not_fetched.results) + " "}earlier results could not be fetched (asked again when the table is back)</div>` : ""}
    ${s.joined_at ? `<div class="alert-line" data-joined-at="${esc(s.joined_at)}">joined mid-shoe: the roads start at result #${esc(s.joined_at)}, not at the shoe's first hand</div>` : ""}`;
}

function health(t) {
  const st = t.status || {};
  // While the table is offline the retained device states are its last words, not now.
  const stale = st.state === "offline";
  const devs = Object.entries(t.devices || {}).map(([n, d]) =>
    `<li class="dev ${esc(d.state)}${stale ? " stale" : ""}" data-device="${esc(n)}" data-state="${esc(d.state)}"><b>${esc(n)}</b> ${esc(d.state)}${stale ? " (last known; table offline)" : ""}
      ${d.fault ? `<span class="tag warn">fault ${esc(d.fault)}</span>` : ""}${d.detail ? ` <span class="sub">${esc(d.detail)}</span>` : ""}</li>`).join("");
  const alerts = (t.alerts || []).slice(0, 5).map((a) =>
    `<li data-alert="${esc(a.code)}"><b>${esc(a.code.replaceAll("_", " "))}</b>${a.clause ? ` (${esc(a.clause)})` : ""}
      <span class="sub">${esc(a.at.slice(11, 19))} ${esc(a.detail)}</span></li>`).join("");
  const c = t.counters || {};
  const gaps = (t.gaps || []).map(([a, b]) => (a === b ? `#${a}` : `#${a}–${b}`)).join(", ");  // escaped where shown
  const missing = (t.msg_gaps || []).reduce((n, [a, b]) => n + b - a + 1, 0);
  return `<div class="panel health"><h2>Table health</h2><div class="health-cols"><div>
    <div class="status ${esc(st.state)}" data-status="${esc(st.state)}">${esc(st.state || "unknown")}
      <span class="sub">session ${esc(st.session)} · ${esc(st.version)}</span></div>
    <ul class="devices">${devs || '<li class="empty">no device reported</li>'}</ul>
    <div class="${t.backlog && t.backlog.messages ? "alert-line" : "sub"}" data-backlog="${t.backlog ? esc(t.backlog.messages) : ""}">${esc(t.backlog_text || "")}</div>
    <div class="sub">results <b data-results="${esc(c.results ?? 0)}">${esc(c.results ?? 0)}</b> · duplicates dropped ${esc(c.duplicates ?? 0)} · fetched by replay ${esc(c.fetched ?? 0)}</div>
    ${gaps ? `<div class="alert-line" data-gaps>missing results ${esc(gaps)}${t.msg_gaps === undefined || t.lost || !missing ? "" : " (being fetched)"}</div>` : ""}
    ${missing ? `<div class="sub" data-msg-gaps>${esc(missing)} messages missing, ${t.catchup && !t.catchup.asking ? "not asked for: " + esc(t.catchup.why) : "asked for by replay"}</div>` : ""}
    ${t.lost ? `<div class="alert-line" data-lost>${esc(t.lost)} messages the table no longer had when asked (pruned)</div>` : ""}
    ${(t.corrections || []).length ? `<h3>Corrections</h3><ul class="alerts">${t.corrections.map((c) =>
      `<li data-correction="${esc(c.corrects)}"><b>#${esc(c.seq)} voids ${esc(c.corrects)}</b> (${esc(c.clause)} ${esc(c.code)}) <span class="sub">by ${esc(c.by)}</span></li>`).join("")}</ul>` : ""}
    </div><div><h3>Alerts</h3><ul class="alerts">${alerts || '<li class="empty">none</li>'}</ul></div></div></div>`;
}

function baccarat(t) {
  const r = t.roads || { bead_plate: [], big_road: [], derived: {} };
  const derived = Object.keys(ROAD_NAMES).map((n) =>
    road(n, ROAD_NAMES[n], r.derived[n] || [], (c) => derivedCell(c, n), 12)).join("");
  return `<div class="layout baccarat">
    <div class="col-left">${roundView(t)}${lastResults(t, 8)}</div>
    <div class="col-right"><div class="panel roads">${shoeView(t)}
      ${road("bead_plate", "Bead plate", r.bead_plate, beadCell, 12)}
      ${road("big_road", "Big road", r.big_road, bigCell, 30)}
      <div class="derived">${derived}</div>${predictions(r.next_if)}</div>
      ${health(t)}</div></div>`;
}

function taiSai(t) {
  const d = t.dice || { last: [], counts: {}, faces: {}, totals: {}, hot: [], cold: [], watch: {} };
  const last = d.last.slice(0, 12).map((x) => `<li data-seq="${esc(x.seq)}" class="${x.triple ? "triple" : ""}${x.voided ? " voided" : ""}">${x.dice.map((n) => `<span class="die">${esc(n)}</span>`).join("")}
    <b>${esc(x.total)}</b><span class="bs">${x.voided ? `VOID ${esc(x.voided)}` : x.triple ? "triple" : x.total >= 11 ? "BIG" : "SMALL"}</span></li>`).join("");
  const n = d.throws || 0;
  const pct = (k) => (n ? Math.round((100 * (d.counts[k] || 0)) / n) : 0);  // a number, or NaN
  const bar = (a, b) => `<div class="bar"><span class="a" style="width:${esc(pct(a))}%">${esc(a)} ${esc(d.counts[a] || 0)}</span>
    <span class="b" style="width:${esc(pct(b))}%">${esc(b)} ${esc(d.counts[b] || 0)}</span></div>`;
  const maxT = Math.max(1, ...Object.values(d.totals));
  const totals = Object.entries(d.totals).map(([k, v]) =>
    `<div class="tcol" data-total-count="${esc(k)}"><span class="v">${esc(v)}</span><span class="t" style="height:${esc((100 * v) / maxT)}%"></span><span class="k">${esc(k)}</span></div>`).join("");
  const faces = Object.entries(d.faces).map(([k, v]) =>
    `<span class="face${d.hot.includes(+k) ? " hot" : ""}${d.cold.includes(+k) ? " cold" : ""}" data-face="${esc(k)}"><span class="die">${esc(k)}</span>${esc(v)}</span>`).join("");
  const w = d.watch || {};
  const seen = d.seen || {};
  return `<div class="layout taisai">
    <div class="col-left">${roundView(t)}<div class="panel throws"><h2>Last throws</h2><ol class="throws">${last || '<li class="empty">none yet</li>'}</ol></div></div>
    <div class="col-right"><div class="panel stats"><h2>Statistics <span class="sub">${esc(n)} throws</span></h2>
      ${seen.missing ? `<div class="alert-line" data-seen="${esc(seen.results)}" data-published="${esc(seen.published)}">joined late: over ${esc(seen.results)} of the table's ${esc(seen.published)} results; ${esc(seen.missing)} not seen</div>` : ""}
      ${bar("big", "small")}${bar("odd", "even")}<div class="sub">triples ${esc(d.counts.triple || 0)}</div>
      <h3>Totals</h3><div class="totals">${totals}</div>
      <h3>Hot and cold numbers <span class="legend hot">hot</span> <span class="legend cold">cold</span></h3><div class="faces">${faces}</div>
      <div class="watch ${esc(w.state === "ALERT" ? "alert" : "")}" data-watch="${esc(w.state)}">Dice watch: <b>${esc(w.state)}</b>
        <span class="sub">χ² ${esc(w.chi2)} (alert above ${esc(w.limit)}, from ${esc(w.min_throws)} throws)</span></div>
      ${d.table_watch ? `<div class="watch alert" data-table-watch>Table's dice watch: <b>ALERT</b> <span class="sub">${esc(d.table_watch.at.slice(11, 19))} ${esc(d.table_watch.detail)}</span></div>` : ""}</div>
      ${health(t)}</div></div>`;
}

function renderTable(t) {
  const st = t.status || {};
  const head = `<div class="table-head"><h1>${esc(t.table)}</h1><span class="game">${esc(GAME[t.game] || t.game || "")}
    ${st.layout ? "· layout " + esc(st.layout) : ""}</span><span class="pill ${st.state === "online" ? "ok" : "bad"}">${esc(st.state || "unknown")}</span></div>`;
  return head + (t.game === "tai-sai-open-cover" ? taiSai(t) : baccarat(t));
}

function render() {
  const names = Object.keys(state.tables).sort();
  if (!state.selected || !state.tables[state.selected]) state.selected = decodeURIComponent(location.hash.slice(1)) || names[0];
  if (!state.tables[state.selected]) state.selected = names[0];
  document.getElementById("tabs").innerHTML = names.map((n) =>
    `<a href="#${encodeURIComponent(n)}" class="${n === state.selected ? "on" : ""}" data-table-tab="${esc(n)}">${esc(n)}</a>`).join("");
  const main = document.getElementById("tables");
  if (!names.length) return;
  const t = state.tables[state.selected];
  main.innerHTML = `<section class="table" data-table="${esc(t.table)}" data-game="${esc(t.game)}">${renderTable(t)}</section>`;
  for (const el of main.querySelectorAll(".road")) el.scrollLeft = el.scrollWidth;  // the latest columns in view
  renderMeta();
}

function renderMeta() {
  const link = document.getElementById("link");
  const b = state.broker;
  if (b) {
    link.className = "pill " + (b.connected ? "ok" : "bad");
    link.dataset.link = b.connected ? "connected" : "broker-down";
    link.textContent = b.connected ? `broker ${b.broker}` : `broker unreachable: ${b.error || ""}`;
  }
  const pill = document.getElementById("refused-pill");
  pill.hidden = !state.refused.total;
  pill.textContent = `${state.refused.total} refused`;
  const sec = document.getElementById("refused");
  sec.hidden = !state.refused.total;
  document.getElementById("refused-total").textContent = state.refused.total;
  document.getElementById("refused-list").innerHTML = state.refused.last.map((r) =>
    `<li data-refused-topic="${esc(r.topic)}"><span class="sub">${esc(r.at.slice(11, 19))}</span> <b>${esc(r.topic)}</b>: ${esc(r.reason)}</li>`).join("");
}

window.addEventListener("hashchange", () => { state.selected = decodeURIComponent(location.hash.slice(1)); render(); });

function connect() {
  const es = new EventSource("/events");
  window.tabledUpdates = window.tabledUpdates || 0;
  es.addEventListener("all", (e) => {
    const d = JSON.parse(e.data);
    state.tables = d.tables; state.refused = d.refused; state.broker = d.broker;
    window.tabledUpdates++; render();
  });
  es.addEventListener("table", (e) => {
    const t = JSON.parse(e.data);
    state.tables[t.table] = t; window.tabledUpdates++; render();
  });
  es.addEventListener("meta", (e) => {
    const d = JSON.parse(e.data);
    state.refused = d.refused; state.broker = d.broker; window.tabledUpdates++; renderMeta();
  });
  es.onerror = () => {
    const link = document.getElementById("link");
    link.className = "pill bad"; link.dataset.link = "display-down";
    link.textContent = "display server unreachable: reconnecting…";
  };
}
connect();
