/* What every device does: the link, identify and status, heartbeats, events held while
 * the link is full, line noise on request, and the sensor lines' dispatch. */
#include <string.h>

#include "firmware.h"

#define HEARTBEAT_US 1000000u
#define BAUD 115200u


static uint32_t xorshift(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

void fw_report_num(fw_app *a, const char *word, uint32_t n)
{
    char buf[48];
    char digits[11];
    size_t len = strlen(word), k = 0;
    if (len > sizeof buf - 13)
        len = sizeof buf - 13;
    memcpy(buf, word, len);
    buf[len++] = ' ';
    do {
        digits[k++] = (char)('0' + n % 10u);
        n /= 10u;
    } while (n);
    while (k)
        buf[len++] = digits[--k];
    buf[len] = 0;
    a->board->report(buf);
}

static void report2(fw_app *a, const char *word, const char *name)
{
    char buf[48];
    size_t w = strlen(word), n = strlen(name);
    if (w + n + 2 > sizeof buf)
        n = sizeof buf - w - 2;
    memcpy(buf, word, w);
    buf[w] = ' ';
    memcpy(buf + w + 1, name, n);
    buf[w + 1 + n] = 0;
    a->board->report(buf);
}

/* Bit errors on the way out, as a noisy cable makes them (a test of the host's receiver). */
static void line_write(void *ctx, const uint8_t *bytes, size_t len)
{
    fw_app *a = (fw_app *)ctx;
    uint8_t buf[TD_MAX_FRAME];
    size_t i;
    if (a->noise_ppm == 0 || len > sizeof buf) {
        a->board->line_write(bytes, len);
        return;
    }
    memcpy(buf, bytes, len);
    for (i = 0; i < len * 8u; i++)
        if (xorshift(&a->rng) % 1000000u < a->noise_ppm)
            buf[i / 8u] ^= (uint8_t)(1u << (i % 8u));
    a->board->line_write(buf, len);
}

static void flush_held(fw_app *a, uint32_t now_us)
{
    int taken = 0;
    while (taken < a->n_held && td_link_send_out(&a->link, &a->held[taken], now_us) == 0)
        taken++;
    memmove(a->held, a->held + taken, (size_t)(a->n_held - taken) * sizeof a->held[0]);
    a->n_held -= taken;
}

/* An event is never dropped while there is room to hold it: it waits for the link. An
 * answer names the command it answers (re: its number, version 3). */
static void send_re(fw_app *a, td_msg *m, uint32_t re, uint32_t now_us)
{
    td_out o;
    int n = td_msg_encode(m, o.payload, sizeof o.payload);
    if (n < 0) {
        report2(a, "unencodable", m->def->name);
        return;
    }
    o.msg = m->def->id;
    o.len = (uint8_t)n;
    o.re = re;
    flush_held(a, now_us);
    if (a->n_held == 0 && td_link_send_out(&a->link, &o, now_us) == 0)
        return;
    if (a->n_held == FW_HELD) {
        report2(a, "dropped", m->def->name);
        return;
    }
    a->held[a->n_held++] = o;
    report2(a, "held", m->def->name);
}

void fw_send(fw_app *a, td_msg *m, uint32_t now_us)
{
    send_re(a, m, 0, now_us);
}

/* Answers are sent while their command is delivered: rx_num is its number. */
void fw_answer(fw_app *a, td_msg *m, uint32_t now_us)
{
    send_re(a, m, a->link.rx_num, now_us);
}

int fw_room(fw_app *a, uint32_t now_us)
{
    flush_held(a, now_us);
    return a->n_held == 0 && td_link_room(&a->link) >= 2;
}

void fw_set_str(td_value *v, const char *s)
{
    size_t n = strlen(s);
    v->len = (uint8_t)(n < TD_MAX_VALUE_BYTES ? n : TD_MAX_VALUE_BYTES);
    memcpy(v->bytes, s, v->len);
}

void fw_result(fw_app *a, uint8_t tag, uint8_t code, const char *detail, uint32_t now_us)
{
    td_msg m;
    td_msg_init(&m, td_msgdef_named("command_result"));
    m.v[0].u = tag;
    m.v[1].u = code;
    fw_set_str(&m.v[2], detail);
    if (code == 0 && a->link.rx_num)
        td_carried_add(&a->carried, a->link.rx_origin, a->link.rx_num);
    fw_answer(a, &m, now_us);
}

char *fw_word(char **cursor)
{
    char *s = *cursor, *w;
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    if (!*s) {
        *cursor = s;
        return NULL;
    }
    w = s;
    while (*s && *s != ' ' && *s != '\t' && *s != '\r')
        s++;
    if (*s)
        *s++ = 0;
    *cursor = s;
    return w;
}

uint32_t fw_number(const char *word, unsigned base)
{
    uint32_t n = 0;
    for (; word && *word; word++) {
        unsigned d = (*word >= '0' && *word <= '9') ? (unsigned)(*word - '0')
                   : (*word >= 'a' && *word <= 'f') ? (unsigned)(*word - 'a' + 10)
                   : (*word >= 'A' && *word <= 'F') ? (unsigned)(*word - 'A' + 10) : 99u;
        if (d >= base)
            break;
        n = n * base + d;
    }
    return n;
}

static int busy(const fw_app *a)
{
    return a->kind == FW_TUMBLER ? a->busy : a->kind == FW_SHUFFLER && fw_shuffler_busy();
}

static int kind_command(fw_app *a, const td_msg *in, uint32_t now_us)
{
    return a->kind == FW_SHOE ? fw_shoe_command(a, in, now_us)
         : a->kind == FW_SHUFFLER ? fw_shuffler_command(a, in, now_us)
         : fw_tumbler_command(a, in, now_us);
}

static int kind_sensor(fw_app *a, const char *word, char **rest, uint32_t now_us)
{
    return a->kind == FW_SHOE ? fw_shoe_sensor(a, word, rest, now_us)
         : a->kind == FW_SHUFFLER ? fw_shuffler_sensor(a, word, rest, now_us)
         : fw_tumbler_sensor(a, word, rest, now_us);
}

static void deliver(void *ctx, uint8_t id, const uint8_t *payload, size_t len)
{
    fw_app *a = (fw_app *)ctx;
    const td_msgdef *def = td_msgdef_find(id);
    uint32_t now = a->link.heard_us;  /* when these bytes arrived */
    static td_msg in, out;  /* 1.6 KB each: static, off the stack (no reentry: one link) */
    int refusal;
    if (!def || td_msg_decode(&in, def, payload, len) != 0) {
        fw_report_num(a, "bad message", id);
        return;
    }
    report2(a, "rx", def->name);
    refusal = td_command_refusal(a->kind, &in);
    if (refusal < 0)  /* a device's message: no command, no answer */
        return;
    if (refusal == 0 && a->link.rx_num && strcmp(def->name, "identify") != 0 &&
        strcmp(def->name, "status") != 0 &&
        td_carried_has(&a->carried, a->link.rx_origin, a->link.rx_num)) {
        /* sent again (its answer was lost): carried out already, and said so again */
        fw_result(a, in.def->nfields ? (uint8_t)in.v[0].u : 0u, 0, "", now);
        report2(a, "repeat", def->name);
        return;
    }
    if (refusal > 0) {
        fw_result(a, (uint8_t)in.v[0].u, (uint8_t)refusal,
                  refusal == 1 ? "not supported" : "value outside its values", now);
    } else if (strcmp(def->name, "identify") == 0) {
        td_msg_init(&out, td_msgdef_named("identify_reply"));
        out.v[0].u = in.v[0].u;
        out.v[1].u = (uint64_t)a->kind;
        fw_set_str(&out.v[2], a->model);
        fw_set_str(&out.v[3], a->firmware);
        out.v[4].u = a->link.newest_version;
        fw_set_str(&out.v[5], a->serial);
        fw_answer(a, &out, now);
    } else if (strcmp(def->name, "status") == 0) {
        td_msg_init(&out, td_msgdef_named("status_reply"));
        out.v[0].u = in.v[0].u;
        out.v[1].u = busy(a) ? 1u : 0u;
        fw_set_str(&out.v[3], busy(a) ? "busy" : "ready");
        fw_answer(a, &out, now);
    } else if (!kind_command(a, &in, now)) {  /* its own, not carried out (none yet) */
        fw_result(a, (uint8_t)in.v[0].u, 1, "not supported", now);
    }
}

static void on_session(void *ctx, int version, uint32_t peer)
{
    fw_app *a = (fw_app *)ctx;
    fw_report_num(a, version == 1 ? "session 1" : version == 2 ? "session 2" : "session 3",
                  peer);
    a->next_heartbeat_us = a->link.heard_us + HEARTBEAT_US;
}

void fw_boot(fw_app *a, int kind, const char *serial, uint32_t boot_id, const fw_board *board,
             fw_kept *kept, uint32_t now_us)
{
    memset(a, 0, sizeof *a);
    if (kept->magic != FW_KEPT_MAGIC) {  /* a cold boot: no shoe counted yet */
        kept->magic = FW_KEPT_MAGIC;
        kept->drawn = 0;
    }
    a->kept = kept;
    a->kind = kind;
    a->board = board;
    a->serial = serial;
    a->model = kind == FW_SHOE ? "REF-SHOE" : kind == FW_SHUFFLER ? "REF-SHUFFLER"
                                                                 : "REF-TUMBLER";
    a->firmware = "c99-1.0-m3";
    a->rng = boot_id | 1u;
    a->booted_us = now_us;
    a->gate_locked = 1;  /* a shoe comes up locked */
    td_link_init(&a->link, boot_id, TD_NEWEST_VERSION, BAUD, line_write, deliver, a);
    a->link.on_session = on_session;
    td_link_connect(&a->link, now_us);
    fw_report_num(a, "boot", boot_id);
    if (kind == FW_SHOE)
        fw_report_num(a, "gate", 1);
    if (kind == FW_SHUFFLER)
        fw_shuffler_boot(a);
}

void fw_line_bytes(fw_app *a, const uint8_t *bytes, size_t len, uint32_t now_us)
{
    td_link_receive(&a->link, bytes, len, now_us);
}

void fw_sensor(fw_app *a, char *line, uint32_t now_us)
{
    char *rest = line, *word = fw_word(&rest);
    if (!word)
        return;
    if (strcmp(word, "noise") == 0) {
        a->noise_ppm = fw_number(fw_word(&rest), 10);
    } else if (!kind_sensor(a, word, &rest, now_us)) {
        report2(a, "unknown", word);
    }
}

void fw_poll(fw_app *a, uint32_t now_us)
{
    td_msg m;
    flush_held(a, now_us);
    if (a->link.state == TD_ESTABLISHED && (int32_t)(now_us - a->next_heartbeat_us) >= 0 &&
        fw_room(a, now_us)) {  /* a heartbeat is state, not an event: one refused is skipped */
        td_msg_init(&m, td_msgdef_named("heartbeat"));
        m.v[0].u = (now_us - a->booted_us) / 1000u;
        m.v[1].u = busy(a) ? 1u : 0u;
        fw_send(a, &m, now_us);
        a->next_heartbeat_us = now_us + HEARTBEAT_US;
    }
    if (a->kind == FW_TUMBLER)
        fw_tumbler_poll(a, now_us);
    if (a->kind == FW_SHUFFLER)
        fw_shuffler_poll(a, now_us);
    td_link_poll(&a->link, now_us, a->board->random32());
}
