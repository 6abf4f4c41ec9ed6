/* The firmware's main loop on the LM3S6965: bytes from the host's line to the link, lines
 * from the test port to the sensors, the timers, then sleep until the next interrupt
 * (a byte, or the millisecond wake-up). FW_KIND (1 shoe, 2 shuffler, 3 tumbler) is given by the build. */
#include <string.h>

#include "../../firmware/firmware.h"
#include "board.h"

#ifndef FW_KIND
#error "build with -DFW_KIND=1 (shoe), 2 (shuffler) or 3 (tumbler)"
#endif

#define HOST 0
#define TEST 1
#define LINE 600  /* a sensor line: "card XX 99 c0ffee 0 0 0" is 24 */

static uint32_t rng;

static void host_write(const uint8_t *bytes, size_t len)
{
    uart_write(HOST, bytes, len);
}

static void report(const char *text)
{
    uart_write(TEST, (const uint8_t *)text, strlen(text));
    uart_write(TEST, (const uint8_t *)"\n", 1);
}

static uint32_t random32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng ^ clock_us();
}

static const fw_board board = {host_write, report, random32};
static fw_app app;
/* SRAM the startup code does not clear: it survives a reset, not a power cut. */
__attribute__((section(".noinit"))) static fw_kept kept;
static char line[LINE];
static size_t used;

static void test_port(uint32_t now)
{
    uint8_t buf[64];
    size_t n, i;
    while ((n = uart_read(TEST, buf, sizeof buf)) > 0) {
        for (i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (used < LINE - 1)
                    line[used++] = (char)buf[i];
                continue;
            }
            line[used] = 0;
            used = 0;
            if (strcmp(line, "stack") == 0) {  /* the board's, not the application's */
                fw_report_num(&app, "stack", stack_used());
                fw_report_num(&app, "stack_size", stack_size());
            } else if (strcmp(line, "clock") == 0) {
                fw_report_num(&app, "clock_ms", clock_us() / 1000u);
            } else {
                fw_sensor(&app, line, now);
            }
        }
    }
}

int main(void)
{
    uint8_t buf[128];
    size_t n;
    clock_init();
    uart_init();
    rng = boot_id() | 1u;
    fw_boot(&app, FW_KIND, FW_KIND == FW_SHOE ? "REF-SH-1" : FW_KIND == FW_SHUFFLER ? "REF-SF-1"
                                                                       : "REF-TM-1", boot_id(), &board,
            &kept, clock_us());
    fw_report_num(&app, "resets", boot_resets());
    for (;;) {
        uint32_t now = clock_us();
        while ((n = uart_read(HOST, buf, sizeof buf)) > 0)
            fw_line_bytes(&app, buf, n, now);
        test_port(now);
        fw_poll(&app, clock_us());
        /* Sleep unless a byte came in meanwhile: with interrupts masked, a pending one
         * still ends WFI, and runs once they are unmasked. */
        __asm__ volatile("cpsid i" ::: "memory");
        if (!uart_pending())
            __asm__ volatile("wfi");
        __asm__ volatile("cpsie i" ::: "memory");
    }
}
