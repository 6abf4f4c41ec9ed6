/* The card shuffler: shuffles 1-10 decks (or the order its test port scripted), certifies
 * the shuffle with the commitment of the session's version (td_commitment, the same
 * device/src/sha256.c the C emulator uses), and reveals an order in chunks once its cards
 * have left the shuffler, never the order of a shoe still inside it (spec: request_order).
 * The state machine follows device/emulator/emulator.c's shuffler (honest mode only).
 *
 * Sensor lines: script CARD...   cards appended to the next shuffle's order (a scenario's)
 *               take             the newest shuffle's cards are taken out for the shoe
 * Reports: order CARD... (the order, 26 cards a line, before it is certified),
 *          shuffled ID N, taken ID, refused ID WHY, revealed ID. */
#include <string.h>

#include "firmware.h"

#define MAX_CARDS 520      /* ten decks */
#define CHUNK 26           /* cards per order_chunk: small frames survive a noisy line */
#define SHUFFLE_US 1500000u
#define REPORT_CARDS 26

enum { NONE, SHUFFLING, IN_SHUFFLER, TAKEN };  /* a shuffle's cards */

typedef struct {
    uint32_t id;
    uint8_t decks;
    uint16_t total;
    int state;
    uint8_t nonce[16];
    char order[MAX_CARDS][2];  /* as committed */
} shuffle_rec;

/* 3 KB: static, in this module, as one image runs one device. The newest shuffle and the
 * one before it (a shoe being dealt from the older while the newer is ready). */
static struct {
    shuffle_rec shuffles[2];
    int newest;
    uint32_t next_id, done_us;
    char script[MAX_CARDS][2];
    uint16_t n_script;
    int revealing, reveal_slot;
    uint16_t reveal_off;
    uint32_t reveal_re;
} sf;

/* The message being built (1.6 KB: one, static, off the stack; nothing here reenters). */
static td_msg msg;

static const char INVENTORY[] = "A23456789TJQK";
static const char SUITS[] = "SHDC";

static int inventory_index(const char *card)
{
    const char *r = memchr(INVENTORY, card[0], 13), *s = memchr(SUITS, card[1], 4);
    return r && s ? (int)(s - SUITS) * 13 + (int)(r - INVENTORY) : -1;
}

static uint32_t next_random(fw_app *a)
{
    return a->board->random32();
}

void fw_shuffler_boot(fw_app *a)
{
    /* A reset forgets the shuffles (RAM the startup code clears): asked for one, the
     * firmware refuses "no such shuffle", and the host voids that shoe's verification. */
    memset(&sf, 0, sizeof sf);
    sf.next_id = 1000u + next_random(a) % 1000u;
}

static void report_order(fw_app *a, const shuffle_rec *sh)
{
    char line[6 + 3 * REPORT_CARDS];
    int i, k;
    for (i = 0; i < sh->total; i += REPORT_CARDS) {
        memcpy(line, "order", 5);
        k = 5;
        for (int j = i; j < sh->total && j < i + REPORT_CARDS; j++) {
            line[k++] = ' ';
            line[k++] = sh->order[j][0];
            line[k++] = sh->order[j][1];
        }
        line[k] = 0;
        a->board->report(line);
    }
}

static void start_shuffle(fw_app *a, uint8_t tag, uint8_t decks, uint32_t now_us)
{
    shuffle_rec *sh;
    td_msg *m = &msg;
    int i, j;
    if (sf.shuffles[sf.newest].state == SHUFFLING) {
        fw_result(a, tag, 5, "shuffling", now_us);
        return;
    }
    if (decks < 1 || decks > 10) {
        fw_result(a, tag, 2, "decks not 1-10", now_us);
        return;
    }
    fw_result(a, tag, 0, "", now_us);
    sf.newest ^= 1;  /* the older of the two gives way (its shoe was revealed or dropped) */
    if (sf.revealing && sf.reveal_slot == sf.newest)
        sf.revealing = 0;
    sh = &sf.shuffles[sf.newest];
    sh->id = sf.next_id++;
    sh->decks = decks;
    sh->state = SHUFFLING;
    if (sf.n_script) {  /* the order the test port gave, cards missing or extra as given */
        sh->total = sf.n_script;
        memcpy(sh->order, sf.script, 2u * sf.n_script);
        sf.n_script = 0;
    } else {
        sh->total = (uint16_t)(decks * 52);
        for (i = 0; i < sh->total; i++) {
            sh->order[i][0] = INVENTORY[i % 13];
            sh->order[i][1] = SUITS[(i / 13) % 4];
        }
        for (i = sh->total - 1; i > 0; i--) {  /* Fisher-Yates */
            char t[2];
            j = (int)(next_random(a) % (uint32_t)(i + 1));
            memcpy(t, sh->order[i], 2);
            memcpy(sh->order[i], sh->order[j], 2);
            memcpy(sh->order[j], t, 2);
        }
    }
    for (i = 0; i < 16; i++)
        sh->nonce[i] = (uint8_t)next_random(a);
    sf.done_us = now_us + SHUFFLE_US;
    td_msg_init(m, td_msgdef_named("shuffle_started"));
    m->v[0].u = sh->id;
    m->v[1].u = decks;
    fw_send(a, m, now_us);
}

/* The shuffle completes: its order reported first (the rig loads the shoe with it once
 * the host has certified it), then certified with the session version's commitment. */
static void shuffle_complete(fw_app *a, uint32_t now_us)
{
    shuffle_rec *sh = &sf.shuffles[sf.newest];
    td_msg *m = &msg;
    int i, k;
    sh->state = IN_SHUFFLER;
    report_order(a, sh);
    fw_report_num(a, "shuffled", sh->id);
    td_msg_init(m, td_msgdef_named("shuffle_complete"));
    m->v[0].u = sh->id;
    m->v[1].u = sh->decks;
    m->v[2].len = 52;
    for (i = 0; i < sh->total; i++)
        if ((k = inventory_index(sh->order[i])) >= 0)
            m->v[2].bytes[k]++;
    m->v[3].u = 0;
    m->v[4].u = 1;
    m->v[5].len = 32;
    td_commitment(a->link.version, sh->id, sh->decks, sh->nonce,
                  (const char (*)[2])sh->order, sh->total, m->v[5].bytes);
    fw_send(a, m, now_us);
}

static void request_order(fw_app *a, uint8_t tag, uint32_t id, uint32_t now_us)
{
    int slot = sf.shuffles[0].state != NONE && sf.shuffles[0].id == id ? 0 :
               sf.shuffles[1].state != NONE && sf.shuffles[1].id == id ? 1 : -1;
    const char *why = slot < 0 ? "no such shuffle" :
                      sf.shuffles[slot].state == SHUFFLING ? "still shuffling" :
                      sf.shuffles[slot].state == IN_SHUFFLER ? "its cards are still in the "
                                                               "shuffler" : NULL;
    if (why) {  /* spec: refused, no chunk; never the order of a shoe still in use */
        fw_result(a, tag, 3, why, now_us);
        fw_report_num(a, "refused", id);
        return;
    }
    if (sf.revealing && sf.reveal_slot == slot)
        return;  /* asked again while revealing it: the reveal under way answers */
    sf.revealing = 1;
    sf.reveal_re = a->link.rx_num;  /* the chunks answer this command (version 3's RE) */
    sf.reveal_slot = slot;
    sf.reveal_off = 0;
}

/* The next chunk of a reveal, once the link has room for it. */
static void reveal_step(fw_app *a, uint32_t now_us)
{
    shuffle_rec *sh = &sf.shuffles[sf.reveal_slot];
    td_msg *m = &msg;
    td_out o;
    uint16_t n;
    int len;
    if (!sf.revealing || !fw_room(a, now_us))
        return;
    n = (uint16_t)(sh->total - sf.reveal_off < CHUNK ? sh->total - sf.reveal_off : CHUNK);
    td_msg_init(m, td_msgdef_named("order_chunk"));
    m->v[0].u = sh->id;
    m->v[1].u = sf.reveal_off;
    m->v[2].u = sh->total;
    m->v[3].len = 16;
    memcpy(m->v[3].bytes, sh->nonce, 16);
    m->v[4].len = (uint8_t)n;  /* card[]: its length in cards */
    memcpy(m->v[4].bytes, sh->order[sf.reveal_off], 2u * n);
    len = td_msg_encode(m, o.payload, sizeof o.payload);
    if (len < 0)
        return;
    o.msg = m->def->id;
    o.len = (uint8_t)len;
    o.re = sf.reveal_re;
    if (td_link_send_out(&a->link, &o, now_us) != 0)
        return;
    sf.reveal_off = (uint16_t)(sf.reveal_off + n);
    if (sf.reveal_off < sh->total)
        return;
    sf.revealing = 0;
    fw_report_num(a, "revealed", sh->id);
}

int fw_shuffler_busy(void)
{
    return sf.shuffles[sf.newest].state == SHUFFLING;
}

int fw_shuffler_command(fw_app *a, const td_msg *in, uint32_t now_us)
{
    td_msg *out = &msg;
    const shuffle_rec *sh = &sf.shuffles[sf.newest];
    int i, k;
    if (strcmp(in->def->name, "start_shuffle") == 0) {
        start_shuffle(a, (uint8_t)in->v[0].u, (uint8_t)in->v[1].u, now_us);
    } else if (strcmp(in->def->name, "request_order") == 0) {
        request_order(a, (uint8_t)in->v[0].u, (uint32_t)in->v[1].u, now_us);
    } else if (strcmp(in->def->name, "inventory") == 0) {
        td_msg_init(out, td_msgdef_named("inventory_reply"));
        out->v[0].u = in->v[0].u;
        out->v[1].len = 52;
        for (i = 0; sh->state == IN_SHUFFLER && i < sh->total; i++)
            if ((k = inventory_index(sh->order[i])) >= 0)
                out->v[1].bytes[k]++;
        fw_answer(a, out, now_us);
    } else {
        return 0;
    }
    return 1;
}

int fw_shuffler_sensor(fw_app *a, const char *word, char **rest, uint32_t now_us)
{
    shuffle_rec *sh = &sf.shuffles[sf.newest];
    const char *card;
    (void)now_us;
    if (strcmp(word, "script") == 0) {
        while ((card = fw_word(rest)) != NULL && sf.n_script < MAX_CARDS)
            if (strlen(card) == 2)
                memcpy(sf.script[sf.n_script++], card, 2);
        fw_report_num(a, "scripted", sf.n_script);
    } else if (strcmp(word, "take") == 0) {
        if (sh->state == IN_SHUFFLER) {
            sh->state = TAKEN;
            fw_report_num(a, "taken", sh->id);
        } else {
            a->board->report("nothing to take");
        }
    } else {
        return 0;
    }
    return 1;
}

void fw_shuffler_poll(fw_app *a, uint32_t now_us)
{
    if (sf.shuffles[sf.newest].state == SHUFFLING && (int32_t)(now_us - sf.done_us) >= 0 &&
        fw_room(a, now_us))
        shuffle_complete(a, now_us);
    if (a->link.state == TD_ESTABLISHED)
        reveal_step(a, now_us);
}
