/* The dice tumbler: armed by the host, activated by its button or by tumble_now, three
 * tumbles, then the dice the camera reads. Its motor's timing is the firmware's own. */
#include <string.h>

#include "firmware.h"

#define TUMBLE_US 400000u
#define SETTLE_US 800000u
#define FLAT_DECIDEG 50u  /* flat: tilted at most 5.0 degrees */

static uint32_t next_random(fw_app *a)
{
    a->rng ^= a->rng << 13;
    a->rng ^= a->rng >> 17;
    a->rng ^= a->rng << 5;
    return a->rng;
}

static void activate(fw_app *a, uint8_t source, uint32_t now_us)
{
    td_msg m;
    int i;
    td_msg_init(&m, td_msgdef_named("activated"));
    m.v[0].u = source;
    m.v[1].u = (uint64_t)a->armed;
    fw_send(a, &m, now_us);
    a->armed = 0;  /* one activation per arming */
    a->busy = 1;
    a->tumbles_done = 0;
    for (i = 0; i < 3; i++) {
        a->dice[i] = a->scripted ? a->script[i] : (uint8_t)(1u + next_random(a) % 6u);
        a->tilt[i] = a->scripted ? a->script_tilt[i] : 0u;
    }
    a->confidence = a->scripted ? a->script_confidence : 97u;
    a->scripted = 0;
    a->next_tumble_us = now_us + TUMBLE_US;
    a->settle_us = now_us + 3u * TUMBLE_US + SETTLE_US;
    fw_report_num(a, "armed", 0);
}

int fw_tumbler_command(fw_app *a, const td_msg *in, uint32_t now_us)
{
    uint8_t tag = (uint8_t)in->v[0].u;
    if (strcmp(in->def->name, "arm") == 0) {
        a->armed = (int)in->v[1].u;
        fw_result(a, tag, 0, "", now_us);
        fw_report_num(a, "armed", (uint32_t)a->armed);
        return 1;
    }
    if (strcmp(in->def->name, "tumble_now") == 0) {
        if (!a->armed) {
            fw_result(a, tag, 3, "not armed", now_us);
        } else if (a->busy) {
            fw_result(a, tag, 5, "tumbling", now_us);
        } else {
            fw_result(a, tag, 0, "", now_us);
            activate(a, 2, now_us);
        }
        return 1;
    }
    return 0;
}

int fw_tumbler_sensor(fw_app *a, const char *word, char **rest, uint32_t now_us)
{
    int i;
    if (strcmp(word, "throw") == 0) {
        for (i = 0; i < 3; i++)
            a->script[i] = (uint8_t)fw_number(fw_word(rest), 10);
        for (i = 0; i < 3; i++)
            a->script_tilt[i] = (uint16_t)fw_number(fw_word(rest), 10);
        a->script_confidence = (uint8_t)fw_number(fw_word(rest), 10);
        a->scripted = 1;
    } else if (strcmp(word, "button") == 0) {
        if (!a->busy)  /* it works disarmed too, as on real hardware: the host decides */
            activate(a, 1, now_us);
    } else {
        return 0;
    }
    return 1;
}

void fw_tumbler_poll(fw_app *a, uint32_t now_us)
{
    td_msg m;
    int i;
    if (a->busy && a->tumbles_done < 3 && (int32_t)(now_us - a->next_tumble_us) >= 0 &&
        fw_room(a, now_us)) {
        td_msg_init(&m, td_msgdef_named("tumble"));
        m.v[0].u = (uint64_t)++a->tumbles_done;
        fw_send(a, &m, now_us);
        a->next_tumble_us = now_us + TUMBLE_US;
    }
    if (a->busy && a->tumbles_done == 3 && (int32_t)(now_us - a->settle_us) >= 0 &&
        fw_room(a, now_us)) {
        td_msg_init(&m, td_msgdef_named("settled"));
        for (i = 0; i < 3; i++) {
            m.v[0].bytes[i] = a->dice[i];
            m.v[1].u16s[i] = a->tilt[i];
            m.v[2].bytes[i] = a->tilt[i] <= FLAT_DECIDEG;
        }
        m.v[0].len = m.v[1].len = m.v[2].len = 3;
        m.v[3].u = a->confidence;
        a->busy = 0;
        fw_send(a, &m, now_us);
        fw_report_num(a, "settled", (uint32_t)(a->dice[0] * 100u + a->dice[1] * 10u + a->dice[2]));
    }
}
