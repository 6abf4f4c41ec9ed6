/* A boot id that differs from boot to boot. The LM3S6965 has no random number generator
 * and QEMU is deterministic: every cold boot would run the same instructions to the same
 * id, which the host would take for the same session resumed. So the id mixes two
 * things: a seed the rig writes into SRAM before the core starts (QEMU's generic loader:
 * a new one each time it starts the emulator), and a count of resets kept in SRAM that
 * the startup code does not clear (a reset keeps SRAM powered; the count tells reboots
 * of one power-up apart). On a real part, take the seed from its TRNG, or an analogue
 * pin's noise, or a counter in flash. */
#include "board.h"

#define MAGIC 0x7AB1ED00u

struct boot_record {
    uint32_t seed;    /* written by the rig (0: none) */
    uint32_t magic;   /* MAGIC once counted: what SRAM holds at power-up is noise */
    uint32_t resets;
};

__attribute__((section(".noinit.boot"), used)) struct boot_record boot_record;

static uint32_t mix(uint32_t x)  /* murmur3's finaliser: every bit of x moves every bit */
{
    x ^= x >> 16;
    x *= 0x85EBCA6Bu;
    x ^= x >> 13;
    x *= 0xC2B2AE35u;
    x ^= x >> 16;
    return x;
}

static uint32_t id;

uint32_t boot_id(void)
{
    if (id == 0) {
        if (boot_record.magic != MAGIC) {
            boot_record.magic = MAGIC;
            boot_record.resets = 0;
        }
        boot_record.resets++;
        id = mix(boot_record.seed ^ mix(boot_record.resets));
    }
    return id;
}

uint32_t boot_resets(void)
{
    return boot_record.resets;
}
