/* The shared byte vectors (firmware_protocols/vectors.txt) against the C library, and two
 * C links over a lossy, corrupting line: every message once, in order.
 * Usage: test_vectors path/to/vectors.txt */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/tabled_device.h"

static int failures, checks;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        checks++;                                                          \
        if (!(cond)) {                                                     \
            failures++;                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);           \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    if (strcmp(s, "-") == 0)
        return 0;
    while (s[0] && s[1] && n < cap) {
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static void tohex(const uint8_t *p, size_t n, char *out)
{
    size_t i;
    for (i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
    out[2 * n] = 0;
}

#define MAX_TOKENS 64
static char *tokens[MAX_TOKENS];

static int split(char *line)
{
    int n = 0;
    char *t = strtok(line, " \n");
    while (t && n < MAX_TOKENS) {
        tokens[n++] = t;
        t = strtok(NULL, " \n");
    }
    return n;
}

/* -- collecting decoded frames -- */
#define MAX_GOT 16
static td_frame got[MAX_GOT];
static int n_got;

static void collect(void *ctx, const td_frame *f)
{
    (void)ctx;
    if (n_got < MAX_GOT)
        got[n_got++] = *f;
}

static int decode_all(const uint8_t *data, size_t n)
{
    td_decoder d;
    td_decoder_init(&d, 87);
    n_got = 0;
    td_decoder_feed(&d, data, n, 0, 1, collect, NULL);
    return n_got;
}

static const char *TYPE_NAMES[] = {"u8", "u16", "u32", "u64", "bool", "str", "card", "card[]",
                                   "u8[", "u16[", "bytes["};

static int type_matches(const td_field *f, const char *name)
{
    char want[16];
    if (f->type >= TD_U8N) {
        sprintf(want, "%s%u]", TYPE_NAMES[f->type], f->n);
        return strcmp(want, name) == 0;
    }
    return strcmp(TYPE_NAMES[f->type], name) == 0;
}

static int parse_value(const td_field *f, const char *text, td_value *v)
{
    memset(v, 0, sizeof *v);
    switch (f->type) {
    case TD_STR: case TD_U8N: case TD_BYTESN:
        v->len = (uint8_t)unhex(text, v->bytes, sizeof v->bytes);
        return 0;
    case TD_CARD:
        if (strlen(text) != 2) return -1;
        memcpy(v->bytes, text, 2);
        v->len = 2;
        return 0;
    case TD_CARDS:
        if (strcmp(text, "-") == 0) return 0;
        v->len = (uint8_t)(strlen(text) / 2);
        memcpy(v->bytes, text, strlen(text));
        return 0;
    case TD_U16N: {
        const char *p = text;
        while (*p && v->len < 8) {
            v->u16s[v->len++] = (uint16_t)strtoul(p, (char **)&p, 10);
            if (*p == ',') p++;
        }
        return 0;
    }
    default:
        v->u = strtoull(text, NULL, 10);
        return 0;
    }
}

static int same_value(const td_field *f, const td_value *a, const td_value *b)
{
    switch (f->type) {
    case TD_STR: case TD_CARD: case TD_U8N: case TD_BYTESN:
        return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
    case TD_CARDS:
        return a->len == b->len && memcmp(a->bytes, b->bytes, 2u * a->len) == 0;
    case TD_U16N:
        return a->len == b->len && memcmp(a->u16s, b->u16s, a->len * sizeof a->u16s[0]) == 0;
    default:
        return a->u == b->u;
    }
}

static void check_msg(int n)
{
    const td_msgdef *def = td_msgdef_named(tokens[3]);
    td_msg m, back;
    uint8_t payload[TD_MAX_PAYLOAD + 8], enc[TD_MAX_PAYLOAD], raw[TD_MAX_FRAME];
    size_t plen, rawlen;
    int eq, i, len, v;
    CHECK(def != NULL, "unknown message %s", tokens[3]);
    if (!def) return;
    CHECK(def->id == strtoul(tokens[2], NULL, 16), "%s: id %s", def->name, tokens[2]);
    for (eq = 4; eq < n && strcmp(tokens[eq], "="); eq++) {}
    CHECK(eq - 4 == def->nfields, "%s: %d fields in the vector, %d here", def->name, eq - 4,
          def->nfields);
    td_msg_init(&m, def);
    for (i = 0; i < def->nfields && 4 + i < eq; i++) {
        char *colon = strchr(tokens[4 + i], ':');
        *colon = 0;
        CHECK(type_matches(&def->fields[i], tokens[4 + i]), "%s field %d: %s", def->name, i,
              tokens[4 + i]);
        parse_value(&def->fields[i], colon + 1, &m.v[i]);
    }
    plen = unhex(tokens[eq + 1], payload, sizeof payload);
    len = td_msg_encode(&m, enc, sizeof enc);
    CHECK(len == (int)plen && memcmp(enc, payload, plen) == 0, "%s: encodes differently",
          def->name);
    CHECK(td_msg_decode(&back, def, payload, plen) == 0, "%s: does not decode", def->name);
    for (i = 0; i < def->nfields; i++)
        CHECK(same_value(&def->fields[i], &m.v[i], &back.v[i]), "%s field %d decodes wrong",
              def->name, i);
    /* forward compatibility: trailing bytes ignored */
    payload[plen] = 0x00;
    payload[plen + 1] = 0x07;
    CHECK(td_msg_decode(&back, def, payload, plen + 2) == 0, "%s: trailing bytes refused",
          def->name);
    if (plen)
        CHECK(td_msg_decode(&back, def, payload, plen - 1) != 0, "%s: truncated accepted",
              def->name);
    for (v = 1; v <= 2; v++) {
        rawlen = unhex(tokens[eq + 1 + v], raw, sizeof raw);
        CHECK(decode_all(raw, rawlen) == 1 && got[0].version == v && got[0].kind == TD_DATA &&
              got[0].msg == def->id && got[0].len == plen &&
              memcmp(got[0].payload, payload, plen) == 0,
              "%s: v%d frame", def->name, v);
    }
}

static void check_frame(void)
{
    td_frame f;
    uint8_t raw[TD_MAX_FRAME], want[TD_MAX_FRAME];
    size_t n, wn;
    memset(&f, 0, sizeof f);
    f.version = (uint8_t)atoi(tokens[1]);
    f.kind = (uint8_t)atoi(tokens[2]);
    f.seq = (uint8_t)atoi(tokens[3]);
    f.ack = (uint8_t)atoi(tokens[4]);
    f.msg = (uint8_t)atoi(tokens[5]);
    f.sess = (uint8_t)atoi(tokens[6]);
    f.len = (uint8_t)unhex(tokens[7], f.payload, sizeof f.payload);
    n = td_frame_encode(&f, raw);
    wn = unhex(tokens[8], want, sizeof want);
    CHECK(n == wn && memcmp(raw, want, n) == 0, "frame %s encodes differently", tokens[8]);
    CHECK(decode_all(want, wn) == 1 && got[0].kind == f.kind && got[0].seq == f.seq &&
          got[0].ack == f.ack && got[0].sess == f.sess && got[0].len == f.len &&
          memcmp(got[0].payload, f.payload, f.len) == 0, "frame %s decodes wrong", tokens[8]);
}

static void check_stream(void)
{
    static uint8_t data[2048];
    uint8_t raw[TD_MAX_FRAME];
    char hexed[2 * TD_MAX_FRAME + 1];
    size_t n = unhex(tokens[1], data, sizeof data);
    int count = decode_all(data, n), i = 0;
    char *want = strcmp(tokens[2], "-") == 0 ? NULL : strtok(tokens[2], ",");
    for (; want; want = strtok(NULL, ","), i++) {
        CHECK(i < count, "stream %.16s: frame %d missing", tokens[1], i);
        if (i >= count) return;
        tohex(raw, td_frame_encode(&got[i], raw), hexed);
        CHECK(strcmp(hexed, want) == 0, "stream %.16s: frame %d is %s", tokens[1], i, hexed);
    }
    CHECK(i == count, "stream %.16s: %d frames, expected %d", tokens[1], count, i);
}

static void check_crc(void)
{
    uint8_t data[256];
    size_t n = unhex(tokens[2], data, sizeof data);
    unsigned long want = strtoul(tokens[3], NULL, 16);
    if (strcmp(tokens[1], "crc16") == 0)
        CHECK(td_crc16(data, n) == want, "crc16 of %s", tokens[2]);
    else
        CHECK(td_crc32(data, n) == want, "crc32 of %s", tokens[2]);
}

/* -- two C links over a bad line ------------------------------------------------------ */

typedef struct {
    td_link link;
    struct pipe *to;
    uint8_t received[400];
    int n_received;
    int cut;  /* this end's transmit wire is cut: everything it writes is lost */
} end;

struct pipe {
    uint8_t buf[65536];
    size_t n;
};

static uint32_t rng = 12345;
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static double loss, flip;

static void line_write(void *ctx, const uint8_t *b, size_t n)
{
    end *e = (end *)ctx;
    size_t i;
    for (i = 0; i < n && !e->cut && e->to->n < sizeof e->to->buf; i++) {
        uint8_t byte = b[i];
        if ((next_rand() % 100000) < loss * 100000)
            continue;
        if ((next_rand() % 100000) < flip * 100000)
            byte ^= (uint8_t)(1u << (next_rand() % 8));
        e->to->buf[e->to->n++] = byte;
    }
}

static void deliver(void *ctx, uint8_t msg, const uint8_t *p, size_t n)
{
    end *e = (end *)ctx;
    (void)msg;
    if (n == 1 && e->n_received < 400)
        e->received[e->n_received++] = p[0];
}

static void link_test(double l, double f, uint8_t va, uint8_t vb, uint32_t start)
{
    static end a, b;
    static struct pipe ab, ba;
    uint32_t now = start;  /* a device's clock wraps (uint32 microseconds: 71 minutes) */
    int i, sent = 0, sent_b = 0, ok = 1;
    loss = l;
    flip = f;
    memset(&ab, 0, sizeof ab);
    memset(&ba, 0, sizeof ba);
    a.to = &ab;
    b.to = &ba;
    a.n_received = b.n_received = 0;
    td_link_init(&a.link, 0xA, va, 115200, line_write, deliver, &a);
    td_link_init(&b.link, 0xB, vb, 115200, line_write, deliver, &b);
    td_link_connect(&a.link, now);
    td_link_connect(&b.link, now);
    for (i = 0; i < 200000 && (b.n_received < 300 || a.n_received < 300); i++) {
        uint8_t byte;
        now += 500;
        if (sent < 300 && (i % 4) == 0) {  /* a full queue refuses: try again later */
            byte = (uint8_t)sent;
            if (td_link_send(&a.link, 1, &byte, 1, now) == 0)
                sent++;
        }
        if (sent_b < 300 && (i % 4) == 0) {
            byte = (uint8_t)sent_b;
            if (td_link_send(&b.link, 2, &byte, 1, now) == 0)
                sent_b++;
        }
        td_link_receive(&b.link, ab.buf, ab.n, now);
        ab.n = 0;
        td_link_receive(&a.link, ba.buf, ba.n, now);
        ba.n = 0;
        td_link_poll(&a.link, now, next_rand());
        td_link_poll(&b.link, now, next_rand());
    }
    for (i = 0; i < 300; i++)
        ok = ok && i < b.n_received && b.received[i] == (uint8_t)i &&
             i < a.n_received && a.received[i] == (uint8_t)i;
    CHECK(ok && a.n_received == 300 && b.n_received == 300,
          "link loss %.3f flip %.4f v%d/v%d from %u: delivered %d and %d of 300 (failures %u %u)", l, f,
          va, vb, start, b.n_received, a.n_received, a.link.failures, b.link.failures);
    CHECK(a.link.version == (va < vb ? va : vb), "negotiated version %d", a.link.version);
    if (ok)
        printf("link loss %.3f flip %.4f v%d/v%d from t=%u: 300 each way in order, %u+%u resent\n", l, f, va,
           vb, start, a.link.retransmitted, b.link.retransmitted);
}

static void exchange(end *a, end *b, struct pipe *ab, struct pipe *ba, uint32_t *now, int steps)
{
    int i;
    for (i = 0; i < steps; i++) {
        *now += 500;
        td_link_receive(&b->link, ab->buf, ab->n, *now);
        ab->n = 0;
        td_link_receive(&a->link, ba->buf, ba->n, *now);
        ba->n = 0;
        td_link_poll(&a->link, *now, next_rand());
        td_link_poll(&b->link, *now, next_rand());
    }
}

/* Spec, "Resuming" and "A full queue": a device never drops what it accepted. With its
 * line to the host cut, it accepts messages until it refuses one (-1, at once); the host
 * then restarts and names no session, so the device re-sends every one of them. The
 * queue used to take 24 on top of the 8 in flight, and the new session's re-queueing
 * evicted 8 accepted messages without a word. */
static void full_queue_test(void)
{
    static end dev, host;
    static struct pipe up, down;
    uint32_t now = 0;
    int accepted = 0, refused = 0, i, ok;
    uint8_t byte;
    loss = flip = 0.0;
    memset(&up, 0, sizeof up);
    memset(&down, 0, sizeof down);
    dev.to = &up;
    host.to = &down;
    dev.n_received = host.n_received = 0;
    dev.cut = host.cut = 0;
    td_link_init(&dev.link, 0xD1, 2, 115200, line_write, deliver, &dev);
    td_link_init(&host.link, 0x40, 2, 115200, line_write, deliver, &host);
    td_link_connect(&dev.link, now);
    td_link_connect(&host.link, now);
    exchange(&dev, &host, &up, &down, &now, 100);
    CHECK(dev.link.state == TD_ESTABLISHED, "full queue: no session");
    dev.cut = 1;
    for (i = 0; i < 100; i++) {
        byte = (uint8_t)accepted;
        if (td_link_send(&dev.link, 1, &byte, 1, now) == 0)
            accepted++;
        else
            refused++;
    }
    CHECK(accepted == TD_QUEUE && refused == 100 - TD_QUEUE,
          "full queue: accepted %d, refused %d (a queue of %d)", accepted, refused, TD_QUEUE);
    exchange(&dev, &host, &up, &down, &now, 200);  /* 100 ms of resending into the void */
    dev.cut = 0;
    td_link_init(&host.link, 0x41, 2, 115200, line_write, deliver, &host);  /* host restart */
    td_link_connect(&host.link, now);
    exchange(&dev, &host, &up, &down, &now, 4000);
    ok = host.n_received == accepted;
    for (i = 0; ok && i < accepted; i++)
        ok = host.received[i] == (uint8_t)i;
    CHECK(ok, "full queue: the host received %d of the %d accepted (refusals %u)",
          host.n_received, accepted, dev.link.refused);
    CHECK(dev.link.refused == (uint32_t)refused, "full queue: %u refusals counted, %d made",
          dev.link.refused, refused);
    if (ok)
        printf("full queue: %d accepted, %d refused at once, all %d delivered after a "
               "new session\n", accepted, refused, accepted);
}

static uint8_t captured[4096];
static size_t n_captured;
static td_frame rstack;

static void capture(void *ctx, const uint8_t *b, size_t n)
{
    (void)ctx;
    if (n_captured + n <= sizeof captured) {
        memcpy(captured + n_captured, b, n);
        n_captured += n;
    }
}

static void keep_rstack(void *ctx, const td_frame *f)
{
    (void)ctx;
    if (f->kind == TD_RSTACK)
        rstack = *f;
}

/* The RSTACK the device answers a host's RST (boot `host`) with, named session and ACK. */
static void answer_rst(td_link *l, uint32_t host, uint32_t now, uint32_t *own, uint32_t *peer,
                       int *ack)
{
    td_frame f;
    td_decoder d;
    uint8_t raw[TD_MAX_FRAME];
    memset(&f, 0, sizeof f);
    f.version = 1;
    f.kind = TD_RST;
    f.len = 5;
    f.payload[0] = (uint8_t)(host >> 24); f.payload[1] = (uint8_t)(host >> 16);
    f.payload[2] = (uint8_t)(host >> 8); f.payload[3] = (uint8_t)host;
    f.payload[4] = 2;
    n_captured = 0;
    memset(&rstack, 0, sizeof rstack);
    td_link_receive(l, raw, td_frame_encode(&f, raw), now);
    td_decoder_init(&d, l->byte_us);
    td_decoder_feed(&d, captured, n_captured, now, 1, keep_rstack, NULL);
    *own = rstack.len >= 17 ? (uint32_t)rstack.payload[9] << 24 | (uint32_t)rstack.payload[10] << 16 |
           (uint32_t)rstack.payload[11] << 8 | rstack.payload[12] : 0;
    *peer = rstack.len >= 17 ? (uint32_t)rstack.payload[13] << 24 | (uint32_t)rstack.payload[14] << 16 |
            (uint32_t)rstack.payload[15] << 8 | rstack.payload[16] : 0;
    *ack = rstack.len >= 17 ? rstack.ack : -1;
}

/* Spec, "Resuming": RST and RSTACK name the last session in which a DATA frame arrived.
 * The device received one message in its session with host 0x40; the host restarted
 * twice, and nothing arrived in the session with 0x41: the RSTACK to 0x42 still names
 * the session with 0x40 (it named the empty one). */
static void named_session_test(void)
{
    static end dev;
    td_frame f;
    uint8_t raw[TD_MAX_FRAME];
    uint32_t own, peer;
    int ack;
    dev.n_received = 0;
    td_link_init(&dev.link, 0xD1, 2, 115200, capture, deliver, &dev);
    td_link_connect(&dev.link, 0);
    answer_rst(&dev.link, 0x40, 1000, &own, &peer, &ack);
    CHECK(dev.link.state == TD_ESTABLISHED && ack == -1, "named: first session");
    memset(&f, 0, sizeof f);
    f.version = 2;
    f.kind = TD_DATA;
    f.msg = 1;
    f.sess = (uint8_t)(0xD1 ^ 0x40);
    f.len = 1;
    td_link_receive(&dev.link, raw, td_frame_encode(&f, raw), 2000);
    CHECK(dev.n_received == 1, "named: the message did not arrive");
    answer_rst(&dev.link, 0x41, 3000, &own, &peer, &ack);
    CHECK(own == 0xD1 && peer == 0x40 && ack == 1, "named: RSTACK to 0x41 names %x/%x ack %d",
          own, peer, ack);
    answer_rst(&dev.link, 0x42, 4000, &own, &peer, &ack);
    CHECK(own == 0xD1 && peer == 0x40 && ack == 1,
          "named: RSTACK to 0x42 names %x/%x ack %d, not the session that carried something",
          own, peer, ack);
}


/* -- version 3 (vectors_v3.txt): the stamp, and each rule of "Questions the earlier text
 * left open" as it binds a device ------------------------------------------------------ */

static uint32_t u32_at(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint8_t last_rx[TD_MAX_PAYLOAD];
static size_t last_rx_len;
static int n_rx;

static void keep_rx(void *ctx, uint8_t msg, const uint8_t *p, size_t n)
{
    (void)ctx;
    (void)msg;
    memcpy(last_rx, p, n);
    last_rx_len = n;
    n_rx++;
}

static void feed(td_link *l, const td_frame *f, uint32_t now)
{
    uint8_t raw[TD_MAX_FRAME];
    td_link_receive(l, raw, td_frame_encode(f, raw), now);
}

/* A device link (boot `own`, offering `version`) whose RST the host `peer` answers. */
static void up(td_link *l, uint32_t own, uint8_t version, uint32_t peer, uint32_t now)
{
    td_frame f;
    td_link_init(l, own, version, 115200, capture, keep_rx, NULL);
    td_link_connect(l, now);
    memset(&f, 0, sizeof f);
    f.version = 1;
    f.kind = TD_RSTACK;
    f.len = 9;
    td_stamp_encode(own, peer, 0, f.payload);  /* acked boot id, the host's: 8 bytes */
    f.payload[8] = version;
    feed(l, &f, now);
}

static void check_stamp(void)
{
    uint8_t out[TD_STAMP], want[TD_STAMP];
    td_stamp_encode((uint32_t)strtoul(tokens[1], NULL, 10), (uint32_t)strtoul(tokens[2], NULL, 10),
                    (uint32_t)strtoul(tokens[3], NULL, 10), out);
    CHECK(unhex(tokens[4], want, sizeof want) == TD_STAMP && memcmp(out, want, TD_STAMP) == 0,
          "stamp %s: encodes differently", tokens[4]);
}

/* msg3: a device link in a version 3 session (SESS 5a: the host's boot id ends in b4)
 * stamps the message exactly so, its event number given when taken and RE the command's;
 * and delivers such a frame without its stamp, the command's number in rx_num. */
static void check_msg3(void)
{
    static td_link l;
    uint8_t want[TD_MAX_FRAME];
    size_t wn = unhex(tokens[7], want, sizeof want);
    uint32_t origin = (uint32_t)strtoul(tokens[4], NULL, 10);
    uint32_t num = (uint32_t)strtoul(tokens[5], NULL, 10);
    const td_msgdef *def = td_msgdef_find((uint8_t)strtoul(tokens[2], NULL, 16));
    td_out o;
    td_msg m;
    CHECK(def && strcmp(def->name, tokens[3]) == 0, "msg3 %s: unknown", tokens[3]);
    CHECK(decode_all(want, wn) == 1 && got[0].version == 3 && got[0].len >= TD_STAMP,
          "msg3 %s: not a version 3 frame", tokens[3]);
    if (!def || n_got != 1)
        return;
    CHECK(td_msg_decode(&m, def, got[0].payload + TD_STAMP, got[0].len - TD_STAMP) == 0,
          "msg3 %s: the fields after the stamp do not decode", tokens[3]);
    up(&l, origin, 3, 0x100u | ((origin ^ 0x5Au) & 0xFFu), 0);
    CHECK(l.state == TD_ESTABLISHED && l.version == 3 && l.sess == 0x5A, "msg3: no session");
    l.events = num - (td_msg_is_event(def->id) ? 1u : 0u);
    o.msg = def->id;
    o.len = (uint8_t)(got[0].len - TD_STAMP);
    o.re = (uint32_t)strtoul(tokens[6], NULL, 10);
    memcpy(o.payload, got[0].payload + TD_STAMP, o.len);
    n_captured = 0;
    CHECK(td_link_send_out(&l, &o, 0) == 0 && o.num == num, "msg3 %s: numbered %lu",
          tokens[3], (unsigned long)o.num);
    CHECK(n_captured == wn && memcmp(captured, want, wn) == 0, "msg3 %s: sent differently",
          tokens[3]);
    n_rx = 0;
    td_link_receive(&l, want, wn, 0);
    CHECK(n_rx == 1 && last_rx_len == o.len && memcmp(last_rx, o.payload, o.len) == 0 &&
          l.rx_num == num, "msg3 %s: delivered wrong", tokens[3]);
}

/* resume_chain: the session that carried DATA (own/peer, 17 frames), then one under a new
 * boot id that carried nothing; the next RST still names the first. Both end by the
 * link's own failure (a dead line), as in the outage. */
static void fail_link(td_link *l, uint32_t *now, uint32_t new_boot)
{
    uint8_t b = 1;
    int i;
    td_link_send(l, 0x24, &b, 1, *now);
    for (i = 0; i < 20000 && l->boot_id != new_boot; i++) {
        *now += 1000;
        td_link_poll(l, *now, new_boot);
    }
}

static void check_resume_chain(void)
{
    static td_link l;
    td_frame f;
    uint8_t want[TD_MAX_FRAME], raw[TD_MAX_FRAME];
    size_t wn = unhex(tokens[4], want, sizeof want), n;
    uint32_t own = (uint32_t)strtoul(tokens[1], NULL, 10), peer = (uint32_t)strtoul(tokens[2], NULL, 10);
    uint32_t now = 0;
    int seqs = atoi(tokens[3]), i, rst = -1;
    up(&l, own, 3, peer, now);
    memset(&f, 0, sizeof f);
    f.version = 3;
    f.kind = TD_DATA;
    f.sess = (uint8_t)(own ^ peer);
    f.len = TD_STAMP;
    for (i = 0; i < seqs; i++) {
        f.seq = (uint8_t)i;
        feed(&l, &f, now);
    }
    fail_link(&l, &now, 0x41);
    f.version = 1;
    f.kind = TD_RSTACK;
    f.len = 9;
    f.ack = 0;
    td_stamp_encode(0x41, 0xD2, 0, f.payload);
    f.payload[8] = 3;
    feed(&l, &f, now);
    CHECK(l.state == TD_ESTABLISHED && l.peer_boot == 0xD2, "resume_chain: no second session");
    fail_link(&l, &now, 0x42);
    n_captured = 0;
    now += 1;
    td_link_connect(&l, now);  /* the RST it sends */
    decode_all(captured, n_captured);
    for (i = 0; i < n_got; i++)
        if (got[i].kind == TD_RST)
            rst = i;
    CHECK(rst >= 0, "resume_chain: no RST");
    if (rst < 0)
        return;
    n = td_frame_encode(&got[rst], raw);
    CHECK(n == wn && memcmp(raw, want, n) == 0, "resume_chain: another RST");
}

static void check_full_queue(void)
{
    static td_link l;
    int offered = atoi(tokens[2]), accepted = 0, i;
    uint8_t b = 1;
    td_link_init(&l, 1, 3, 115200, capture, keep_rx, NULL);
    for (i = 0; i < offered; i++)
        accepted += td_link_send(&l, 0x24, &b, 1, 0) == 0;
    CHECK(atoi(tokens[1]) == TD_QUEUE && accepted == atoi(tokens[3]),
          "full_queue: %d of %d accepted", accepted, offered);
}

/* repeat: the device sends the chunk as event 12; a new session (the host named none)
 * re-sends it, and the frame is the same bytes, stamp included: the host can tell. */
static void check_repeat(void)
{
    static td_link l;
    uint8_t want[TD_MAX_FRAME];
    size_t wn = unhex(tokens[1], want, sizeof want);
    td_out o;
    td_frame f;
    uint32_t origin;
    int i, resent = 0;
    CHECK(decode_all(want, wn) == 1 && got[0].len >= TD_STAMP, "repeat: not a frame");
    if (n_got != 1)
        return;
    origin = u32_at(got[0].payload);
    up(&l, origin, 3, 0x100u | ((origin ^ 0x5Au) & 0xFFu), 0);
    l.events = u32_at(got[0].payload + 4) - 1u;
    o.msg = got[0].msg;
    o.len = (uint8_t)(got[0].len - TD_STAMP);
    o.re = u32_at(got[0].payload + 8);
    memcpy(o.payload, got[0].payload + TD_STAMP, o.len);
    n_captured = 0;
    td_link_send_out(&l, &o, 0);
    CHECK(n_captured == wn && memcmp(captured, want, wn) == 0, "repeat: sent differently");
    memset(&f, 0, sizeof f);
    f.version = 1;
    f.kind = TD_RST;
    f.len = 5;
    td_stamp_encode(0x200u | ((origin ^ 0x5Au) & 0xFFu), 3, 0, f.payload);
    f.payload[4] = 3;
    n_captured = 0;
    feed(&l, &f, 1000);
    decode_all(captured, n_captured);
    for (i = 0; i < n_got; i++) {
        uint8_t raw[TD_MAX_FRAME];
        size_t n = td_frame_encode(&got[i], raw);
        resent += got[i].kind == TD_DATA && n == wn && memcmp(raw, want, n) == 0;
    }
    CHECK(resent == 1, "repeat: re-sent %d times as the same frame", resent);
}

static void check_card(void)
{
    uint8_t raw[TD_MAX_FRAME];
    td_msg m;
    size_t n = unhex(tokens[1], raw, sizeof raw);
    CHECK(decode_all(raw, n) == 1 &&
          td_msg_decode(&m, td_msgdef_named("card_drawn"), got[0].payload + TD_STAMP,
                        got[0].len - TD_STAMP) == 0 &&
          memcmp(m.v[1].bytes, tokens[2], 2) == 0, "card %s: not carried", tokens[2]);
}

static int same_list(const char *list, const unsigned *got_ms, int n)
{
    char copy[256];
    char *t;
    int i = 0;
    snprintf(copy, sizeof copy, "%s", list);
    for (t = strtok(copy, ","); t; t = strtok(NULL, ","), i++)
        if (i >= n || (unsigned)(strtod(t, NULL) * 10.0 + 0.5) != got_ms[i])
            return 0;
    return i == n;
}

static void check_rst_times(void)
{
    static td_link l;
    unsigned times[16];
    int n = 0, tick;
    char list[256];
    snprintf(list, sizeof list, "%s", tokens[1]);
    td_link_init(&l, 1, 3, 115200, capture, keep_rx, NULL);
    n_captured = 0;
    td_link_connect(&l, 0);
    times[n++] = 0;
    for (tick = 1; tick <= 1200 && n < 16; tick++) {
        n_captured = 0;
        td_link_poll(&l, (uint32_t)tick * 1000u, 7);
        if (n_captured)
            times[n++] = (unsigned)tick * 10u;
    }
    CHECK(same_list(list, times, n), "rst_times: not %s", list);
}

/* rst_after_failure: a session's estimate (one round trip of <rtt> ms) does not set where
 * the next session's RSTs start (spec: "A new session starts the RTO afresh"). */
static void check_rst_after_failure(void)
{
    static td_link l;
    td_frame ack;
    unsigned times[16];
    int n = 0, tick;
    uint8_t b = 1;
    uint32_t rtt_us = (uint32_t)atoi(tokens[1]) * 1000u, now, start;
    char list[256];
    snprintf(list, sizeof list, "%s", tokens[2]);
    up(&l, 1, 3, 2, 0);
    td_link_send(&l, 0x24, &b, 1, 0);
    memset(&ack, 0, sizeof ack);
    ack.version = 3;
    ack.kind = TD_ACK;
    ack.ack = 1;
    ack.sess = 3;  /* boot ids 1 and 2 */
    feed(&l, &ack, rtt_us);
    CHECK(l.rto_us > 200000u, "rst_after_failure: no estimate above 200 ms (%lu us)",
          (unsigned long)l.rto_us);
    td_link_send(&l, 0x24, &b, 1, rtt_us);
    now = rtt_us;
    while (l.state == TD_ESTABLISHED) {
        now = l.unacked[0].sent_us + l.rto_us;
        n_captured = 0;
        td_link_poll(&l, now, 7);  /* failing, it sends its RST at once */
    }
    CHECK(l.state == TD_CONNECTING && n_captured > 0, "rst_after_failure: no new RST");
    start = now;
    times[n++] = 0;
    for (tick = 1; tick <= 800 && n < 16; tick++) {
        n_captured = 0;
        td_link_poll(&l, start + (uint32_t)tick * 1000u, 9);
        if (n_captured)
            times[n++] = (unsigned)tick * 10u;
    }
    CHECK(same_list(list, times, n), "rst_after_failure: not %s", list);
}

static void check_rto(void)
{
    static td_link l;
    unsigned rtos[8];
    int n = 0;
    uint8_t b = 1;
    uint32_t now = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", tokens[1]);
    up(&l, 1, 3, 2, 0);
    td_link_send(&l, 0x24, &b, 1, 0);
    rtos[n++] = (l.rto_us + 50u) / 100u;
    while (n < 7) {
        now = l.unacked[0].sent_us + l.rto_us;
        td_link_poll(&l, now, 9);
        rtos[n++] = (l.rto_us + 50u) / 100u;
    }
    CHECK(same_list(list, rtos, n), "rto: not %s (%u %u)", list, rtos[0], rtos[1]);
}

static void check_rstack_version(void)
{
    static td_link l;
    uint8_t raw[TD_MAX_FRAME];
    size_t n = unhex(tokens[2], raw, sizeof raw);
    td_link_init(&l, 1, (uint8_t)atoi(tokens[1]), 115200, capture, keep_rx, NULL);
    td_link_connect(&l, 0);
    td_link_receive(&l, raw, n, 0);
    CHECK(l.state == TD_CONNECTING, "rstack_version: taken");
}

static void check_invalid(void)
{
    uint8_t payload[TD_MAX_PAYLOAD];
    td_msg m;
    size_t n = unhex(tokens[3], payload, sizeof payload);
    const td_msgdef *def = td_msgdef_find((uint8_t)strtoul(tokens[2], NULL, 16));
    CHECK(def && td_msg_decode(&m, def, payload, n) != 0, "invalid %s: decoded", tokens[3]);
}

/* answer records (spec: "Commands a device does not carry out"): the result a device
 * of that kind gives at once, or - for a message it drops unanswered. */
static void check_answer(void)
{
    uint8_t payload[TD_MAX_PAYLOAD];
    td_msg m;
    size_t n = unhex(tokens[3], payload, sizeof payload);
    const td_msgdef *def = td_msgdef_find((uint8_t)strtoul(tokens[2], NULL, 16));
    int kind = strcmp(tokens[1], "shoe") == 0 ? 1 : strcmp(tokens[1], "shuffler") == 0 ? 2 : 3;
    int want = strcmp(tokens[4], "-") == 0 ? -1 : atoi(tokens[4]);
    int got = !def || td_msg_decode(&m, def, payload, n) != 0 ? -1
                                                               : td_command_refusal(kind, &m);
    CHECK(got == want, "answer %s %s %s: %d, not %s", tokens[1], tokens[2], tokens[3], got,
          tokens[4]);
}

/* past_total: an order_chunk running past its total decodes (in range): the host, not
 * the decoder, finds the contradiction. */
static void check_past_total(void)
{
    uint8_t raw[TD_MAX_FRAME];
    td_msg m;
    size_t n = unhex(tokens[1], raw, sizeof raw);
    CHECK(decode_all(raw, n) == 1 &&
          td_msg_decode(&m, td_msgdef_named("order_chunk"), got[0].payload + TD_STAMP,
                        got[0].len - TD_STAMP) == 0 &&
          m.v[2].u >= 1 && m.v[2].u <= 520 && m.v[1].u + m.v[4].len > m.v[2].u,
          "past_total: not an order_chunk that decodes and runs past its total");
}

static void check_sess(void)
{
    static td_link l;
    uint32_t v[4];
    int i;
    for (i = 0; i < 4; i++)
        v[i] = (uint32_t)strtoul(tokens[1 + i], NULL, 10);
    for (i = 0; i < 4; i += 2) {
        up(&l, v[i], 3, v[i + 1], 0);
        CHECK(l.state == TD_ESTABLISHED && l.sess == strtoul(tokens[5], NULL, 16),
              "sess %08lx/%08lx: %02x", (unsigned long)v[i], (unsigned long)v[i + 1], l.sess);
    }
}

/* commit / commit3 records: the shuffler's commitment (spec: shuffle_complete). */
static void check_commit(uint8_t version)
{
    static char cards[520][2];
    uint8_t nonce[16], want[32], out[32];
    const char *sid = tokens[1], *c;
    uint8_t decks = version >= TD_COMMITMENT_V3_FROM ? (uint8_t)atoi(tokens[2]) : 0;
    int at = version >= TD_COMMITMENT_V3_FROM ? 3 : 2;
    uint16_t total = 0;
    CHECK(unhex(tokens[at], nonce, sizeof nonce) == 16, "commit %s: nonce", sid);
    for (c = tokens[at + 1]; c[0] && c[1] && total < 520; c += c[2] == ',' ? 3 : 2) {
        memcpy(cards[total++], c, 2);
        if (!c[2])
            break;
    }
    CHECK(unhex(tokens[at + 2], want, sizeof want) == 32, "commit %s: digest", sid);
    td_commitment(version, (uint32_t)strtoul(sid, NULL, 10), decks, nonce,
                  (const char (*)[2])cards, total, out);
    CHECK(memcmp(out, want, 32) == 0, "commit%s %s (%u cards): another commitment",
          version >= TD_COMMITMENT_V3_FROM ? "3" : "", sid, total);
}

/* sha256 records: FIPS 180-4's examples; "a*N" is N bytes 'a', hashed in uneven pieces
 * so that blocks are filled across updates. */
static void check_sha256(void)
{
    static uint8_t msg[4096];
    uint8_t want[32], out[32];
    td_sha256 s;
    td_sha256_init(&s);
    if (strncmp(tokens[1], "a*", 2) == 0) {
        unsigned long n = strtoul(tokens[1] + 2, NULL, 10), piece = 1;
        memset(msg, 'a', sizeof msg);
        while (n > 0) {
            unsigned long take = piece < n ? piece : n;
            td_sha256_update(&s, msg, take);
            n -= take;
            piece = piece % 997 + 13;
        }
    } else {
        size_t n = strcmp(tokens[1], "-") ? unhex(tokens[1], msg, sizeof msg) : 0;
        td_sha256_update(&s, msg, n);
    }
    td_sha256_final(&s, out);
    CHECK(unhex(tokens[2], want, sizeof want) == 32 && memcmp(out, want, 32) == 0,
          "sha256 of %.20s: another digest", tokens[1]);
}

int main(int argc, char **argv)
{
    static char line[8192];
    FILE *fp;
    int counts[6] = {0}, v3[15] = {0}, a, i;
    static const char *V3[15] = {"stamp", "msg3", "resume_chain", "full_queue", "repeat",
                                 "card", "rst_times", "rto", "rstack_version", "invalid",
                                 "sess", "v3 frame", "answer", "past_total",
                                 "rst_after_failure"};
    if (argc < 2) {
        fprintf(stderr, "usage: %s vectors.txt [vectors_v3.txt]\n", argv[0]);
        return 2;
    }
    for (a = 1; a < argc; a++) {
        fp = fopen(argv[a], "r");
        if (!fp) {
            perror(argv[a]);
            return 2;
        }
        while (fgets(line, sizeof line, fp)) {
            int n;
            if (line[0] == '#' || line[0] == '\n')
                continue;
            n = split(line);
            if (n == 0) continue;
            if (strcmp(tokens[0], "crc") == 0) { check_crc(); counts[0]++; }
            else if (strcmp(tokens[0], "frame") == 0) {
                v3[11] += strcmp(tokens[1], "3") == 0;
                check_frame();
                counts[1]++;
            }
            else if (strcmp(tokens[0], "msg") == 0) { check_msg(n); counts[2]++; }
            else if (strcmp(tokens[0], "stream") == 0) { check_stream(); counts[3]++; }
            else if (strcmp(tokens[0], "commit") == 0) { check_commit(2); counts[4]++; }
            else if (strcmp(tokens[0], "commit3") == 0) { check_commit(3); counts[4]++; }
            else if (strcmp(tokens[0], "sha256") == 0) { check_sha256(); counts[5]++; }
            else if (strcmp(tokens[0], "stamp") == 0) { check_stamp(); v3[0]++; }
            else if (strcmp(tokens[0], "msg3") == 0) { check_msg3(); v3[1]++; }
            else if (strcmp(tokens[0], "resume_chain") == 0) { check_resume_chain(); v3[2]++; }
            else if (strcmp(tokens[0], "full_queue") == 0) { check_full_queue(); v3[3]++; }
            else if (strcmp(tokens[0], "repeat") == 0) { check_repeat(); v3[4]++; }
            else if (strcmp(tokens[0], "card") == 0) { check_card(); v3[5]++; }
            else if (strcmp(tokens[0], "rst_times") == 0) { check_rst_times(); v3[6]++; }
            else if (strcmp(tokens[0], "rto") == 0) { check_rto(); v3[7]++; }
            else if (strcmp(tokens[0], "rstack_version") == 0) { check_rstack_version(); v3[8]++; }
            else if (strcmp(tokens[0], "invalid") == 0) { check_invalid(); v3[9]++; }
            else if (strcmp(tokens[0], "sess") == 0) { check_sess(); v3[10]++; }
            else if (strcmp(tokens[0], "answer") == 0) { check_answer(); v3[12]++; }
            else if (strcmp(tokens[0], "past_total") == 0) { check_past_total(); v3[13]++; }
            else if (strcmp(tokens[0], "rst_after_failure") == 0) {
                check_rst_after_failure();
                v3[14]++;
            }
            else { CHECK(0, "unknown record %s", tokens[0]); }
        }
        fclose(fp);
    }
    printf("vectors: %d crc, %d frame, %d msg, %d stream, %d commit, %d sha256\n", counts[0],
           counts[1], counts[2], counts[3], counts[4], counts[5]);
    CHECK(counts[2] >= 30, "only %d message vectors", counts[2]);
    CHECK(counts[4] >= 3 && counts[5] >= 4, "only %d commitment and %d SHA-256 vectors",
          counts[4], counts[5]);
    if (argc > 2) {  /* every kind of version 3 record was read and checked */
        printf("version 3:");
        for (i = 0; i < 15; i++) {
            printf(" %d %s%s", v3[i], V3[i], i < 14 ? "," : "\n");
            CHECK(v3[i] > 0, "no %s record", V3[i]);
        }
    }
    link_test(0.0, 0.0, 2, 2, 0);
    link_test(0.01, 0.001, 2, 2, 0);
    link_test(0.01, 0.001, 3, 3, 0);
    link_test(0.01, 0.001, 3, 2, 0);
    link_test(0.01, 0.001, 2, 1, 3845000000u);  /* 64 minutes after boot */
    link_test(0.02, 0.002, 1, 1, 0xFFFF0000u);  /* the clock wraps during the test */
    link_test(0.02, 0.002, 3, 3, 0xFFFF0000u);
    full_queue_test();
    named_session_test();
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
