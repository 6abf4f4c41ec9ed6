/*
 * The reference firmware's application: a card-reading shoe, a card shuffler or a dice
 * tumbler on one
 * td_link, driven by its sensors. Portable C99, no heap, no I/O of its own: the board
 * (device/board/<part>/) passes bytes in, the time in microseconds (32-bit, wrapping),
 * and lines from its sensors; bytes and reports go out through the board's callbacks.
 *
 * Sensor lines (on the QEMU board they arrive on a second UART, the test port):
 *   shoe:    loaded N DECKSET   a shoe of N cards is in (DECKSET in hex)
 *            card CARD CONF BACK DOUBLE FACEUP FORCED   a card passed the reader, read as
 *                               CARD ("??": unreadable); FORCED 1: pulled past a shut gate
 *            cut                the cut card passed       empty   the shoe is empty
 *   tumbler: throw D1 D2 D3 T1 T2 T3 CONF   what the camera will read after the next
 *                               activation (tilts in tenths of a degree)
 *   shuffler: script CARD...   the next shuffle's order    take   its cards go to the shoe
 *   all:     button             the dealer's button       noise PPM   bit errors on the
 *                               line out, per million bits (0 stops)    stack   report
 * Reports (one line each): boot ID RESETS, session V PEER, gate L, armed A, drew N,
 *   locked (a card at a shut gate), held NAME, dropped NAME, settled DDD, rx NAME.
 */
#ifndef TABLED_FIRMWARE_H
#define TABLED_FIRMWARE_H

#include <stddef.h>
#include <stdint.h>

#include "../src/tabled_device.h"

#define FW_HELD 8  /* events held while the link refuses them (it holds TD_QUEUE) */

enum fw_kind { FW_SHOE = 1, FW_SHUFFLER = 2, FW_TUMBLER = 3 };  /* the protocol's device kinds */

/* What survives a reset: the shoe's count of cards drawn. The cards are still in the
 * shoe, and draw_no never repeats within a shoe (spec: CardDrawn), so a firmware that
 * restarts mid-shoe counts on: the board keeps this where a reset does not clear it. */
typedef struct {
    uint32_t magic;  /* FW_KEPT_MAGIC once set: at power-up that memory holds noise */
    uint32_t drawn;
} fw_kept;

#define FW_KEPT_MAGIC 0x5E0E0C01u

typedef struct {
    /* what the board provides */
    void (*line_write)(const uint8_t *bytes, size_t len);  /* the host's serial line */
    void (*report)(const char *text);                      /* a line for the test port */
    uint32_t (*random32)(void);                            /* a new boot id after a failure */
} fw_board;

typedef struct {
    int kind;  /* enum fw_kind */
    const char *model, *firmware, *serial;
    const fw_board *board;
    fw_kept *kept;
    td_link link;
    uint32_t booted_us, next_heartbeat_us, noise_ppm, rng;
    td_out held[FW_HELD];
    int n_held;
    td_carried carried;  /* the commands carried out: one sent again is not done twice */
    /* shoe */
    int gate_locked;
    /* tumbler */
    int armed, busy, tumbles_done, scripted;
    uint32_t next_tumble_us, settle_us;
    uint8_t dice[3], script[3], confidence, script_confidence;
    uint16_t tilt[3], script_tilt[3];
} fw_app;

/* Power on (or reset): a new link session under boot_id; kept as the board kept it. */
void fw_boot(fw_app *a, int kind, const char *serial, uint32_t boot_id, const fw_board *board,
             fw_kept *kept, uint32_t now_us);
void fw_line_bytes(fw_app *a, const uint8_t *bytes, size_t len, uint32_t now_us);
/* One sensor line, without its newline; modified in place. */
void fw_sensor(fw_app *a, char *line, uint32_t now_us);
/* Timers: call at least every few milliseconds. */
void fw_poll(fw_app *a, uint32_t now_us);

/* For the kind-specific halves (shoe.c, tumbler.c). */
void fw_send(fw_app *a, td_msg *m, uint32_t now_us);
/* The result of the command being delivered (it answers that command: version 3's RE). */
void fw_result(fw_app *a, uint8_t tag, uint8_t code, const char *detail, uint32_t now_us);
int fw_room(fw_app *a, uint32_t now_us);
/* m, the answer to the command being delivered. */
void fw_answer(fw_app *a, td_msg *m, uint32_t now_us);
void fw_report_num(fw_app *a, const char *word, uint32_t n);
void fw_set_str(td_value *v, const char *s);
/* The next word of *cursor (spaces skipped), or NULL; NUL-terminates it. */
char *fw_word(char **cursor);
uint32_t fw_number(const char *word, unsigned base);

int fw_shoe_command(fw_app *a, const td_msg *in, uint32_t now_us);
int fw_shoe_sensor(fw_app *a, const char *word, char **rest, uint32_t now_us);
int fw_tumbler_command(fw_app *a, const td_msg *in, uint32_t now_us);
int fw_tumbler_sensor(fw_app *a, const char *word, char **rest, uint32_t now_us);
void fw_tumbler_poll(fw_app *a, uint32_t now_us);
void fw_shuffler_boot(fw_app *a);
int fw_shuffler_busy(void);
int fw_shuffler_command(fw_app *a, const td_msg *in, uint32_t now_us);
int fw_shuffler_sensor(fw_app *a, const char *word, char **rest, uint32_t now_us);
void fw_shuffler_poll(fw_app *a, uint32_t now_us);

#endif
