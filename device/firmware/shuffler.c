/* The card shuffler: shuffles 1-10 decks (or the order its test port scripted), certifies
 * the shuffle with the commitment of the session's version, and reveals an order in chunks
 * once its cards have left the shuffler, never the order of a shoe still inside it (spec:
 * request_order). Its core is device/src/shuffler.c, the C emulator's too (whose shuffler
 * also misbehaves for tests); this is the honest one, on a microcontroller.
 *
 * Sensor lines: script CARD...   cards appended to the next shuffle's order (a scenario's)
 *               take             the newest shuffle's cards are taken out for the shoe
 * Reports: order CARD... (the order, 26 cards a line, before it is certified),
 *          shuffled ID N, taken ID, refused ID WHY, revealed ID. */
#include <string.h>

#include "../src/shuffler.h"
#include "firmware.h"

#define SHUFFLE_US 1500000u
#define REPORT_CARDS 26

/* 3 KB: static, in this module, as one image runs one device. */
static struct {
    td_shuffler core;
    uint32_t done_us;
    char script[TD_MAX_CARDS][2];
    uint16_t n_script;
} sf;

/* The message being built (1.6 KB: one, static, off the stack; nothing here reenters). */
static td_msg msg;

static uint32_t next_random(void *a)
{
    return ((fw_app *)a)->board->random32();
}

void fw_shuffler_boot(fw_app *a)
{
    /* A reset forgets the shuffles (RAM the startup code clears): asked for one, the
     * firmware refuses "no such shuffle", and the host voids that shoe's verification. */
    memset(&sf, 0, sizeof sf);
    sf.core.next_id = 1000u + next_random(a) % 1000u;
}

static void report_order(fw_app *a, const td_shuffle *sh)
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
    uint8_t code;
    const char *why = td_shuffler_start(&sf.core, decks, &code);
    if (why) {
        fw_result(a, tag, code, why, now_us);
        return;
    }
    fw_result(a, tag, 0, "", now_us);
    /* the order the test port gave, cards missing or extra as given, or a shuffle */
    td_shuffle_order(&sf.core.shuffles[sf.core.newest], (const char (*)[2])sf.script,
                     sf.n_script, next_random, a);
    sf.n_script = 0;
    sf.done_us = now_us + SHUFFLE_US;
    td_shuffler_started(&sf.core, &msg);
    fw_send(a, &msg, now_us);
}

/* The shuffle completes: its order reported first (the rig loads the shoe with it once
 * the host has certified it), then certified with the session version's commitment. */
static void shuffle_complete(fw_app *a, uint32_t now_us)
{
    const td_shuffle *sh = &sf.core.shuffles[sf.core.newest];
    report_order(a, sh);
    fw_report_num(a, "shuffled", sh->id);
    td_shuffler_complete(&sf.core, a->link.version, sh->total, &msg);
    fw_send(a, &msg, now_us);
}

static void request_order(fw_app *a, uint8_t tag, uint32_t id, uint32_t now_us)
{
    int began;
    /* the chunks answer this command (version 3's RE) */
    const char *why = td_shuffler_request(&sf.core, id, a->link.rx_num, &began);
    if (why) {
        fw_result(a, tag, 3, why, now_us);
        fw_report_num(a, "refused", id);
    }
}

/* The next chunk of a reveal, once the link has room for it. */
static void reveal_step(fw_app *a, uint32_t now_us)
{
    const td_shuffle *sh = &sf.core.shuffles[sf.core.reveal_slot];
    td_out o;
    uint16_t n;
    int len;
    if (!sf.core.revealing || !fw_room(a, now_us))
        return;
    n = td_shuffler_chunk(&sf.core, sh->total, &msg);
    len = td_msg_encode(&msg, o.payload, sizeof o.payload);
    if (len < 0)
        return;
    o.msg = msg.def->id;
    o.len = (uint8_t)len;
    o.re = sf.core.reveal_re;
    if (td_link_send_out(&a->link, &o, now_us) != 0)
        return;
    if (!td_shuffler_chunk_sent(&sf.core, n, sh->total))
        return;
    sf.core.revealing = 0;
    fw_report_num(a, "revealed", sh->id);
}

int fw_shuffler_busy(void)
{
    return sf.core.shuffles[sf.core.newest].state == TD_SHUFFLING;
}

int fw_shuffler_command(fw_app *a, const td_msg *in, uint32_t now_us)
{
    if (strcmp(in->def->name, "start_shuffle") == 0) {
        start_shuffle(a, (uint8_t)in->v[0].u, (uint8_t)in->v[1].u, now_us);
    } else if (strcmp(in->def->name, "request_order") == 0) {
        request_order(a, (uint8_t)in->v[0].u, (uint32_t)in->v[1].u, now_us);
    } else if (strcmp(in->def->name, "inventory") == 0) {
        td_shuffler_inventory(&sf.core, (uint8_t)in->v[0].u, &msg);
        fw_answer(a, &msg, now_us);
    } else {
        return 0;
    }
    return 1;
}

int fw_shuffler_sensor(fw_app *a, const char *word, char **rest, uint32_t now_us)
{
    td_shuffle *sh = &sf.core.shuffles[sf.core.newest];
    const char *card;
    (void)now_us;
    if (strcmp(word, "script") == 0) {
        while ((card = fw_word(rest)) != NULL && sf.n_script < TD_MAX_CARDS)
            if (strlen(card) == 2)
                memcpy(sf.script[sf.n_script++], card, 2);
        fw_report_num(a, "scripted", sf.n_script);
    } else if (strcmp(word, "take") == 0) {
        if (sh->state == TD_IN_SHUFFLER) {
            sh->state = TD_TAKEN;
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
    if (fw_shuffler_busy() && (int32_t)(now_us - sf.done_us) >= 0 && fw_room(a, now_us))
        shuffle_complete(a, now_us);
    if (a->link.state == TD_ESTABLISHED)
        reveal_step(a, now_us);
}
