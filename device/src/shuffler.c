/* The card shuffler's core (shuffler.h): what the C emulator and the reference firmware
 * both keep, so the two shufflers cannot differ in it. */
#include <string.h>

#include "shuffler.h"

static const char RANKS[] = "A23456789TJQK";
static const char SUITS[] = "SHDC";

int td_card_index(const char card[2])
{
    const char *r = memchr(RANKS, card[0], 13), *s = memchr(SUITS, card[1], 4);
    return r && s ? (int)(s - SUITS) * 13 + (int)(r - RANKS) : -1;
}

void td_card_at(int k, char card[2])
{
    card[0] = RANKS[k % 13];
    card[1] = SUITS[(k / 13) % 4];
}

static void count_cards(const td_shuffle *sh, uint16_t n, td_value *counts)
{
    int i, k;
    counts->len = 52;
    for (i = 0; i < n; i++)
        if ((k = td_card_index(sh->order[i])) >= 0)
            counts->bytes[k]++;
}

const char *td_shuffler_start(td_shuffler *s, uint8_t decks, uint8_t *code)
{
    td_shuffle *sh;
    /* decks outside 1-10 never get here: td_command_refusal refuses them first */
    if (s->shuffles[s->newest].state == TD_SHUFFLING) {
        *code = 5;
        return "shuffling";
    }
    s->newest ^= 1;  /* the older of the two gives way (its shoe was revealed or dropped) */
    if (s->revealing && s->reveal_slot == s->newest)
        s->revealing = 0;
    sh = &s->shuffles[s->newest];
    sh->id = s->next_id++;
    sh->decks = decks;
    sh->state = TD_SHUFFLING;
    return NULL;
}

void td_shuffle_order(td_shuffle *sh, const char (*script)[2], uint16_t n,
                      td_random_fn random, void *ctx)
{
    int i, j;
    if (n) {
        sh->total = n;
        memcpy(sh->order, script, 2u * n);
    } else {
        sh->total = (uint16_t)(sh->decks * 52);
        for (i = 0; i < sh->total; i++)
            td_card_at(i % 52, sh->order[i]);
        for (i = sh->total - 1; i > 0; i--) {  /* Fisher-Yates */
            char t[2];
            j = (int)(random(ctx) % (uint32_t)(i + 1));
            memcpy(t, sh->order[i], 2);
            memcpy(sh->order[i], sh->order[j], 2);
            memcpy(sh->order[j], t, 2);
        }
    }
    for (i = 0; i < 16; i++)
        sh->nonce[i] = (uint8_t)random(ctx);
}

void td_shuffler_started(const td_shuffler *s, td_msg *m)
{
    const td_shuffle *sh = &s->shuffles[s->newest];
    td_msg_init(m, td_msgdef_named("shuffle_started"));
    m->v[0].u = sh->id;
    m->v[1].u = sh->decks;
}

void td_shuffler_complete(td_shuffler *s, uint8_t version, uint16_t committed, td_msg *m)
{
    td_shuffle *sh = &s->shuffles[s->newest];
    sh->state = TD_IN_SHUFFLER;
    td_msg_init(m, td_msgdef_named("shuffle_complete"));
    m->v[0].u = sh->id;
    m->v[1].u = sh->decks;
    count_cards(sh, sh->total, &m->v[2]);
    m->v[3].u = 0;
    m->v[4].u = 1;
    m->v[5].len = 32;
    td_commitment(version, sh->id, sh->decks, sh->nonce, (const char (*)[2])sh->order,
                  committed, m->v[5].bytes);
}

void td_shuffler_inventory(const td_shuffler *s, uint8_t tag, td_msg *m)
{
    const td_shuffle *sh = &s->shuffles[s->newest];
    td_msg_init(m, td_msgdef_named("inventory_reply"));
    m->v[0].u = tag;
    count_cards(sh, sh->state == TD_IN_SHUFFLER ? sh->total : 0, &m->v[1]);
}

const char *td_shuffler_request(td_shuffler *s, uint32_t id, uint32_t re, int *began)
{
    int slot = s->shuffles[0].state != TD_NO_SHUFFLE && s->shuffles[0].id == id ? 0 :
               s->shuffles[1].state != TD_NO_SHUFFLE && s->shuffles[1].id == id ? 1 : -1;
    const char *why = slot < 0 ? "no such shuffle" :
                      s->shuffles[slot].state == TD_SHUFFLING ? "still shuffling" :
                      s->shuffles[slot].state == TD_IN_SHUFFLER ? "its cards are still in the "
                                                                  "shuffler" : NULL;
    *began = 0;
    if (why || (s->revealing && s->reveal_slot == slot))
        return why;
    s->revealing = *began = 1;
    s->reveal_re = re;
    s->reveal_slot = slot;
    s->reveal_off = 0;
    return NULL;
}

uint16_t td_shuffler_chunk(const td_shuffler *s, uint16_t total, td_msg *m)
{
    const td_shuffle *sh = &s->shuffles[s->reveal_slot];
    uint16_t n = (uint16_t)(total - s->reveal_off < TD_CHUNK ? total - s->reveal_off
                                                             : TD_CHUNK);
    td_msg_init(m, td_msgdef_named("order_chunk"));
    m->v[0].u = sh->id;
    m->v[1].u = s->reveal_off;
    m->v[2].u = total;
    m->v[3].len = 16;
    memcpy(m->v[3].bytes, sh->nonce, 16);
    m->v[4].len = (uint8_t)n;  /* card[]: its length in cards */
    memcpy(m->v[4].bytes, sh->order[s->reveal_off], 2u * n);
    return n;
}

int td_shuffler_chunk_sent(td_shuffler *s, uint16_t n, uint16_t total)
{
    s->reveal_off = (uint16_t)(s->reveal_off + n);
    return s->reveal_off >= total;
}
