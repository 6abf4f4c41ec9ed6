/*
 * tabled device protocol: a reference implementation of the device side, in C99.
 *
 * Written from firmware_protocols/shoe.md, shuffler.md and tumbler.md (the generated
 * specs), not from the Python: it is the proof that the specs suffice. No heap, no
 * globals, fixed buffers; time is passed in (microseconds, wrapping), bytes go out
 * through a callback. One td_link per serial line.
 */
#ifndef TABLED_DEVICE_H
#define TABLED_DEVICE_H

#include <stddef.h>
#include <stdint.h>

/* -- framing (spec: "Framing") ------------------------------------------------------ */

#define TD_SOF 0x7Eu
#define TD_HEADER 8u          /* SOF VER KIND SEQ ACK MSG LEN HCHK, in every version */
#define TD_MAX_PAYLOAD 250u
#define TD_MAX_FRAME 263u     /* versions 2 and 3: header, SESS, 250 payload, CRC-32 */
#define TD_NEWEST_VERSION 3u
/* Version 3 (spec: "Event identity"): every DATA payload starts with a stamp, ORIGIN NUM
 * RE (u32 each, big-endian), so a message's own bytes are 238 at most, in every version. */
#define TD_STAMPED_FROM 3u
#define TD_STAMP 12u
#define TD_MAX_MESSAGE (TD_MAX_PAYLOAD - TD_STAMP)

enum td_kind { TD_DATA = 0, TD_ACK = 1, TD_NAK = 2, TD_RST = 3, TD_RSTACK = 4 };

uint16_t td_crc16(const uint8_t *data, size_t len);  /* CRC-16/CCITT-FALSE */
uint32_t td_crc32(const uint8_t *data, size_t len);  /* CRC-32/ISO-HDLC */

typedef struct {
    uint8_t version, kind, seq, ack, msg, sess;
    uint8_t len;
    uint8_t payload[TD_MAX_PAYLOAD];
} td_frame;

/* Encode into out (at least TD_MAX_FRAME bytes); returns the frame's length, 0 if the
 * version is not 1 to TD_NEWEST_VERSION. */
size_t td_frame_encode(const td_frame *f, uint8_t *out);

typedef void (*td_frame_fn)(void *ctx, const td_frame *f);

/* The receiver: bytes in, whole valid frames out (spec: "Receiving"). */
typedef struct {
    uint8_t buf[2 * TD_MAX_FRAME];
    size_t n;
    uint32_t since_us;  /* when the candidate at buf[0] was first seen */
    int waiting;        /* a candidate is incomplete since since_us */
    uint32_t byte_us;   /* the line's microseconds per byte (10e6 / baud) */
    uint32_t frames, errors, foreign_versions;
} td_decoder;

void td_decoder_init(td_decoder *d, uint32_t byte_us);
/* Feed bytes received at now_us; every frame completed is passed to fn. With
 * stalled != 0 the caller says no more bytes are coming (a captured stream). */
void td_decoder_feed(td_decoder *d, const uint8_t *data, size_t len, uint32_t now_us,
                     int stalled, td_frame_fn fn, void *ctx);

/* -- messages (spec: "Types" and the message tables) -------------------------------- */

enum td_type {
    TD_U8, TD_U16, TD_U32, TD_U64, TD_BOOL, TD_STR, TD_CARD, TD_CARDS, TD_U8N, TD_U16N,
    TD_BYTESN
};

#define TD_MAX_FIELDS 7
#define TD_MAX_VALUE_BYTES 200  /* card[] of 100 cards */

typedef struct {
    uint8_t type; /* enum td_type */
    uint8_t n;    /* N of u8[N], u16[N], bytes[N] */
} td_field;

typedef struct {
    uint8_t id;
    const char *name;
    uint8_t nfields;
    td_field fields[TD_MAX_FIELDS];
} td_msgdef;

typedef struct {
    uint64_t u;                         /* integers and bools */
    uint8_t len;                        /* str bytes, card[] count, array length */
    uint8_t bytes[TD_MAX_VALUE_BYTES];  /* str, card, card[] (2 bytes a card), u8[N], bytes[N] */
    uint16_t u16s[8];                   /* u16[N] */
} td_value;

typedef struct {
    const td_msgdef *def;
    td_value v[TD_MAX_FIELDS];
} td_msg;

const td_msgdef *td_msgdef_find(uint8_t id);  /* every message of every device */
const td_msgdef *td_msgdef_named(const char *name);
/* Version 3: whether a device's message is an event, which takes the next event number;
 * heartbeat and the four direct answers carry the last number given instead. */
int td_msg_is_event(uint8_t id);
/* Spec: "Commands a device does not carry out". What a device of `kind` (1 shoe,
 * 2 shuffler, 3 tumbler) answers the decoded message `m` with before its own state
 * counts: 1 (unknown command) for another device's command, 2 (bad argument) for a value
 * outside the command's values; 0 for its own command, to carry out; -1 for a message
 * that is no command (a device's), dropped unanswered like an id in no spec. */
int td_command_refusal(int kind, const td_msg *m);
void td_msg_init(td_msg *m, const td_msgdef *def);
/* Encode; returns the payload length, or -1 naming no reason (a value out of its type). */
int td_msg_encode(const td_msg *m, uint8_t *out, size_t cap);
/* Decode; 0 on success, else -1 (short payload, bool not 0/1, bad UTF-8, bad card, count
 * too large). Bytes after the last field are ignored (spec: forward compatibility). */
int td_msg_decode(td_msg *m, const td_msgdef *def, const uint8_t *payload, size_t len);

/* -- link layer, device side (spec: "Link layer") ----------------------------------- */

#define TD_WINDOW 8
#define TD_QUEUE 24  /* messages accepted and not yet acknowledged, at most (> TD_WINDOW) */
#define TD_MAX_RETRIES 8

typedef struct {
    uint8_t msg, len;
    uint32_t num;  /* version 3: given when the link accepts it, kept when it is re-sent */
    uint32_t re;   /* version 3: the NUM of the host's command this answers, else 0 */
    uint8_t payload[TD_MAX_MESSAGE];
} td_out;

typedef struct {
    td_out out;
    uint8_t seq;
    uint8_t resent;
    uint32_t sent_us;
} td_flight;

enum td_state { TD_CONNECTING, TD_ESTABLISHED, TD_FAILED };

typedef void (*td_write_fn)(void *ctx, const uint8_t *bytes, size_t len);
typedef void (*td_deliver_fn)(void *ctx, uint8_t msg, const uint8_t *payload, size_t len);
typedef void (*td_session_fn)(void *ctx, int version, uint32_t peer_boot);

typedef struct {
    /* configuration */
    uint8_t newest_version;  /* 1 to TD_NEWEST_VERSION */
    uint32_t byte_us;
    td_write_fn write;
    td_deliver_fn deliver;
    td_session_fn on_session;  /* may be NULL */
    void *ctx;
    /* state */
    int state;
    uint32_t boot_id, peer_boot;
    uint8_t version, sess, tx_next, rx_next, nak_sent, retries;
    td_flight unacked[TD_WINDOW];
    uint8_t n_unacked;
    td_out queue[TD_QUEUE];
    uint8_t q_head, q_len;
    uint32_t rto_us, rto_min_us, srtt_us, rttvar_us;
    int have_srtt;
    uint32_t rst_due_us, rst_interval_us, line_free_us, nak_at_us, heard_us;
    /* the session before (spec: "Resuming"): what is re-sent is checked against it */
    int have_prev;
    uint32_t prev_own, prev_peer;
    uint8_t prev_rx_next;
    /* the last session in which a DATA frame arrived: the one RST and RSTACK name */
    int carried;  /* one arrived in this session */
    int have_named;
    uint32_t named_own, named_peer;
    uint8_t named_rx_next;
    int answered_prev;  /* what our last RSTACK named, to repeat it for a duplicate RST */
    uint32_t answered_own, answered_peer;
    uint8_t answered_rx_next;
    /* version 3 (spec: "Event identity"): ORIGIN is the boot id this link started with,
     * kept after a link failure; events counts the event numbers given, across sessions */
    uint32_t origin, events;
    uint32_t rx_num;  /* the NUM of the last message delivered (version 3), else 0 */
    uint32_t rx_origin;  /* and its ORIGIN */
    /* counters */
    uint32_t retransmitted, timeouts, stale, failures, confirmed, refused, unstamped;
    td_decoder decoder;
} td_link;

void td_link_init(td_link *l, uint32_t boot_id, uint8_t newest_version, uint32_t baud,
                  td_write_fn write, td_deliver_fn deliver, void *ctx);
void td_link_connect(td_link *l, uint32_t now_us);
/* Queue a message; 0, or -1 at once when the device already holds TD_QUEUE messages
 * not yet acknowledged (the message is not taken: the caller keeps it and tries again
 * once td_link_room says there is room) or it is longer than TD_MAX_MESSAGE. A message
 * taken is never dropped. Taking it gives it its number (td_msg_is_event). */
int td_link_send(td_link *l, uint8_t msg, const uint8_t *payload, size_t len, uint32_t now_us);
/* The same for a message that answers the host's command numbered o->re (version 3: the
 * RE of its stamp; read it from rx_num while the command is delivered); o->num is set. */
int td_link_send_out(td_link *l, td_out *o, uint32_t now_us);
void td_link_receive(td_link *l, const uint8_t *bytes, size_t len, uint32_t now_us);
/* How many more messages td_link_send would take now. */
int td_link_room(const td_link *l);
/* Timers: call at least every few milliseconds. After a failure it starts a new session
 * under new_boot_id (the caller's random number); ORIGIN and event numbers stay. */
void td_link_poll(td_link *l, uint32_t now_us, uint32_t new_boot_id);
int td_link_send_msg(td_link *l, const td_msg *m, uint32_t now_us);
/* The stamp's twelve bytes (spec: "Event identity"). */
void td_stamp_encode(uint32_t origin, uint32_t num, uint32_t re, uint8_t out[TD_STAMP]);

/* Version 3: the host commands a device carried out (answered ok), by the host's ORIGIN
 * and NUM, the newest TD_CARRIED. A command sent again because its answer was lost keeps
 * its stamp: one found here is answered ok again and not carried out twice (spec:
 * "Commands and replies"). */
#define TD_CARRIED 16
typedef struct {
    uint32_t origin[TD_CARRIED], num[TD_CARRIED];
    int next, n;
} td_carried;

void td_carried_add(td_carried *c, uint32_t origin, uint32_t num);
int td_carried_has(const td_carried *c, uint32_t origin, uint32_t num);

/* -- SHA-256 (FIPS 180-4) and the shuffler's commitment (spec: shuffle_complete) ----- */

typedef struct {
    uint32_t h[8];
    uint64_t bytes;    /* hashed so far */
    uint8_t buf[64];   /* a block being filled */
    size_t used;
} td_sha256;

void td_sha256_init(td_sha256 *s);
void td_sha256_update(td_sha256 *s, const uint8_t *data, size_t len);
void td_sha256_final(td_sha256 *s, uint8_t out[32]);

/* The session version from which a shuffler's commitment binds decks and total. */
#define TD_COMMITMENT_V3_FROM 3u
/* The commitment a shuffler in a session of `version` makes to `total` cards (two ASCII
 * bytes each) shuffled from `decks` decks. */
void td_commitment(uint8_t version, uint32_t shuffle_id, uint8_t decks, const uint8_t nonce[16],
                   const char (*cards)[2], uint16_t total, uint8_t out[32]);

#endif
