// tabled pit: what each table holds for the Pit, from the table's own signed messages
// (the server's view, daemon/display/pit.py), and the Pit's answers, each signed here by
// the supervisor's security key (WebAuthn) over the command's exact bytes. The server
// only relays what is signed; the table verifies it (daemon/passkeys.py, docs/pit.md).
"use strict";

const esc = (s) => String(s ?? "").replace(/[&<>"']/g,
  (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const SUIT = { S: "♠", H: "♥", D: "♦", C: "♣" };
const KIND = {
  simultaneous_draw: "Double draw: the order of the pair",
  reads: "Cards not read for sure: reconstruct the deal",
  pit: "Held by the Pit: reconstruct the deal",
  throw: "Held throw",
  disputed: "Published result disputed by a later read",
  squeeze: "Squeeze: the highest Bet may squeeze the Banker's third card first",
};
const ACTION = {
  reconstruct_deal: "Reconstruct", confirm_order: "Confirm order", void_round: "Void round",
  throw_again: "Throw again", confirm_result: "Result stands",
  void_settled_round: "Void the settled round", declare_squeeze: "Declare the squeeze",
};
// Round-scoped commands name the open round (the held one); these name a settled round.
const TABLE_SCOPED = new Set(["confirm_result", "void_settled_round"]);
const DOMAIN = "tabled-command-v1\n";
const KEYS = "tabled.pit.credentials";

const state = { tables: {}, drawn: "" };
const drafts = {}; // hold key -> {cards: [], reason, swap, irregularity}
const sent = {}; // command id -> {table, name, hold}
let rules = null; // the Table of Play as data (/pit/table-of-play)
window.pitSent = []; // what was relayed, for whoever watches the page (the tests)

// ---- bytes -------------------------------------------------------------------------
const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const unb64url = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")),
  (c) => c.charCodeAt(0));

// Sorted keys, no whitespace: the canonical text the table signs over (daemon/signing.py).
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

function newId() { return `pit-${b64url(crypto.getRandomValues(new Uint8Array(9)))}`; }

// ---- signing -----------------------------------------------------------------------
async function sign(table, name, body) {
  const bytes = new TextEncoder().encode(`${DOMAIN}${table}\n${name}\n${canonical(body)}`);
  const challenge = await crypto.subtle.digest("SHA-256", bytes);
  const known = JSON.parse(localStorage.getItem(KEYS) || "[]");
  const cred = await navigator.credentials.get({ publicKey: {
    challenge, rpId: location.hostname, userVerification: "discouraged", timeout: 60000,
    allowCredentials: known.map((id) => ({ type: "public-key", id: unb64url(id) })),
  } });
  const r = cred.response;
  return { ...body, sig: { alg: "WebAuthn", cred: b64url(cred.rawId),
    authenticator_data: b64url(r.authenticatorData), client_data: b64url(r.clientDataJSON),
    signature: b64url(r.signature) } };
}

async function act(table, hold, name) {
  const d = draft(hold);
  const body = { id: newId(), issued_at: new Date().toISOString() };
  if (name !== "status") body.round_id = hold.round_id; // status names no round
  if (hold.hold) body.hold = hold.hold;
  if (name === "reconstruct_deal") body.cards = d.cards.join(" ");
  if (name === "confirm_order" && d.swap.trim()) body.swap = d.swap.trim();
  if (name === "void_round" || name === "void_settled_round") {
    body.reason = d.reason.trim() || "voided by the Pit";
    if (d.irregularity.trim()) body.irregularity = d.irregularity.trim();
  }
  if (TABLE_SCOPED.has(name)) delete body.hold;
  const note = hold.hold || hold.round_id
    ? document.querySelector(`[data-note="${CSS.escape(key(hold))}"]`) : null;
  try {
    const signed = await sign(table, name, body);
    const payload = JSON.stringify(signed);
    sent[body.id] = { table, name, hold: key(hold) };
    const res = await fetch("/pit/command", { method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ table, name, payload }) });
    window.pitSent.push({ table, name, id: body.id, status: res.status });
    if (note) note.textContent = res.ok ? "sent: waiting for the table…" : `not relayed (${res.status})`;
    d.last = body.id;
    render(true);
    return body.id;
  } catch (e) {
    if (note) note.textContent = `not signed: ${e.message}`;
    return null;
  }
}

// ---- the reconstruction ---------------------------------------------------------------
// Baccarat deals Player, Banker, Player, Banker, then the third cards the Table of Play
// calls for; the rule itself comes from the engine as data.
function hands(cards) {
  const pts = (c) => (c === "--" ? null : rules.points[c[0]]);
  const live = cards.filter((c) => c !== "--");
  const out = { player: [], banker: [], problems: [], complete: false };
  if (live.length < 4) { out.player = [live[0], live[2]].filter(Boolean); out.banker = [live[1], live[3]].filter(Boolean); out.problems.push(`${4 - live.length} more of the first four cards`); return out; }
  out.player = [live[0], live[2]]; out.banker = [live[1], live[3]];
  const p = (pts(live[0]) + pts(live[2])) % 10, b = (pts(live[1]) + pts(live[3])) % 10;
  let next = 4, third = null;
  if (rules.player[p][b]) {
    if (live.length <= next) { out.problems.push("the Player draws a third card"); return out; }
    out.player.push(live[next]); third = pts(live[next]); next++;
  }
  if (rules.banker[p][b][third === null ? 10 : third]) {
    if (live.length <= next) { out.problems.push("the Banker draws a third card"); return out; }
    out.banker.push(live[next]); next++;
  }
  if (live.length > next) out.problems.push(`${live.length - next} card(s) more than the Table of Play deals`);
  out.complete = out.problems.length === 0;
  return out;
}

// Each tapped card against the read of its draw (the hold's order, draw by draw).
function againstReads(hold, cards) {
  const order = String(hold.order || "").split(/\s+/).filter(Boolean).map((x) => x.split(":"));
  const reads = new Map((hold.reads || []).map(([n, c]) => [String(n), c]));
  const out = [];
  cards.forEach((c, i) => {
    const draw = order[i] ? order[i][0] : null;
    const read = draw !== null ? reads.get(draw) : undefined;
    if (read && c !== "--" && read !== c) out.push(`draw ${draw} was read as ${read}, not ${c}`);
  });
  return out;
}

// ---- drawing -----------------------------------------------------------------------
const key = (h) => h.key; // the server's key of what waits (daemon/display/pit.py)
function draft(h) {
  return (drafts[key(h)] ||= { cards: [], reason: "", swap: "", irregularity: "", round: "", last: null });
}
const face = (c) => (c === "--" ? "—" : `${c[0] === "T" ? "10" : c[0]}${SUIT[c[1]] || "?"}`);

function reconstruction(h) {
  if (!rules) return "";
  const d = draft(h);
  const picker = [...rules.suits].map((s) => [...rules.ranks].map((r) =>
    `<button type="button" data-pick="${esc(r + s)}">${esc(face(r + s))}</button>`).join("")).join("");
  const hs = hands(d.cards);
  const reads = againstReads(h, d.cards);
  const problems = [...hs.problems, ...reads];
  return `<div class="picker">${picker}</div>
    <div class="actions"><button type="button" data-pick="--">unread, not this deal's</button>
      <button type="button" data-undo>undo</button><button type="button" data-clear>clear</button>
      <span data-sequence>${esc(d.cards.join(" "))}</span></div>
    <div class="hands"><span>Player: <b data-hand="player">${esc(hs.player.map(face).join(" "))}</b></span>
      <span>Banker: <b data-hand="banker">${esc(hs.banker.map(face).join(" "))}</b></span></div>
    <div class="check ${problems.length ? "bad" : "ok"}" data-check="${problems.length ? "bad" : "ok"}">${
  problems.length ? esc(problems.join("; ")) : "a whole deal by the Table of Play, as read"}</div>`;
}

function holdView(table, h) {
  const d = draft(h);
  const reads = (h.reads || []).map(([n, c]) =>
    `<span class="read" data-draw="${esc(n)}">${esc(n)}: ${esc(face(String(c)))}</span>`).join("");
  const detail = h.kind === "throw" ? `<p>${esc(h.why)}</p>` : h.kind === "squeeze"
    ? "<p>Declared, every Player's right to insure after the Player Hand's third card is waived for this round; offered until the Banker Hand's third card is drawn.</p>"
    : h.kind === "disputed"
    ? `<p>Round ${esc(h.round_id)}: draw ${esc(h.draw_no)} published as ${esc(h.first)}, read again as ${esc(h.again)}</p>`
    : `<p>Order as read: <code>${esc(h.order)}</code>${h.doubles && h.doubles.length ? `; doubles at draws ${esc(h.doubles.join(", "))}` : ""}</p><div class="reads">${reads}</div>`;
  const needs = new Set(h.actions);
  const buttons = h.actions.map((a) => {
    const blocked = a === "reconstruct_deal" && !hands(d.cards).complete;
    return `<button type="button" data-action="${esc(a)}"${blocked ? " disabled" : ""}>${esc(ACTION[a] || a)}</button>`;
  }).join("");
  const reply = d.last ? state.replies[d.last] : null;
  const answer = !d.last ? "" : reply
    ? `<span class="reply ${reply.ok ? "ok" : "bad"}" data-reply="${esc(d.last)}" data-ok="${reply.ok}" data-code="${esc(reply.error ? reply.error.code : "")}">${
      reply.ok ? "the table accepted it" : `refused: ${esc(reply.error ? `${reply.error.code}: ${reply.error.message}` : "")}`}</span>`
    : "";
  return `<article class="hold" data-hold="${esc(key(h))}" data-kind="${esc(h.kind)}" data-table="${esc(table)}">
    <h3>${esc(KIND[h.kind] || h.kind)} <small>clause ${esc(h.clause)} · round ${esc(h.round_id)}</small></h3>
    ${detail}
    ${needs.has("reconstruct_deal") ? reconstruction(h) : ""}
    <div class="actions">
      ${needs.has("confirm_order") ? `<label>swap <input data-field="swap" placeholder="5,6" value="${esc(d.swap)}"></label>` : ""}
      ${needs.has("void_round") || needs.has("void_settled_round") ? `<label>reason <input data-field="reason" value="${esc(d.reason)}"></label>
        <label>clause code <input data-field="irregularity" placeholder="optional" value="${esc(d.irregularity)}"></label>` : ""}
      ${buttons}<span data-note="${esc(key(h))}"></span>${answer}
    </div></article>`;
}

// A settled round voided where the game's clause reaches back (Tai Sai 5.6): the round
// picked from the table's published results still valid, under one of the game's causes.
function correctView(t) {
  const codes = (t.pit && t.pit.corrects) || [];
  if (!codes.length) return "";
  const c = corrector(t.table);
  const d = draft(c);
  const valid = (t.last_results || []).filter((r) => r.status === "valid" && !r.corrected);
  const rounds = valid.map((r) => `<option value="${esc(r.round_id)}"${r.round_id === d.round ? " selected" : ""}>${
    esc(r.round_id)}${r.dice ? ` · ${esc(r.dice.join(" "))}` : ""}</option>`).join("");
  const causes = codes.map((x) => `<option${x === d.irregularity ? " selected" : ""}>${esc(x)}</option>`).join("");
  const reply = d.last ? state.replies[d.last] : null;
  const answer = reply ? `<span class="reply ${reply.ok ? "ok" : "bad"}" data-reply="${esc(d.last)}">${
    reply.ok ? "the table accepted it" : `refused: ${esc(reply.error ? `${reply.error.code}: ${reply.error.message}` : "")}`}</span>` : "";
  return `<article class="hold correct" data-hold="${esc(c.key)}" data-kind="correct" data-table="${esc(t.table)}">
    <h3>Correct a settled round <small>void it where its cause reaches back</small></h3>
    <div class="actions"><label>round <select data-field="round"><option value="">pick a round</option>${rounds}</select></label>
      <label>cause <select data-field="irregularity">${causes}</select></label>
      <label>reason <input data-field="reason" value="${esc(d.reason)}"></label>
      <button type="button" data-action="void_settled_round"${d.round ? "" : " disabled"}>${esc(ACTION.void_settled_round)}</button>
      <span data-note="${esc(c.key)}"></span>${answer}</div></article>`;
}

// The correction form as a thing that waits: its round is the one picked.
function corrector(table) {
  const c = { key: `correct:${table}`, hold: null, kind: "correct", actions: ["void_settled_round"] };
  const d = draft(c);
  const codes = (state.tables[table] && state.tables[table].pit.corrects) || [];
  if (!codes.includes(d.irregularity)) d.irregularity = codes[0] || "";
  c.round_id = d.round || null;
  return c;
}

function tableView(t) {
  const holds = (t.pit && t.pit.holds) || [];
  const round = t.round && t.round.round_id ? ` · round ${esc(t.round.round_id)} (${esc(t.round.phase)})` : "";
  return `<section class="pit-table" data-pit-table="${esc(t.table)}"><h2>${esc(t.table)} <small>${esc(t.game)}${round}</small>
    <button type="button" data-test-key="${esc(t.table)}" title="signs a status command: the table's reply says whether it knows your key">Test my key</button>
    <span data-key-reply="${esc(t.table)}">${keyReply(t.table)}</span></h2>${
    holds.length ? holds.map((h) => holdView(t.table, h)).join("") : '<p class="empty" data-nothing>Nothing waits for the Pit.</p>'}${correctView(t)}</section>`;
}

// "Test my key": a status command, signed like any other; the table's reply shows.
const tested = {}; // table -> command id
function keyReply(table) {
  const r = tested[table] && state.replies[tested[table]];
  if (!r) return "";
  return r.ok ? '<span class="reply ok">the table knows your key</span>'
    : `<span class="reply bad">refused: ${esc(r.error ? r.error.message : "")}</span>`;
}

function render(force) {
  state.replies = {};
  for (const t of Object.values(state.tables)) {
    for (const r of (t.pit && t.pit.replies) || []) state.replies[r.id] = r;
  }
  const shown = JSON.stringify([Object.values(state.tables).map((t) => [t.table, t.pit, t.round && t.round.round_id, t.round && t.round.phase]), drafts]);
  if (!force && shown === state.drawn) return;
  state.drawn = shown;
  const tables = Object.values(state.tables).sort((a, b) => a.table.localeCompare(b.table));
  document.getElementById("pit").innerHTML = tables.length ? tables.map(tableView).join("")
    : '<p class="empty">Waiting for a table to publish…</p>';
}

// ---- input -------------------------------------------------------------------------
function holdOf(el) {
  const art = el.closest("[data-hold]");
  if (!art) return null;
  const t = state.tables[art.dataset.table];
  const h = art.dataset.kind === "correct" ? corrector(art.dataset.table)
    : t && t.pit.holds.find((x) => key(x) === art.dataset.hold);
  return h ? { table: art.dataset.table, hold: h } : null;
}

document.getElementById("pit").addEventListener("click", (e) => {
  const el = e.target.closest("button");
  if (el && el.dataset.testKey) {
    const table = el.dataset.testKey;
    act(table, { key: "status", hold: null, round_id: null }, "status").then((id) => { tested[table] = id; render(true); });
    return;
  }
  const at = el && holdOf(el);
  if (!at) return;
  const d = draft(at.hold);
  if (el.dataset.pick) d.cards.push(el.dataset.pick);
  else if ("undo" in el.dataset) d.cards.pop();
  else if ("clear" in el.dataset) d.cards = [];
  else if (at.hold.kind === "correct" && !d.reason.trim()) {
    // A correction voids a published round: the table wants its reason (5.6), not ours.
    document.querySelector(`[data-note="${CSS.escape(key(at.hold))}"]`).textContent = "give the reason first";
    return;
  } else if (el.dataset.action) { act(at.table, at.hold, el.dataset.action); return; }
  render(true);
});
document.getElementById("pit").addEventListener("input", (e) => {
  const at = holdOf(e.target);
  if (at && e.target.dataset.field) draft(at.hold)[e.target.dataset.field] = e.target.value;
  // The correction's button waits for a round and a reason: drawn again when they change.
  if (at && at.hold.kind === "correct" && e.target.tagName === "SELECT") render(true);
});
document.getElementById("pit").addEventListener("change", (e) => {
  const at = holdOf(e.target);
  if (at && at.hold.kind === "correct" && e.target.dataset.field) {
    draft(at.hold)[e.target.dataset.field] = e.target.value;
    render(true);
  }
});

// ---- enrolment -----------------------------------------------------------------------
function showKeys() {
  const known = JSON.parse(localStorage.getItem(KEYS) || "[]");
  document.getElementById("who").textContent = known.length
    ? `${known.length} security key(s) enrolled on this browser` : "no key on this browser yet";
}

document.getElementById("enrol-go").addEventListener("click", async () => {
  const name = document.getElementById("enrol-name").value.trim();
  const out = document.getElementById("enrol-out");
  if (!name) { out.value = "give your name first"; return; }
  const challenge = crypto.getRandomValues(new Uint8Array(32));
  try {
    const cred = await navigator.credentials.create({ publicKey: {
      challenge, rp: { id: location.hostname, name: "tabled pit" },
      user: { id: crypto.getRandomValues(new Uint8Array(16)), name, displayName: name },
      pubKeyCredParams: [{ type: "public-key", alg: -7 }, { type: "public-key", alg: -8 },
        { type: "public-key", alg: -257 }],
      authenticatorSelection: { residentKey: "preferred", userVerification: "discouraged" },
      attestation: "none", timeout: 60000,
    } });
    const known = JSON.parse(localStorage.getItem(KEYS) || "[]");
    localStorage.setItem(KEYS, JSON.stringify([...known, b64url(cred.rawId)]));
    out.value = JSON.stringify({ name, challenge: b64url(challenge), response: cred.toJSON() });
    out.dataset.ready = "1";
    showKeys();
  } catch (e) {
    out.value = `not enrolled: ${e.message}`;
  }
});

// ---- the table's messages --------------------------------------------------------------
function connect() {
  const es = new EventSource("/events");
  const link = document.getElementById("link");
  es.addEventListener("all", (e) => { state.tables = JSON.parse(e.data).tables; render(); });
  es.addEventListener("table", (e) => { const t = JSON.parse(e.data); state.tables[t.table] = t; render(); });
  es.addEventListener("meta", (e) => {
    const d = JSON.parse(e.data);
    const up = d.broker && d.broker.connected;
    link.className = `pill ${up ? "ok" : "bad"}`; link.dataset.link = up ? "connected" : "broker-down";
    link.textContent = up ? "connected" : "broker down";
  });
  es.onopen = () => { link.className = "pill ok"; link.dataset.link = "connected"; link.textContent = "connected"; };
  es.onerror = () => { link.className = "pill bad"; link.dataset.link = "display-down"; link.textContent = "reconnecting…"; };
}

fetch("/pit/table-of-play").then((r) => r.json()).then((r) => { rules = r; render(true); });
showKeys();
connect();
