/* The shoe: a gate the host locks, and what the reader and the shoe's sensors see. */
#include <string.h>

#include "firmware.h"

int fw_shoe_command(fw_app *a, const td_msg *in, uint32_t now_us)
{
    td_msg m;
    if (strcmp(in->def->name, "lock_gate") == 0) {
        a->gate_locked = (int)in->v[1].u;
        fw_result(a, (uint8_t)in->v[0].u, 0, "", now_us);
        td_msg_init(&m, td_msgdef_named("gate"));
        m.v[0].u = in->v[1].u;
        fw_send(a, &m, now_us);
        fw_report_num(a, "gate", (uint32_t)a->gate_locked);
        return 1;
    }
    if (strcmp(in->def->name, "set_clock") == 0) {
        fw_result(a, (uint8_t)in->v[0].u, 0, "", now_us);
        return 1;
    }
    return 0;
}

static void counted(fw_app *a, const char *name, uint32_t now_us)
{
    td_msg m;
    td_msg_init(&m, td_msgdef_named(name));
    m.v[0].u = a->kept->drawn;
    fw_send(a, &m, now_us);
}

/* A card at the reader. A shut gate stops it, unless it was pulled past (forced): the
 * firmware reports what the reader saw either way, as a real shoe's would. */
static void card(fw_app *a, char **rest, uint32_t now_us)
{
    td_msg m;
    const char *read = fw_word(rest);
    uint32_t confidence = fw_number(fw_word(rest), 10);
    uint32_t back = fw_number(fw_word(rest), 16);
    uint32_t twice = fw_number(fw_word(rest), 10), face_up = fw_number(fw_word(rest), 10);
    uint32_t forced = fw_number(fw_word(rest), 10);
    if (!read || strlen(read) != 2) {
        a->board->report("bad card");
        return;
    }
    if (a->gate_locked && !forced) {
        a->board->report("locked");
        return;
    }
    td_msg_init(&m, td_msgdef_named("card_drawn"));
    m.v[0].u = ++a->kept->drawn;
    memcpy(m.v[1].bytes, read, 2);
    m.v[1].len = 2;
    m.v[2].u = confidence;
    m.v[3].u = back;
    m.v[4].u = twice != 0;
    m.v[5].u = face_up != 0;
    fw_send(a, &m, now_us);
    fw_report_num(a, "drew", a->kept->drawn);
}

int fw_shoe_sensor(fw_app *a, const char *word, char **rest, uint32_t now_us)
{
    td_msg m;
    if (strcmp(word, "loaded") == 0) {
        td_msg_init(&m, td_msgdef_named("shoe_loaded"));
        m.v[0].u = fw_number(fw_word(rest), 10);
        m.v[1].u = fw_number(fw_word(rest), 16);
        a->kept->drawn = 0;
        fw_send(a, &m, now_us);
    } else if (strcmp(word, "card") == 0) {
        card(a, rest, now_us);
    } else if (strcmp(word, "cut") == 0) {
        counted(a, "cut_card", now_us);
    } else if (strcmp(word, "empty") == 0) {
        counted(a, "shoe_empty", now_us);
    } else if (strcmp(word, "button") == 0) {
        td_msg_init(&m, td_msgdef_named("dealer_button"));
        m.v[0].u = 1;
        fw_send(a, &m, now_us);
    } else {
        return 0;
    }
    return 1;
}
