/* The link layer, device side: spec section "Link layer", rule by rule. */
#include <string.h>

#include "tabled_device.h"

#define SEQ_MOD 256u
#define RTO_INITIAL_US 200000u
#define RTO_MAX_US 2000000u
#define RTO_FLOOR_US 20000u
#define RST_INTERVAL_MAX_US 250000u
#define SILENCE_TO_FAIL_US 5000000u

static int after_or_at(uint32_t now, uint32_t t) { return (int32_t)(now - t) >= 0; }

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void on_frame(void *ctx, const td_frame *f);

void td_link_init(td_link *l, uint32_t boot_id, uint8_t newest_version, uint32_t baud,
                  td_write_fn write, td_deliver_fn deliver, void *ctx)
{
    memset(l, 0, sizeof *l);
    l->boot_id = boot_id;
    l->origin = boot_id;  /* power-up's boot id: a link failure changes boot_id, not this */
    l->newest_version = newest_version;
    l->byte_us = (10000000u + baud - 1) / baud;
    l->write = write;
    l->deliver = deliver;
    l->ctx = ctx;
    /* Minimum RTO: twice a largest frame's time on the line plus 10 ms, at least 20 ms,
     * from the baud rate itself: byte_us rounded up made it 55.8 ms at 115200 baud, not
     * the spec's 55.7 (vectors_v3.txt, rto). */
    l->rto_min_us = (uint32_t)((2ull * TD_MAX_FRAME * 10000000ull + baud / 2u) / baud) + 10000u;
    if (l->rto_min_us < RTO_FLOOR_US)
        l->rto_min_us = RTO_FLOOR_US;
    l->rto_us = l->rto_min_us > RTO_INITIAL_US ? l->rto_min_us : RTO_INITIAL_US;
    l->state = TD_CONNECTING;
    td_decoder_init(&l->decoder, l->byte_us);
}

static size_t emit(td_link *l, td_frame *f)
{
    uint8_t raw[TD_MAX_FRAME];
    size_t n = td_frame_encode(f, raw);
    l->write(l->ctx, raw, n);
    return n;
}

static void control(td_link *l, uint8_t kind, uint8_t ack)
{
    td_frame f;
    memset(&f, 0, sizeof f);
    f.version = l->version;
    f.kind = kind;
    f.ack = ack;
    f.sess = l->sess;
    emit(l, &f);
}

/* Append the session that ended before (both boot ids) to a RST or RSTACK, with the
 * next SEQ this end had expected in it in the ACK field (spec: "Resuming"). */
static void name_session(td_frame *f, uint32_t own, uint32_t peer, uint8_t rx_next)
{
    put32(f->payload + f->len, own);
    put32(f->payload + f->len + 4, peer);
    f->len = (uint8_t)(f->len + 8);
    f->ack = rx_next;
}

static void send_rst(td_link *l, uint32_t now_us)
{
    td_frame f;
    memset(&f, 0, sizeof f);
    f.version = 1;  /* RST and RSTACK are always version 1 frames */
    f.kind = TD_RST;
    put32(f.payload, l->boot_id);
    f.payload[4] = l->newest_version;
    f.len = 5;
    if (l->have_named)
        name_session(&f, l->named_own, l->named_peer, l->named_rx_next);
    emit(l, &f);
    l->rst_due_us = now_us + l->rst_interval_us;
}

static void send_rstack(td_link *l, uint32_t boot, uint8_t version)
{
    td_frame f;
    memset(&f, 0, sizeof f);
    f.version = 1;
    f.kind = TD_RSTACK;
    put32(f.payload, boot);
    put32(f.payload + 4, l->boot_id);
    f.payload[8] = version;
    f.len = 9;
    if (l->answered_prev)
        name_session(&f, l->answered_own, l->answered_peer, l->answered_rx_next);
    emit(l, &f);
}

void td_link_connect(td_link *l, uint32_t now_us)
{
    l->state = TD_CONNECTING;
    l->line_free_us = now_us;
    l->rst_interval_us = l->rto_us;
    send_rst(l, now_us);
}

static td_out *queue_at(td_link *l, uint8_t i) { return &l->queue[(l->q_head + i) % TD_QUEUE]; }

/* A device holds at most TD_QUEUE messages it accepted and the host has not acknowledged,
 * queued or in flight (spec: "A full queue"). Counting the window in keeps room for it in
 * the queue, so a new session can always re-queue what the host did not receive: evicting
 * a queued message there lost messages the caller had been told were taken. */
static int push_back(td_link *l, const td_out *o)
{
    if (l->q_len + l->n_unacked >= TD_QUEUE) {
        l->refused++;
        return -1;
    }
    *queue_at(l, l->q_len) = *o;
    l->q_len++;
    return 0;
}

static void push_front(td_link *l, const td_out *o)
{
    /* Never full here: push_back left room for every frame in flight. */
    l->q_head = (uint8_t)((l->q_head + TD_QUEUE - 1) % TD_QUEUE);
    l->queue[l->q_head] = *o;
    l->q_len++;
}

static void send_data(td_link *l, td_flight *fl, uint32_t now_us)
{
    td_frame f;
    size_t n;
    f.version = l->version;
    f.kind = TD_DATA;
    f.seq = fl->seq;
    f.ack = l->rx_next;
    f.msg = fl->out.msg;
    f.sess = l->sess;
    f.len = fl->out.len;
    if (l->version >= TD_STAMPED_FROM) {  /* the stamp it was given when taken, every time */
        td_stamp_encode(l->origin, fl->out.num, fl->out.re, f.payload);
        f.len = (uint8_t)(f.len + TD_STAMP);
    }
    memcpy(f.payload + (f.len - fl->out.len), fl->out.payload, fl->out.len);
    n = emit(l, &f);
    /* The RTO runs from when the frame's last byte leaves the line. */
    /* Wrapping time compares right only within 35 minutes: a line idle longer, or never
     * used, is free now. */
    if (!after_or_at(l->line_free_us, now_us) || l->line_free_us - now_us > 10000000u)
        l->line_free_us = now_us;
    l->line_free_us += (uint32_t)n * l->byte_us;
    fl->sent_us = l->line_free_us;
}

static void fill_window(td_link *l, uint32_t now_us)
{
    if (l->state != TD_ESTABLISHED)
        return;
    while (l->q_len && l->n_unacked < TD_WINDOW) {
        td_flight *fl = &l->unacked[l->n_unacked++];
        fl->out = l->queue[l->q_head];
        l->q_head = (uint8_t)((l->q_head + 1) % TD_QUEUE);
        l->q_len--;
        fl->seq = l->tx_next;
        l->tx_next = (uint8_t)(l->tx_next + 1);
        fl->resent = 0;
        send_data(l, fl, now_us);
    }
}

static void resend_all(td_link *l, uint32_t now_us)
{
    uint8_t i;
    for (i = 0; i < l->n_unacked; i++) {
        l->unacked[i].resent = 1;
        l->retransmitted++;
        send_data(l, &l->unacked[i], now_us);
    }
}

static void drop_unacked(td_link *l, uint8_t k)
{
    memmove(l->unacked, l->unacked + k, (size_t)(l->n_unacked - k) * sizeof l->unacked[0]);
    l->n_unacked = (uint8_t)(l->n_unacked - k);
}

static void sample_rtt(td_link *l, uint32_t rtt)
{
    uint32_t diff;
    if ((int32_t)rtt < 0)
        rtt = 0;
    if (!l->have_srtt) {
        l->srtt_us = rtt;
        l->rttvar_us = rtt / 2;
        l->have_srtt = 1;
    } else {
        diff = l->srtt_us > rtt ? l->srtt_us - rtt : rtt - l->srtt_us;
        l->rttvar_us = (3u * l->rttvar_us + diff) / 4u;
        l->srtt_us = (7u * l->srtt_us + rtt) / 8u;
    }
    l->rto_us = l->srtt_us + 4u * l->rttvar_us;
    if (l->rto_us < l->rto_min_us) l->rto_us = l->rto_min_us;
    if (l->rto_us > RTO_MAX_US) l->rto_us = RTO_MAX_US;
}

/* The RTO estimate: SRTT + 4 RTTVAR, or the minimum RTO before the first sample. */
static uint32_t estimate(const td_link *l)
{
    uint32_t e = l->have_srtt ? l->srtt_us + 4u * l->rttvar_us : l->rto_min_us;
    if (e < l->rto_min_us) e = l->rto_min_us;
    return e > RTO_MAX_US ? RTO_MAX_US : e;
}

static void on_ack(td_link *l, uint8_t ack, uint32_t now_us)
{
    uint8_t k = 0, d;
    if (!l->n_unacked)
        return;
    d = (uint8_t)(ack - l->unacked[0].seq);
    if (d == 0 || d > l->n_unacked)
        return;  /* acknowledges nothing */
    for (k = 0; k < d; k++)
        if (!l->unacked[k].resent)  /* Karn: no samples from resent frames */
            sample_rtt(l, now_us - l->unacked[k].sent_us);
    drop_unacked(l, d);
    l->retries = 0;
    l->rto_us = estimate(l);  /* progress ends the doubling */
}

/* The session ends: keep it to check the peer's resume fields against, and name it from
 * now on if a DATA frame arrived in it (spec: "Resuming": a session that carried nothing
 * may be one the peer never established). */
static void end_session(td_link *l)
{
    l->have_prev = 1;
    l->prev_own = l->boot_id;
    l->prev_peer = l->peer_boot;
    l->prev_rx_next = l->rx_next;
    if (l->carried) {
        l->have_named = 1;
        l->named_own = l->boot_id;
        l->named_peer = l->peer_boot;
        l->named_rx_next = l->rx_next;
        l->carried = 0;
    }
}

/* A new session with peer `boot`. The session before (if any) is named by the peer's
 * RST/RSTACK: what it says it received is dropped, the rest is re-sent first. */
static void reset_session(td_link *l, uint32_t boot, uint8_t version, const uint8_t *resume,
                          uint8_t resume_ack, uint32_t now_us)
{
    uint8_t received = 0, i;
    if (l->state == TD_ESTABLISHED)
        end_session(l);
    if (l->have_prev && resume && get32(resume) == l->prev_peer &&
        get32(resume + 4) == l->prev_own && l->n_unacked) {
        received = (uint8_t)(resume_ack - l->unacked[0].seq);
        if (received > l->n_unacked)
            received = 0;
    }
    l->confirmed += received;
    drop_unacked(l, received);
    for (i = l->n_unacked; i > 0; i--)  /* re-send, in the old order, before newer ones */
        push_front(l, &l->unacked[i - 1].out);
    l->n_unacked = 0;
    l->have_prev = 0;
    l->carried = 0;
    l->tx_next = l->rx_next = 0;
    l->nak_sent = 0;
    l->retries = 0;
    l->peer_boot = boot;
    l->heard_us = now_us;
    l->version = version;
    l->sess = version >= 2 ? (uint8_t)((l->boot_id ^ boot) & 0xFFu) : 0;
    l->state = TD_ESTABLISHED;
    if (l->on_session)
        l->on_session(l->ctx, version, boot);
}

static void on_rst(td_link *l, const td_frame *f, uint32_t now_us)
{
    uint32_t boot;
    uint8_t offered, version;
    if (f->len < 4)
        return;
    boot = get32(f->payload);
    offered = f->len >= 5 ? f->payload[4] : 1;
    if (offered < 1)
        return;
    version = offered < l->newest_version ? offered : l->newest_version;
    if (l->state == TD_ESTABLISHED && boot == l->peer_boot) {
        send_rstack(l, boot, l->version);  /* a duplicate: answer again, change nothing */
        return;
    }
    /* The RSTACK names the last session that carried anything, this one included. */
    if (l->state == TD_ESTABLISHED) {
        end_session(l);
        l->state = TD_CONNECTING;  /* ended: reset_session must not end it again */
    }
    l->answered_prev = l->have_named;
    l->answered_own = l->named_own;
    l->answered_peer = l->named_peer;
    l->answered_rx_next = l->named_rx_next;
    reset_session(l, boot, version, f->len >= 13 ? f->payload + 5 : NULL, f->ack, now_us);
    send_rstack(l, boot, version);
    fill_window(l, now_us);
}

static void on_rstack(td_link *l, const td_frame *f, uint32_t now_us)
{
    uint32_t acked, boot;
    uint8_t chosen;
    if (f->len < 8)
        return;
    acked = get32(f->payload);
    boot = get32(f->payload + 4);
    chosen = f->len >= 9 ? f->payload[8] : 1;
    if (acked != l->boot_id || chosen < 1 || chosen > l->newest_version)
        return;
    if (l->state == TD_ESTABLISHED && boot == l->peer_boot)
        return;
    reset_session(l, boot, chosen, f->len >= 17 ? f->payload + 9 : NULL, f->ack, now_us);
    fill_window(l, now_us);
}

static void on_data(td_link *l, const td_frame *f, uint32_t now_us)
{
    uint8_t behind;
    if (f->seq == l->rx_next) {
        l->carried = 1;
        l->rx_next = (uint8_t)(l->rx_next + 1);
        l->nak_sent = 0;
        control(l, TD_ACK, l->rx_next);
        if (l->version < TD_STAMPED_FROM) {
            l->rx_num = l->rx_origin = 0;
            l->deliver(l->ctx, f->msg, f->payload, f->len);
        } else if (f->len < TD_STAMP) {
            l->unstamped++;  /* received, so acknowledged; but no message to act on */
        } else {
            l->rx_origin = get32(f->payload);
            l->rx_num = get32(f->payload + 4);
            l->deliver(l->ctx, f->msg, f->payload + TD_STAMP, f->len - TD_STAMP);
        }
        return;
    }
    behind = (uint8_t)(l->rx_next - f->seq);
    if (behind < SEQ_MOD / 2) {  /* old: a duplicate */
        control(l, TD_ACK, l->rx_next);
    } else if (!l->nak_sent || !((int32_t)(now_us - l->nak_at_us) < (int32_t)l->rto_min_us)) {
        /* ahead: a NAK, again only if the gap is still open a minimum RTO later. This
         * receiver keeps no frames past a gap (the spec's "may"): the sender resends them. */
        l->nak_sent = 1;
        l->nak_at_us = now_us;
        control(l, TD_NAK, l->rx_next);
    }
}

typedef struct {
    td_link *l;
    uint32_t now_us;
} rx_ctx;

static void on_frame(void *ctx, const td_frame *f)
{
    rx_ctx *rx = (rx_ctx *)ctx;
    td_link *l = rx->l;
    if (f->kind == TD_RST) {
        on_rst(l, f, rx->now_us);
        return;
    }
    if (f->kind == TD_RSTACK) {
        on_rstack(l, f, rx->now_us);
        return;
    }
    if (l->state != TD_ESTABLISHED || f->version != l->version || f->sess != l->sess) {
        l->stale++;  /* before the session, or of another: its sender sends it again */
        return;
    }
    l->retries = 0;  /* the peer is there: timeouts fail the link only while it is silent */
    l->heard_us = rx->now_us;
    on_ack(l, f->ack, rx->now_us);
    if (f->kind == TD_DATA) {
        on_data(l, f, rx->now_us);
    } else if (f->kind == TD_NAK && l->n_unacked && l->unacked[0].seq == f->ack) {
        resend_all(l, rx->now_us);
    }
    fill_window(l, rx->now_us);
}

void td_link_receive(td_link *l, const uint8_t *bytes, size_t len, uint32_t now_us)
{
    rx_ctx rx;
    rx.l = l;
    rx.now_us = now_us;
    td_decoder_feed(&l->decoder, bytes, len, now_us, 0, on_frame, &rx);
}

int td_link_send_out(td_link *l, td_out *o, uint32_t now_us)
{
    if (o->len > TD_MAX_MESSAGE)
        return -1;
    /* Numbered when taken (spec: "Event identity"): a message refused takes no number,
     * and one re-sent in a later session keeps the one it has. */
    o->num = l->events + (td_msg_is_event(o->msg) ? 1u : 0u);
    if (push_back(l, o) != 0)
        return -1;
    l->events = o->num;
    fill_window(l, now_us);
    return 0;
}

int td_link_send(td_link *l, uint8_t msg, const uint8_t *payload, size_t len, uint32_t now_us)
{
    td_out o;
    if (len > TD_MAX_MESSAGE)
        return -1;
    o.msg = msg;
    o.len = (uint8_t)len;
    o.re = 0;
    memcpy(o.payload, payload, len);
    return td_link_send_out(l, &o, now_us);
}

void td_stamp_encode(uint32_t origin, uint32_t num, uint32_t re, uint8_t out[TD_STAMP])
{
    put32(out, origin);
    put32(out + 4, num);
    put32(out + 8, re);
}

void td_carried_add(td_carried *c, uint32_t origin, uint32_t num)
{
    if (td_carried_has(c, origin, num))
        return;  /* answered again: kept once */
    c->origin[c->next] = origin;
    c->num[c->next] = num;
    c->next = (c->next + 1) % TD_CARRIED;
    if (c->n < TD_CARRIED)
        c->n++;
}

int td_carried_has(const td_carried *c, uint32_t origin, uint32_t num)
{
    int i;
    for (i = 0; i < c->n; i++)
        if (c->origin[i] == origin && c->num[i] == num)
            return 1;
    return 0;
}

int td_link_send_msg(td_link *l, const td_msg *m, uint32_t now_us)
{
    uint8_t payload[TD_MAX_PAYLOAD];
    int n = td_msg_encode(m, payload, sizeof payload);
    if (n < 0)
        return -1;
    return td_link_send(l, m->def->id, payload, (size_t)n, now_us);
}

void td_link_poll(td_link *l, uint32_t now_us, uint32_t new_boot_id)
{
    td_link_receive(l, NULL, 0, now_us);  /* gives up a stalled candidate frame */
    if (l->state == TD_CONNECTING) {
        if (after_or_at(now_us, l->rst_due_us)) {
            l->rst_interval_us *= 2;
            if (l->rst_interval_us > RST_INTERVAL_MAX_US)
                l->rst_interval_us = RST_INTERVAL_MAX_US;
            send_rst(l, now_us);
        }
        return;
    }
    if (l->state == TD_FAILED) {
        l->boot_id = new_boot_id;  /* the peer would take the old id for a duplicate */
        l->rto_us = l->rto_min_us > RTO_INITIAL_US ? l->rto_min_us : RTO_INITIAL_US;
        td_link_connect(l, now_us);
        return;
    }
    if (!l->n_unacked || !after_or_at(now_us, l->unacked[0].sent_us + l->rto_us))
        return;
    l->timeouts++;
    l->retries++;
    if (l->retries >= TD_MAX_RETRIES && (uint32_t)(now_us - l->heard_us) >= SILENCE_TO_FAIL_US) {
        /* the 8th timeout in a row, with the peer silent for 5 s, fails the link */
        l->failures++;
        end_session(l);
        l->state = TD_FAILED;
        td_link_poll(l, now_us, new_boot_id);  /* a new session at once */
        return;
    }
    /* Double, up to four times the estimate: short rounds on a noisy line. */
    l->rto_us *= 2;
    if (l->rto_us > 4u * estimate(l))
        l->rto_us = 4u * estimate(l);
    if (l->rto_us > RTO_MAX_US)
        l->rto_us = RTO_MAX_US;
    resend_all(l, now_us);
}

int td_link_room(const td_link *l)
{
    return TD_QUEUE - l->q_len - l->n_unacked;
}
