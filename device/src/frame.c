/* Frames and the receiver: spec sections "Framing" and "Receiving". */
#include <string.h>

#include "tabled_device.h"

#define STALL_MARGIN_US 50000u

uint16_t td_crc16(const uint8_t *data, size_t len)
{
    uint16_t c = 0xFFFFu;
    size_t i;
    int b;
    for (i = 0; i < len; i++) {
        c ^= (uint16_t)(data[i] << 8);
        for (b = 0; b < 8; b++)
            c = (c & 0x8000u) ? (uint16_t)((c << 1) ^ 0x1021u) : (uint16_t)(c << 1);
    }
    return c;
}

uint32_t td_crc32(const uint8_t *data, size_t len)
{
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    int b;
    for (i = 0; i < len; i++) {
        c ^= data[i];
        for (b = 0; b < 8; b++)
            c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

/* Versions 2 and 3 share a layout (SESS, CRC-32); version 3 differs in its payload only. */
static int known(uint8_t version) { return version >= 1 && version <= TD_NEWEST_VERSION; }
static size_t extra_of(uint8_t version) { return version >= 2 ? 1u : 0u; }
static size_t crc_of(uint8_t version) { return version >= 2 ? 4u : 2u; }

static size_t total_of(uint8_t version, uint8_t len)
{
    return TD_HEADER + extra_of(version) + len + crc_of(version);
}

size_t td_frame_encode(const td_frame *f, uint8_t *out)
{
    size_t n, body;
    if (!known(f->version))
        return 0;
    out[0] = TD_SOF;
    out[1] = f->version;
    out[2] = f->kind;
    out[3] = f->seq;
    out[4] = f->ack;
    out[5] = f->msg;
    out[6] = f->len;
    out[7] = (uint8_t)(td_crc16(out + 1, 6) & 0xFFu);
    n = TD_HEADER;
    if (f->version >= 2)
        out[n++] = f->sess;
    memcpy(out + n, f->payload, f->len);
    n += f->len;
    body = n - 1;
    if (f->version >= 2) {
        uint32_t c = td_crc32(out + 1, body);
        out[n++] = (uint8_t)(c >> 24);
        out[n++] = (uint8_t)(c >> 16);
        out[n++] = (uint8_t)(c >> 8);
        out[n++] = (uint8_t)c;
    } else {
        uint16_t c = td_crc16(out + 1, body);
        out[n++] = (uint8_t)(c >> 8);
        out[n++] = (uint8_t)c;
    }
    return n;
}

void td_decoder_init(td_decoder *d, uint32_t byte_us)
{
    memset(d, 0, sizeof *d);
    d->byte_us = byte_us;
}

enum { NEED_MORE = 0, BAD = -1, OTHER_VERSION = -2 };

/* Length of the valid frame at buf[pos], NEED_MORE, BAD or OTHER_VERSION. */
static long check(const td_decoder *d, size_t pos)
{
    const uint8_t *p = d->buf + pos;
    size_t have = d->n - pos, total, crcn;
    uint8_t version;
    if (have < TD_HEADER)
        return NEED_MORE;
    if ((td_crc16(p + 1, 6) & 0xFFu) != p[7] || p[6] > TD_MAX_PAYLOAD)
        return BAD;
    version = p[1];
    if (!known(version))
        return OTHER_VERSION;
    total = total_of(version, p[6]);
    if (have < total)
        return NEED_MORE;
    crcn = crc_of(version);
    if (version >= 2) {
        uint32_t c = td_crc32(p + 1, total - 1 - crcn);
        const uint8_t *t = p + total - 4;
        uint32_t got = ((uint32_t)t[0] << 24) | ((uint32_t)t[1] << 16) |
                       ((uint32_t)t[2] << 8) | t[3];
        if (c != got)
            return BAD;
    } else {
        uint16_t c = td_crc16(p + 1, total - 1 - crcn);
        const uint8_t *t = p + total - 2;
        if (c != (uint16_t)((t[0] << 8) | t[1]))
            return BAD;
    }
    return (long)total;
}

static void drop(td_decoder *d, size_t k)
{
    if (k == 0)
        return;
    memmove(d->buf, d->buf + k, d->n - k);
    d->n -= k;
    d->waiting = 0;
}

static uint32_t line_time_us(const td_decoder *d)
{
    size_t total = TD_MAX_FRAME;
    if (d->n >= TD_HEADER && known(d->buf[1]))
        total = total_of(d->buf[1], d->buf[6]);
    return (uint32_t)total * d->byte_us + STALL_MARGIN_US;
}

static void emit(td_decoder *d, size_t total, td_frame_fn fn, void *ctx)
{
    td_frame f;
    const uint8_t *p = d->buf;
    size_t start = TD_HEADER + extra_of(p[1]);
    if (p[2] > TD_RSTACK) {  /* an unknown KIND: dropped */
        d->errors++;
        return;
    }
    f.version = p[1];
    f.kind = p[2];
    f.seq = p[3];
    f.ack = p[4];
    f.msg = p[5];
    f.len = p[6];
    f.sess = p[1] >= 2 ? p[8] : 0;
    memcpy(f.payload, p + start, f.len);
    (void)total;
    d->frames++;
    fn(ctx, &f);
}

static void process(td_decoder *d, uint32_t now_us, int stalled, td_frame_fn fn, void *ctx)
{
    for (;;) {
        size_t start = 0, pos;
        long status;
        int found = 0;
        while (start < d->n && d->buf[start] != TD_SOF)
            start++;
        if (start)
            d->errors++;
        drop(d, start);
        if (d->n == 0)
            return;
        status = check(d, 0);
        if (status > 0) {
            emit(d, (size_t)status, fn, ctx);
            drop(d, (size_t)status);
            continue;
        }
        if (status < 0) {  /* drop one byte, search again */
            if (status == OTHER_VERSION)
                d->foreign_versions++;
            d->errors++;
            drop(d, 1);
            continue;
        }
        /* Incomplete: wait for its bytes' time on the line before anything after it
         * counts, so a frame inside another's payload never replaces it. */
        if (!d->waiting) {
            d->waiting = 1;
            d->since_us = now_us;
        }
        if (!stalled && (int32_t)(now_us - d->since_us) < (int32_t)line_time_us(d))
            return;
        for (pos = 1; pos < d->n && !found; pos++)
            found = d->buf[pos] == TD_SOF && check(d, pos) > 0;
        if (!found)
            return;
        d->errors++;
        drop(d, pos - 1);
    }
}

void td_decoder_feed(td_decoder *d, const uint8_t *data, size_t len, uint32_t now_us,
                     int stalled, td_frame_fn fn, void *ctx)
{
    size_t i = 0;
    do {
        while (i < len && d->n < sizeof d->buf)
            d->buf[d->n++] = data[i++];
        process(d, now_us, stalled, fn, ctx);
        if (d->n == sizeof d->buf) {  /* cannot hold: two largest frames fit */
            d->errors++;
            drop(d, 1);
        }
    } while (i < len);
}
