/* The core at 50 MHz from the PLL, and a microsecond clock from SysTick: an interrupt each
 * millisecond adds 1000 to a 32-bit count (so it wraps, as the device core expects), and
 * the counter's value gives the microseconds since. */
#include "board.h"

#define SYSCTL_RIS 0x400FE050u
#define SYSCTL_RCC 0x400FE060u
#define RCC_BYPASS (1u << 11)
#define RCC_PWRDN (1u << 13)
#define RCC_OEN (1u << 12)
#define RCC_USESYSDIV (1u << 22)
#define RIS_PLLLRIS (1u << 6)

#define SYST_CSR 0xE000E010u
#define SYST_RVR 0xE000E014u
#define SYST_CVR 0xE000E018u

#define CPU_HZ 50000000u
#define CYCLES_PER_US (CPU_HZ / 1000000u)
#define RELOAD (CPU_HZ / 1000u - 1u)
/* The count starts 10 s before it wraps: every boot crosses the wrap early, where a test
 * sees it, not after 71 minutes. */
#define START_US (0u - 10000000u)

static volatile uint32_t base_us = START_US;

static void pll_50mhz(void)
{
    uint32_t rcc = REG(SYSCTL_RCC), wait;
    rcc |= RCC_BYPASS;  /* run from the oscillator while the PLL locks */
    rcc &= ~RCC_USESYSDIV;
    REG(SYSCTL_RCC) = rcc;
    /* 8 MHz crystal (XTAL 0xE), main oscillator, PLL powered and its output on */
    rcc = (rcc & ~((0xFu << 6) | (0x3u << 4) | RCC_PWRDN | RCC_OEN)) | (0xEu << 6);
    /* PLL 400 MHz / 2 / SYSDIV 4 = 50 MHz */
    rcc = (rcc & ~(0xFu << 23)) | (3u << 23) | RCC_USESYSDIV;
    REG(SYSCTL_RCC) = rcc;
    for (wait = 0; wait < 100000u && !(REG(SYSCTL_RIS) & RIS_PLLLRIS); wait++) {
    }
    REG(SYSCTL_RCC) = rcc & ~RCC_BYPASS;
}

void clock_init(void)
{
    pll_50mhz();
    REG(SYST_RVR) = RELOAD;
    REG(SYST_CVR) = 0;
    REG(SYST_CSR) = 0x7u;  /* the core's clock, the interrupt, enabled */
}

void systick_isr(void)
{
    base_us += 1000u;
}

uint32_t clock_us(void)
{
    uint32_t b, v;
    do {  /* a tick between the two reads changes base_us: read both again */
        b = base_us;
        v = REG(SYST_CVR);
    } while (b != base_us);
    return b + (RELOAD - v) / CYCLES_PER_US;
}
