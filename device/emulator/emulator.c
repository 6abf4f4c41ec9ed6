/*
 * A shoe, a card shuffler or a dice tumbler on a pty, built on the reference library: the
 * daemon opens the pty's slave (through LINK, a symlink, as udev gives /dev/tabled/shoe)
 * exactly as it opens a real device (a shuffler's serial port, here, rather than its USB).
 * A test drives the "hardware" with lines on stdin and reads what happened on stdout.
 *
 *   emulator shoe|shuffler|tumbler LINK [--serial S] [--version 1|2|3] [--seed N] [--speed X]
 *
 * stdin:  load CARD...   (shoe) a new shoe       draw     (shoe) the next card
 *         cut            (shoe) the cut card     throw D1 D2 D3 T1 T2 T3  (tumbler) next dice
 *         take           (shuffler) the newest shuffled cards are taken out for the shoe
 *         mode M         (shuffler) honest, or a misbehaviour for tests: switch (one card
 *                        taken out is not the one committed), short (commits to and
 *                        reveals 4 cards, claims the whole shoe), alter (reveals two cards
 *                        swapped), repeat (every chunk twice, then the whole reveal again),
 *                        recant (the whole reveal, then again with two cards swapped)
 *         button         the dealer's button     reboot   firmware reboot
 *         noise BER      flip bits on the line out (0 stops)    quit
 * stdout: pty PATH, session V BOOT, rx NAME NUM (a command: NUM its command number,
 *         version 3, else 0), repeat NAME (one carried out already, sent again: answered,
 *         not done twice), drew CARD, locked, armed 0|1, settled D D D,
 *         sent NUM NAME (the link took an event: NUM its event number within ORIGIN),
 *         origin ORIGIN (at each boot), failed N UNACKED (the link failed, the Nth time,
 *         holding UNACKED frames the host had not acknowledged),
 *         full (a draw refused: the link holds all it can), held NAME (an event waits),
 *         shuffled ID CARD... (the cards as they leave the shuffler), taken ID,
 *         refused ID WHY (a request_order), revealed ID
 */
#define _XOPEN_SOURCE 600
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../src/shuffler.h"
#include "../src/tabled_device.h"

#define MAX_CARDS TD_MAX_CARDS
#define DECK_SET 0x00C0FFEEu
#define HELD 8  /* events the sensor loop holds while the link refuses them */
#define SWITCHED 2  /* "switch": the third card, dealt in any round */
#define SHUFFLE_US 1500000.0

typedef struct {
    int shoe;  /* 1 shoe, 0 tumbler or shuffler */
    int shuffler;
    int master;
    const char *serial;
    uint8_t version;
    double speed, ber;
    uint32_t rng, booted_us, next_heartbeat_us;
    td_link link;
    /* shoe */
    char cards[MAX_CARDS][2];
    int n_cards, drawn, gate_locked;
    /* tumbler */
    int armed, busy, tumbles_done;
    uint32_t next_tumble_us, settle_us;
    uint8_t dice[3], script[3];
    uint16_t tilt[3], script_tilt[3];
    int scripted;
    /* Back-pressure: an event the link refused waits here, in order, and goes first when
     * there is room; while any waits, the hardware takes no new action that would make
     * another (the shoe keeps its next card). */
    td_out held[HELD];
    int n_held;
    /* shuffler: its core (the firmware's too), and how this one misbehaves */
    td_shuffler sf;
    uint32_t shuffled_us;
    char mode[16];
    int reveal_pass;  /* "repeat", "recant": the reveal's second pass */
    uint32_t command_num;  /* the command being handled (version 3), for its answers */
    td_carried carried;  /* the commands carried out: one sent again is not done twice */
} emu;

static int is_tumbler(const emu *e)
{
    return !e->shoe && !e->shuffler;
}

static int busy(const emu *e)
{
    return e->busy || (e->shuffler && e->sf.shuffles[e->sf.newest].state == TD_SHUFFLING);
}

static uint32_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
}

static uint32_t rand32(emu *e)
{
    e->rng ^= e->rng << 13;
    e->rng ^= e->rng >> 17;
    e->rng ^= e->rng << 5;
    return e->rng;
}

static void line_write(void *ctx, const uint8_t *bytes, size_t len)
{
    emu *e = (emu *)ctx;
    uint8_t buf[TD_MAX_FRAME];
    size_t i, off = 0;
    memcpy(buf, bytes, len);
    for (i = 0; e->ber > 0 && i < len * 8; i++)
        if ((double)(rand32(e) % 1000000u) < e->ber * 1e6)
            buf[i / 8] ^= (uint8_t)(1u << (i % 8));
    while (off < len) {
        ssize_t n = write(e->master, buf + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;  /* nobody reads the line, or it is full: those bytes are lost */
        off += (size_t)n;
    }
}

/* The link took o: say so for an event, with its number, so a test can count every
 * event the device sent against what the host recorded. */
static int offer(emu *e, td_out *o)
{
    if (td_link_send_out(&e->link, o, now_us()) != 0)
        return -1;
    if (td_msg_is_event(o->msg)) {
        fprintf(stdout, "sent %lu %s\n", (unsigned long)o->num, td_msgdef_find(o->msg)->name);
        fflush(stdout);
    }
    return 0;
}

static void flush_held(emu *e)
{
    int taken = 0;
    while (taken < e->n_held && offer(e, &e->held[taken]) == 0)
        taken++;
    memmove(e->held, e->held + taken, (size_t)(e->n_held - taken) * sizeof e->held[0]);
    e->n_held -= taken;
}

/* Send m, the answer to the host's command numbered re (0: not an answer). */
static void send_re(emu *e, td_msg *m, uint32_t re)
{
    td_out o;
    int n = td_msg_encode(m, o.payload, sizeof o.payload);
    if (n < 0) {
        fprintf(stdout, "unencodable %s\n", m->def->name);
        return;
    }
    o.msg = m->def->id;
    o.len = (uint8_t)n;
    o.re = re;
    flush_held(e);
    if (e->n_held == 0 && offer(e, &o) == 0)
        return;
    if (e->n_held == HELD) {  /* the actions that make events wait for room: not reached */
        fprintf(stdout, "dropped %s\n", m->def->name);
        return;
    }
    e->held[e->n_held++] = o;
    fprintf(stdout, "held %s\n", m->def->name);
}

static void send(emu *e, td_msg *m)
{
    send_re(e, m, 0);
}

/* Room for an action's events (a card and shoe_empty): the sensor loop waits otherwise. */
static int can_act(emu *e)
{
    flush_held(e);
    return e->n_held == 0 && td_link_room(&e->link) >= 2;
}

static void set_str(td_value *v, const char *s)
{
    v->len = (uint8_t)strlen(s);
    memcpy(v->bytes, s, v->len);
}

static void result(emu *e, uint8_t tag, uint8_t code, const char *detail)
{
    td_msg m;
    td_msg_init(&m, td_msgdef_named("command_result"));
    m.v[0].u = tag;
    m.v[1].u = code;
    set_str(&m.v[2], detail);
    if (code == 0 && e->command_num)
        td_carried_add(&e->carried, e->link.rx_origin, e->command_num);
    send_re(e, &m, e->command_num);
}

static void activate(emu *e, uint8_t source)
{
    td_msg m;
    int i;
    td_msg_init(&m, td_msgdef_named("activated"));
    m.v[0].u = source;
    m.v[1].u = (uint64_t)e->armed;
    send(e, &m);
    e->armed = 0;
    e->busy = 1;
    e->tumbles_done = 0;
    for (i = 0; i < 3; i++) {
        e->dice[i] = e->scripted ? e->script[i] : (uint8_t)(1 + rand32(e) % 6);
        e->tilt[i] = e->scripted ? e->script_tilt[i] : 0;
    }
    e->scripted = 0;
    e->next_tumble_us = now_us() + (uint32_t)(400000 / e->speed);
    e->settle_us = now_us() + (uint32_t)((3 * 400000 + 800000) / e->speed);
}

/* -- the shuffler ---------------------------------------------------------------- */

static uint32_t random_of(void *e)
{
    return rand32((emu *)e);
}

static void start_shuffle(emu *e, uint8_t tag, uint8_t decks)
{
    td_msg m;
    uint8_t code;
    const char *why = td_shuffler_start(&e->sf, decks, &code);
    if (why) {
        result(e, tag, code, why);
        return;
    }
    result(e, tag, 0, "");
    td_shuffle_order(&e->sf.shuffles[e->sf.newest], NULL, 0, random_of, e);
    e->shuffled_us = now_us() + (uint32_t)(SHUFFLE_US / e->speed);
    td_shuffler_started(&e->sf, &m);
    send(e, &m);
}

/* The shuffle completes: certified with the commitment of the session's version. */
static void shuffle_complete(emu *e)
{
    const td_shuffle *sh = &e->sf.shuffles[e->sf.newest];
    td_msg m;
    int i;
    td_shuffler_complete(&e->sf, e->link.version,
                         strcmp(e->mode, "short") == 0 ? 4 : sh->total, &m);
    send(e, &m);
    /* The cards as they leave the shuffler; "switch": the one at draw SWITCHED + 1 is not the
     * one committed (a card switched on its way to the shoe). */
    fprintf(stdout, "shuffled %lu", (unsigned long)sh->id);
    for (i = 0; i < sh->total; i++) {
        char c[2];
        memcpy(c, sh->order[i], 2);
        if (i == SWITCHED && strcmp(e->mode, "switch") == 0)
            td_card_at((td_card_index(c) + 1) % 52, c);
        fprintf(stdout, " %.2s", c);
    }
    fprintf(stdout, "\n");
    fflush(stdout);
}

static void request_order(emu *e, uint8_t tag, uint32_t id)
{
    int began;
    const char *why = td_shuffler_request(&e->sf, id, e->command_num, &began);
    if (why) {
        result(e, tag, 3, why);
        fprintf(stdout, "refused %lu %s\n", (unsigned long)id, why);
    }
    if (began)
        e->reveal_pass = 0;
}

/* The next chunk of a reveal, once the link has room for it (twice over: "repeat"). */
static void reveal_step(emu *e)
{
    const td_shuffle *sh = &e->sf.shuffles[e->sf.reveal_slot];
    int repeat = strcmp(e->mode, "repeat") == 0, i;
    int recant = strcmp(e->mode, "recant") == 0;  /* a second pass, not the same order */
    uint16_t total = strcmp(e->mode, "short") == 0 ? 4 : sh->total, n;
    td_msg m;
    if (!e->sf.revealing || e->n_held || td_link_room(&e->link) < (repeat ? 2 : 1))
        return;
    n = td_shuffler_chunk(&e->sf, total, &m);
    if ((strcmp(e->mode, "alter") == 0 || (recant && e->reveal_pass == 1)) &&
        e->sf.reveal_off == 0) {
        for (i = 10; i + 1 < n && !memcmp(m.v[4].bytes + 2 * i, m.v[4].bytes + 2 * i + 2, 2);)
            i++;  /* two neighbours that differ, swapped */
        if (i + 1 < n) {
            uint8_t t[2];
            memcpy(t, m.v[4].bytes + 2 * i, 2);
            memcpy(m.v[4].bytes + 2 * i, m.v[4].bytes + 2 * i + 2, 2);
            memcpy(m.v[4].bytes + 2 * i + 2, t, 2);
        }
    }
    send_re(e, &m, e->sf.reveal_re);
    if (repeat)
        send_re(e, &m, e->sf.reveal_re);
    if (!td_shuffler_chunk_sent(&e->sf, n, total))
        return;
    if ((repeat || recant) && e->reveal_pass == 0) {  /* and the whole reveal again */
        e->reveal_pass = 1;
        e->sf.reveal_off = 0;
        return;
    }
    e->sf.revealing = 0;
    fprintf(stdout, "revealed %lu\n", (unsigned long)sh->id);
    fflush(stdout);
}

static void on_message(void *ctx, uint8_t id, const uint8_t *payload, size_t len)
{
    emu *e = (emu *)ctx;
    const td_msgdef *def = td_msgdef_find(id);
    td_msg in, out;
    int refusal;
    if (!def || td_msg_decode(&in, def, payload, len) != 0) {
        fprintf(stdout, "bad message 0x%02x\n", id);
        return;
    }
    fprintf(stdout, "rx %s %lu\n", def->name, (unsigned long)e->link.rx_num);
    e->command_num = e->link.rx_num;
    refusal = td_command_refusal(e->shoe ? 1 : e->shuffler ? 2 : 3, &in);
    if (refusal < 0) {  /* a device's message: no command, no answer */
        fflush(stdout);
        return;
    }
    if (refusal > 0) {
        result(e, (uint8_t)in.v[0].u, (uint8_t)refusal,
               refusal == 1 ? "not supported" : "value outside its values");
        fflush(stdout);
        return;
    }
    if (e->command_num && strcmp(def->name, "identify") != 0 &&
        strcmp(def->name, "status") != 0 &&
        td_carried_has(&e->carried, e->link.rx_origin, e->command_num)) {
        /* sent again (its answer was lost): carried out already, and said so again */
        result(e, (uint8_t)in.v[0].u, 0, "");
        fprintf(stdout, "repeat %s\n", def->name);
        fflush(stdout);
        return;
    }
    if (strcmp(def->name, "identify") == 0) {
        td_msg_init(&out, td_msgdef_named("identify_reply"));
        out.v[0].u = in.v[0].u;
        out.v[1].u = e->shoe ? 1 : e->shuffler ? 2 : 3;
        set_str(&out.v[2], e->shoe ? "REF-SHOE" : e->shuffler ? "REF-SHUFFLER" : "REF-TUMBLER");
        set_str(&out.v[3], "c99-1.0");
        out.v[4].u = e->version;
        set_str(&out.v[5], e->serial);
        send_re(e, &out, e->command_num);
    } else if (strcmp(def->name, "status") == 0) {
        td_msg_init(&out, td_msgdef_named("status_reply"));
        out.v[0].u = in.v[0].u;
        out.v[1].u = (uint64_t)busy(e);
        set_str(&out.v[3], busy(e) ? "busy" : "ready");
        send_re(e, &out, e->command_num);
    } else if (e->shoe && strcmp(def->name, "lock_gate") == 0) {
        e->gate_locked = (int)in.v[1].u;
        result(e, (uint8_t)in.v[0].u, 0, "");
        td_msg_init(&out, td_msgdef_named("gate"));
        out.v[0].u = in.v[1].u;
        send(e, &out);
    } else if (e->shoe && strcmp(def->name, "set_clock") == 0) {
        result(e, (uint8_t)in.v[0].u, 0, "");
    } else if (e->shuffler && strcmp(def->name, "start_shuffle") == 0) {
        start_shuffle(e, (uint8_t)in.v[0].u, (uint8_t)in.v[1].u);
    } else if (e->shuffler && strcmp(def->name, "request_order") == 0) {
        request_order(e, (uint8_t)in.v[0].u, (uint32_t)in.v[1].u);
    } else if (e->shuffler && strcmp(def->name, "inventory") == 0) {
        td_shuffler_inventory(&e->sf, (uint8_t)in.v[0].u, &out);
        send_re(e, &out, e->command_num);
    } else if (is_tumbler(e) && strcmp(def->name, "arm") == 0) {
        e->armed = (int)in.v[1].u;
        result(e, (uint8_t)in.v[0].u, 0, "");
        fprintf(stdout, "armed %d\n", e->armed);
    } else if (is_tumbler(e) && strcmp(def->name, "tumble_now") == 0) {
        if (!e->armed)
            result(e, (uint8_t)in.v[0].u, 3, "not armed");
        else if (e->busy)
            result(e, (uint8_t)in.v[0].u, 5, "tumbling");
        else {
            result(e, (uint8_t)in.v[0].u, 0, "");
            activate(e, 2);
        }
    } else {  /* its own command that it does not carry out (none yet) */
        result(e, (uint8_t)in.v[0].u, 1, "not supported");
    }
    fflush(stdout);
}

static void on_session(void *ctx, int version, uint32_t peer)
{
    emu *e = (emu *)ctx;
    fprintf(stdout, "session %d %08x\n", version, peer);
    fflush(stdout);
    e->next_heartbeat_us = now_us() + 1000000u;
}

static void boot(emu *e)
{
    e->booted_us = now_us();
    td_link_init(&e->link, rand32(e), e->version, 115200, line_write, on_message, e);
    e->link.on_session = on_session;
    fprintf(stdout, "origin %lu\n", (unsigned long)e->link.origin);
    e->gate_locked = 1;
    e->armed = e->busy = 0;
    e->n_held = 0;  /* a reboot keeps nothing but the shuffles (the shuffler's own record) */
    e->sf.revealing = 0;
    td_link_connect(&e->link, now_us());
}

static void timers(emu *e)
{
    uint32_t now = now_us();
    td_msg m;
    flush_held(e);
    if (e->link.state == TD_ESTABLISHED && (int32_t)(now - e->next_heartbeat_us) >= 0 &&
        can_act(e)) {  /* a heartbeat is state, not an event: one refused is skipped */
        td_msg_init(&m, td_msgdef_named("heartbeat"));
        m.v[0].u = (now - e->booted_us) / 1000u;
        m.v[1].u = (uint64_t)busy(e);
        send(e, &m);
        e->next_heartbeat_us = now + 1000000u;
    }
    if (e->busy && e->tumbles_done < 3 && (int32_t)(now - e->next_tumble_us) >= 0 &&
        can_act(e)) {
        td_msg_init(&m, td_msgdef_named("tumble"));
        m.v[0].u = (uint64_t)++e->tumbles_done;
        send(e, &m);
        e->next_tumble_us = now + (uint32_t)(400000 / e->speed);
    }
    if (e->busy && (int32_t)(now - e->settle_us) >= 0 && can_act(e)) {
        int i;
        td_msg_init(&m, td_msgdef_named("settled"));
        for (i = 0; i < 3; i++) {
            m.v[0].bytes[i] = e->dice[i];
            m.v[1].u16s[i] = e->tilt[i];
            m.v[2].bytes[i] = e->tilt[i] <= 50;  /* flat: at most 5.0 degrees */
        }
        m.v[0].len = m.v[1].len = m.v[2].len = 3;
        m.v[3].u = 97;
        e->busy = 0;
        send(e, &m);
        fprintf(stdout, "settled %d %d %d\n", e->dice[0], e->dice[1], e->dice[2]);
        fflush(stdout);
    }
    if (e->shuffler && e->sf.shuffles[e->sf.newest].state == TD_SHUFFLING &&
        (int32_t)(now - e->shuffled_us) >= 0 && can_act(e))
        shuffle_complete(e);
    if (e->shuffler && e->link.state == TD_ESTABLISHED)
        reveal_step(e);
    {
        /* A link failure, with the frames it held unacknowledged: a test that cuts the
         * line knows its cut landed with events in flight, not in a quiet moment. */
        uint32_t failures = e->link.failures;
        unsigned unacked = e->link.n_unacked;
        td_link_poll(&e->link, now, rand32(e));
        if (e->link.failures != failures) {
            fprintf(stdout, "failed %lu %u\n", (unsigned long)e->link.failures, unacked);
            fflush(stdout);
        }
    }
}

static void command(emu *e, char *line)
{
    char *word = strtok(line, " \n");
    td_msg m;
    if (!word)
        return;
    if (strcmp(word, "load") == 0 && e->shoe) {
        char *c;
        e->n_cards = e->drawn = 0;
        while ((c = strtok(NULL, " \n")) && e->n_cards < MAX_CARDS)
            if (strlen(c) == 2)
                memcpy(e->cards[e->n_cards++], c, 2);
        td_msg_init(&m, td_msgdef_named("shoe_loaded"));
        m.v[0].u = (uint64_t)e->n_cards;
        m.v[1].u = DECK_SET;
        send(e, &m);
    } else if (strcmp(word, "draw") == 0 && e->shoe) {
        if (e->gate_locked || e->drawn >= e->n_cards) {
            fprintf(stdout, "locked\n");
        } else if (!can_act(e)) {
            fprintf(stdout, "full\n");  /* the card stays in the shoe until there is room */
        } else {
            td_msg_init(&m, td_msgdef_named("card_drawn"));
            m.v[0].u = (uint64_t)++e->drawn;
            memcpy(m.v[1].bytes, e->cards[e->drawn - 1], 2);
            m.v[1].len = 2;
            m.v[2].u = 99;
            m.v[3].u = DECK_SET;
            send(e, &m);
            fprintf(stdout, "drew %.2s\n", e->cards[e->drawn - 1]);
            if (e->drawn == e->n_cards) {
                td_msg_init(&m, td_msgdef_named("shoe_empty"));
                m.v[0].u = (uint64_t)e->drawn;
                send(e, &m);
            }
        }
    } else if (strcmp(word, "cut") == 0 && e->shoe) {
        td_msg_init(&m, td_msgdef_named("cut_card"));
        m.v[0].u = (uint64_t)e->drawn;
        send(e, &m);
    } else if (strcmp(word, "throw") == 0 && is_tumbler(e)) {
        int i;
        for (i = 0; i < 6; i++) {
            char *t = strtok(NULL, " \n");
            unsigned long v = t ? strtoul(t, NULL, 10) : 0;
            if (i < 3) e->script[i] = (uint8_t)v;
            else e->script_tilt[i - 3] = (uint16_t)v;
        }
        e->scripted = 1;
    } else if (strcmp(word, "button") == 0) {
        if (e->shoe) {
            td_msg_init(&m, td_msgdef_named("dealer_button"));
            m.v[0].u = 1;
            send(e, &m);
        } else if (is_tumbler(e) && !e->busy) {
            activate(e, 1);
        }
    } else if (strcmp(word, "take") == 0 && e->shuffler) {
        td_shuffle *sh = &e->sf.shuffles[e->sf.newest];
        if (sh->state == TD_IN_SHUFFLER) {
            sh->state = TD_TAKEN;
            fprintf(stdout, "taken %lu\n", (unsigned long)sh->id);
        } else {
            fprintf(stdout, "nothing to take\n");
        }
    } else if (strcmp(word, "mode") == 0 && e->shuffler) {
        char *t = strtok(NULL, " \n");
        snprintf(e->mode, sizeof e->mode, "%s", t ? t : "honest");
    } else if (strcmp(word, "reboot") == 0) {
        boot(e);
    } else if (strcmp(word, "noise") == 0) {
        char *t = strtok(NULL, " \n");
        e->ber = t ? strtod(t, NULL) : 0.0;
    } else if (strcmp(word, "quit") == 0) {
        exit(0);
    } else {
        fprintf(stdout, "unknown command %s\n", word);
    }
    fflush(stdout);
}

static int open_pty(const char *link)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY), slave;
    struct termios t;
    char tmp[4096];
    const char *name;
    if (master < 0 || grantpt(master) || unlockpt(master) || !(name = ptsname(master)))
        return -1;
    slave = open(name, O_RDWR | O_NOCTTY);  /* kept open: no EIO while the daemon reconnects */
    if (slave < 0 || tcgetattr(slave, &t))
        return -1;
    t.c_iflag &= ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
    t.c_oflag &= ~(tcflag_t)OPOST;
    t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
    t.c_cflag &= ~(tcflag_t)(CSIZE | PARENB);
    t.c_cflag |= CS8;
    tcsetattr(slave, TCSANOW, &t);
    snprintf(tmp, sizeof tmp, "%s.tmp", link);
    unlink(tmp);
    if (symlink(name, tmp) || rename(tmp, link))
        return -1;
    fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);  /* a full line drops bytes */
    fprintf(stdout, "pty %s\n", name);
    fflush(stdout);
    return master;
}

int main(int argc, char **argv)
{
    static emu e;
    static char line[8192];
    size_t used = 0;
    int i;
    if (argc < 3 || (strcmp(argv[1], "shoe") && strcmp(argv[1], "shuffler") &&
                     strcmp(argv[1], "tumbler"))) {
        fprintf(stderr, "usage: %s shoe|shuffler|tumbler LINK [--serial S] [--version 1|2|3] "
                        "[--seed N] [--speed X]\n", argv[0]);
        return 2;
    }
    e.shoe = strcmp(argv[1], "shoe") == 0;
    e.shuffler = strcmp(argv[1], "shuffler") == 0;
    e.serial = e.shoe ? "REF-SH-1" : e.shuffler ? "REF-SF-1" : "REF-TM-1";
    strcpy(e.mode, "honest");
    e.version = TD_NEWEST_VERSION;
    e.speed = 1.0;
    e.rng = (uint32_t)now_us() | 1u;
    for (i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--serial") == 0) e.serial = argv[i + 1];
        else if (strcmp(argv[i], "--version") == 0) e.version = (uint8_t)atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0) e.rng = (uint32_t)strtoul(argv[i + 1], NULL, 10) | 1u;
        else if (strcmp(argv[i], "--speed") == 0) e.speed = strtod(argv[i + 1], NULL);
    }
    e.master = open_pty(argv[2]);
    if (e.master < 0) {
        perror("pty");
        return 1;
    }
    e.sf.next_id = 1000u + rand32(&e) % 1000u;
    boot(&e);
    for (;;) {
        struct pollfd fds[2];
        fds[0].fd = e.master;
        fds[0].events = POLLIN;
        fds[1].fd = 0;
        fds[1].events = POLLIN;
        if (poll(fds, 2, 2) < 0 && errno != EINTR)
            return 1;
        if (fds[0].revents & POLLIN) {
            uint8_t buf[1024];
            ssize_t n = read(e.master, buf, sizeof buf);
            if (n > 0)
                td_link_receive(&e.link, buf, (size_t)n, now_us());
        }
        if (fds[1].revents & (POLLIN | POLLHUP)) {
            ssize_t n = read(0, line + used, sizeof line - 1 - used);
            char *nl;
            if (n <= 0)
                return 0;  /* the test went away */
            used += (size_t)n;
            line[used] = 0;
            while ((nl = strchr(line, '\n')) != NULL) {
                char cmd[8192];
                size_t k = (size_t)(nl - line) + 1;
                memcpy(cmd, line, k);
                cmd[k] = 0;
                memmove(line, line + k, used - k + 1);
                used -= k;
                command(&e, cmd);
            }
        }
        timers(&e);
    }
}
