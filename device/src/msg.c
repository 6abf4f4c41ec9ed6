/* Messages: the spec's "Types" and its message tables, transcribed. */
#include <string.h>

#include "tabled_device.h"

#define F(t) {TD_##t, 0}
#define FN(t, n) {TD_##t, n}

static const td_msgdef MESSAGES[] = {
    /* every device */
    {0x01, "identify", 1, {F(U8)}},
    {0x02, "identify_reply", 6, {F(U8), F(U8), F(STR), F(STR), F(U8), F(STR)}},
    {0x03, "heartbeat", 3, {F(U32), F(U8), F(U16)}},
    {0x04, "status", 1, {F(U8)}},
    {0x05, "status_reply", 4, {F(U8), F(U8), F(U16), F(STR)}},
    {0x06, "fault", 2, {F(U16), F(STR)}},
    {0x07, "fault_cleared", 1, {F(U16)}},
    {0x08, "command_result", 3, {F(U8), F(U8), F(STR)}},
    {0x09, "door", 1, {F(BOOL)}},
    /* shoe */
    {0x20, "card_drawn", 6, {F(U16), F(CARD), F(U8), F(U32), F(BOOL), F(BOOL)}},
    {0x21, "shoe_loaded", 2, {F(U16), F(U32)}},
    {0x22, "cut_card", 1, {F(U16)}},
    {0x23, "shoe_empty", 1, {F(U16)}},
    {0x24, "dealer_button", 1, {F(U8)}},
    {0x25, "tamper", 1, {F(U8)}},
    {0x26, "gate", 1, {F(BOOL)}},
    {0x30, "lock_gate", 2, {F(U8), F(BOOL)}},
    {0x31, "set_clock", 2, {F(U8), F(U64)}},
    /* shuffler */
    {0x40, "shuffle_started", 2, {F(U32), F(U8)}},
    {0x41, "shuffle_complete", 6,
     {F(U32), F(U8), FN(U8N, 52), F(U16), F(BOOL), FN(BYTESN, 32)}},
    {0x42, "order_chunk", 5, {F(U32), F(U16), F(U16), FN(BYTESN, 16), F(CARDS)}},
    {0x43, "inventory_reply", 3, {F(U8), FN(U8N, 52), F(U16)}},
    {0x50, "start_shuffle", 2, {F(U8), F(U8)}},
    {0x51, "inventory", 1, {F(U8)}},
    {0x52, "request_order", 2, {F(U8), F(U32)}},
    /* tumbler */
    {0x60, "activated", 2, {F(U8), F(BOOL)}},
    {0x61, "tumble", 1, {F(U8)}},
    {0x62, "settled", 4, {FN(U8N, 3), FN(U16N, 3), FN(U8N, 3), F(U8)}},
    {0x70, "arm", 2, {F(U8), F(BOOL)}},
    {0x71, "tumble_now", 1, {F(U8)}},
};

#define N_MESSAGES (sizeof MESSAGES / sizeof MESSAGES[0])

const td_msgdef *td_msgdef_find(uint8_t id)
{
    size_t i;
    for (i = 0; i < N_MESSAGES; i++)
        if (MESSAGES[i].id == id)
            return &MESSAGES[i];
    return NULL;
}

const td_msgdef *td_msgdef_named(const char *name)
{
    size_t i;
    for (i = 0; i < N_MESSAGES; i++)
        if (strcmp(MESSAGES[i].name, name) == 0)
            return &MESSAGES[i];
    return NULL;
}

/* Spec: "Commands a device does not carry out". Every host command of every device's
 * spec, the kind of device it is for (0 every device), and the one field with values
 * narrower than its type, if any (spec: each command's values column). */
#define NO_FIELD 0xFF
static const struct {
    uint8_t id, kind, field, lo, hi;
} COMMANDS[] = {
    {0x01, 0, NO_FIELD, 0, 0}, {0x04, 0, NO_FIELD, 0, 0},  /* identify, status */
    {0x30, 1, NO_FIELD, 0, 0}, {0x31, 1, NO_FIELD, 0, 0},  /* lock_gate, set_clock */
    {0x50, 2, 1, 1, 10},                                   /* start_shuffle: decks 1-10 */
    {0x51, 2, NO_FIELD, 0, 0}, {0x52, 2, NO_FIELD, 0, 0},  /* inventory, request_order */
    {0x70, 3, NO_FIELD, 0, 0}, {0x71, 3, NO_FIELD, 0, 0},  /* arm, tumble_now */
};

int td_command_refusal(int kind, const td_msg *m)
{
    size_t i;
    for (i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++) {
        if (COMMANDS[i].id != m->def->id)
            continue;
        if (COMMANDS[i].kind != 0 && COMMANDS[i].kind != kind)
            return 1;  /* another device's command */
        if (COMMANDS[i].field != NO_FIELD && (m->v[COMMANDS[i].field].u < COMMANDS[i].lo ||
                                              m->v[COMMANDS[i].field].u > COMMANDS[i].hi))
            return 2;  /* a value outside: refused before anything else */
        return 0;
    }
    return -1;  /* a device's message: no command */
}

int td_msg_is_event(uint8_t id)
{
    /* heartbeat is state and the answers are replies: a host that counted them as events
     * would take the gap they left for lost events */
    return id != 0x02 && id != 0x03 && id != 0x05 && id != 0x08 && id != 0x43;
}

void td_msg_init(td_msg *m, const td_msgdef *def)
{
    memset(m, 0, sizeof *m);
    m->def = def;
}

static int int_size(uint8_t type)
{
    switch (type) {
    case TD_U8: case TD_BOOL: return 1;
    case TD_U16: return 2;
    case TD_U32: return 4;
    case TD_U64: return 8;
    default: return 0;
    }
}

static int printable(uint8_t b) { return b > 0x20 && b < 0x7F; }

/* UTF-8 as RFC 3629: no overlongs, no surrogates, at most U+10FFFF. */
static int utf8_ok(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k, need;
        uint32_t cp;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1Fu; }
        else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0Fu; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07u; }
        else return 0;
        if (i + need >= n) return 0;  /* truncated sequence */
        for (k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0u) != 0x80u) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += need + 1;
    }
    return 1;
}

int td_msg_encode(const td_msg *m, uint8_t *out, size_t cap)
{
    size_t n = 0, i, k;
    for (i = 0; i < m->def->nfields; i++) {
        const td_field *f = &m->def->fields[i];
        const td_value *v = &m->v[i];
        int size = int_size(f->type);
        size_t need;
        if (size) {
            if (f->type == TD_BOOL && v->u > 1) return -1;
            if (size < 8 && v->u >> (8 * size)) return -1;
            if (n + (size_t)size > cap) return -1;
            for (k = 0; k < (size_t)size; k++)
                out[n + k] = (uint8_t)(v->u >> (8 * ((size_t)size - 1 - k)));
            n += (size_t)size;
            continue;
        }
        switch (f->type) {
        case TD_STR:
            if (v->len > 64 || n + 1u + v->len > cap || !utf8_ok(v->bytes, v->len)) return -1;
            out[n++] = v->len;
            memcpy(out + n, v->bytes, v->len);
            n += v->len;
            break;
        case TD_CARD:
            if (n + 2 > cap || !printable(v->bytes[0]) || !printable(v->bytes[1])) return -1;
            out[n++] = v->bytes[0];
            out[n++] = v->bytes[1];
            break;
        case TD_CARDS:
            need = 1u + 2u * v->len;
            if (v->len > 100 || n + need > cap) return -1;
            out[n++] = v->len;
            for (k = 0; k < 2u * v->len; k++) {
                if (!printable(v->bytes[k])) return -1;
                out[n++] = v->bytes[k];
            }
            break;
        case TD_U8N: case TD_BYTESN:
            if (n + f->n > cap) return -1;
            memcpy(out + n, v->bytes, f->n);
            n += f->n;
            break;
        case TD_U16N:
            if (n + 2u * f->n > cap) return -1;
            for (k = 0; k < f->n; k++) {
                out[n++] = (uint8_t)(v->u16s[k] >> 8);
                out[n++] = (uint8_t)v->u16s[k];
            }
            break;
        default:
            return -1;
        }
    }
    return (int)n;
}

int td_msg_decode(td_msg *m, const td_msgdef *def, const uint8_t *p, size_t len)
{
    size_t pos = 0, i, k;
    td_msg_init(m, def);
    for (i = 0; i < def->nfields; i++) {
        const td_field *f = &def->fields[i];
        td_value *v = &m->v[i];
        int size = int_size(f->type);
        if (size) {
            if (pos + (size_t)size > len) return -1;
            for (k = 0; k < (size_t)size; k++)
                v->u = (v->u << 8) | p[pos + k];
            pos += (size_t)size;
            if (f->type == TD_BOOL && v->u > 1) return -1;
            continue;
        }
        switch (f->type) {
        case TD_STR:
            if (pos + 1 > len || p[pos] > 64 || pos + 1u + p[pos] > len) return -1;
            v->len = p[pos];
            memcpy(v->bytes, p + pos + 1, v->len);
            if (!utf8_ok(v->bytes, v->len)) return -1;
            pos += 1u + v->len;
            break;
        case TD_CARD:
            if (pos + 2 > len || !printable(p[pos]) || !printable(p[pos + 1])) return -1;
            v->bytes[0] = p[pos];
            v->bytes[1] = p[pos + 1];
            v->len = 2;
            pos += 2;
            break;
        case TD_CARDS:
            if (pos + 1 > len || p[pos] > 100 || pos + 1u + 2u * p[pos] > len) return -1;
            v->len = p[pos];
            for (k = 0; k < 2u * v->len; k++) {
                if (!printable(p[pos + 1 + k])) return -1;
                v->bytes[k] = p[pos + 1 + k];
            }
            pos += 1u + 2u * v->len;
            break;
        case TD_U8N: case TD_BYTESN:
            if (pos + f->n > len) return -1;
            memcpy(v->bytes, p + pos, f->n);
            v->len = f->n;
            pos += f->n;
            break;
        case TD_U16N:
            if (pos + 2u * f->n > len) return -1;
            for (k = 0; k < f->n; k++)
                v->u16s[k] = (uint16_t)((p[pos + 2 * k] << 8) | p[pos + 2 * k + 1]);
            v->len = f->n;
            pos += 2u * f->n;
            break;
        default:
            return -1;
        }
    }
    return 0;  /* bytes after the last field: a newer peer's, ignored */
}
