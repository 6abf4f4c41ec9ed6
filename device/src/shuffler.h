/*
 * The card shuffler's core, kept by the C emulator and the reference firmware alike: its
 * record of the newest shuffle and the one before it, the shuffle itself, the commitment
 * that certifies it, the refusals of start_shuffle and request_order, and a reveal's
 * chunks (spec: shuffler.md). No I/O and no clock: the caller sends what is built here,
 * answers with the refusals' codes, and says when a shuffle is done.
 */
#ifndef TABLED_SHUFFLER_H
#define TABLED_SHUFFLER_H

#include "tabled_device.h"

#define TD_MAX_CARDS 520  /* ten decks */
#define TD_CHUNK 26       /* cards per order_chunk: small frames survive a noisy line */

enum { TD_NO_SHUFFLE, TD_SHUFFLING, TD_IN_SHUFFLER, TD_TAKEN };  /* a shuffle's cards */

typedef struct {
    uint32_t id;
    uint8_t decks;
    uint16_t total;
    int state;
    uint8_t nonce[16];
    char order[TD_MAX_CARDS][2];  /* as committed */
} td_shuffle;

/* The newest shuffle and the one before it (a shoe being dealt from the older while the
 * newer is ready); a reveal in progress, chunk by chunk as the link has room. */
typedef struct {
    td_shuffle shuffles[2];
    int newest;
    uint32_t next_id;
    int revealing, reveal_slot;
    uint16_t reveal_off;
    uint32_t reveal_re;  /* the request_order's command number: the chunks answer it */
} td_shuffler;

typedef uint32_t (*td_random_fn)(void *ctx);

/* A card's place in an inventory (suit by suit, ranks A to K), -1 if it is no card. */
int td_card_index(const char card[2]);
/* The card at an inventory's place k (0 to 51). */
void td_card_at(int k, char card[2]);

/* A start_shuffle of `decks` (1-10: td_command_refusal checked it): refused while
 * shuffling (code 5), the reason returned and its code in *code; otherwise NULL, and the older
 * shuffle gives way to a new one (its reveal, if any, stopped), given the next id. Its
 * order is then made by td_shuffle_order. */
const char *td_shuffler_start(td_shuffler *s, uint8_t decks, uint8_t *code);
/* The new shuffle's order: the `n` cards of `script` as given (cards missing or extra,
 * for a test), or with n 0 its decks shuffled (Fisher-Yates); then its nonce. */
void td_shuffle_order(td_shuffle *sh, const char (*script)[2], uint16_t n,
                      td_random_fn random, void *ctx);
/* Fill shuffle_started for the newest shuffle. */
void td_shuffler_started(const td_shuffler *s, td_msg *m);
/* The newest shuffle is done: its cards are in the shuffler; fill shuffle_complete with
 * the commitment of the session's `version` to its first `committed` cards. */
void td_shuffler_complete(td_shuffler *s, uint8_t version, uint16_t committed, td_msg *m);
/* Fill an inventory_reply to the command tagged `tag`: the cards in the shuffler. */
void td_shuffler_inventory(const td_shuffler *s, uint8_t tag, td_msg *m);
/* A request_order for shuffle `id`, command number `re`: the reason it is refused (code
 * 3; never the order of a shoe still in use), or NULL; *began says whether a reveal
 * began (not when that shuffle's reveal is under way: it answers). */
const char *td_shuffler_request(td_shuffler *s, uint32_t id, uint32_t re, int *began);
/* Fill the reveal's next order_chunk, of an order `total` cards long (the shuffle's, or
 * what a test's shuffler claims); returns its cards. */
uint16_t td_shuffler_chunk(const td_shuffler *s, uint16_t total, td_msg *m);
/* The `n` cards of a chunk were sent: returns 1 once the reveal's `total` have been. */
int td_shuffler_chunk_sent(td_shuffler *s, uint16_t n, uint16_t total);

#endif
