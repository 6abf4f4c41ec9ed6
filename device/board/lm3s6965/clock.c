/* The core at 50 MHz from the PLL, and a microsecond clock from SysTick: an interrupt each
 * period adds the period to a 32-bit count (so it wraps, as the device core expects), and
 * the counter's value gives the microseconds since. The period is long (300 ms, near
 * SysTick's 24-bit limit) because an interrupt the core has not taken when the next one
 * comes is lost, and with it a period: under QEMU on a loaded host, where the emulator is
 * descheduled for milliseconds at a time, a 1 ms period lost a fifth of the ticks and the
 * firmware's clock ran 21% slow against the host's (issue 30). The main loop's
 * millisecond wake-up is Timer 0's, which keeps no time, so a lost one costs nothing. */
#include "board.h"

#define SYSCTL_RIS 0x400FE050u
#define SYSCTL_RCC 0x400FE060u
#define RCC_BYPASS (1u << 11)
#define RCC_PWRDN (1u << 13)
#define RCC_OEN (1u << 12)
#define RCC_USESYSDIV (1u << 22)
#define RIS_PLLLRIS (1u << 6)

#define SYSCTL_RCGC1_TIMER0 (1u << 16)
#define SYSCTL_RCGC1 0x400FE104u
#define TIMER0 0x40030000u
#define GPTM_CFG 0x000u
#define GPTM_TAMR 0x004u
#define GPTM_CTL 0x00Cu
#define GPTM_IMR 0x018u
#define GPTM_ICR 0x024u
#define GPTM_TAILR 0x028u
#define GPTM_TATO 1u
#define NVIC_ISER0 0xE000E100u
#define IRQ_TIMER0A 19u

#define SYST_CSR 0xE000E010u
#define SYST_RVR 0xE000E014u
#define SYST_CVR 0xE000E018u

#define CPU_HZ 50000000u
#define CYCLES_PER_US (CPU_HZ / 1000000u)
#define PERIOD_US 300000u
#define RELOAD (PERIOD_US * CYCLES_PER_US - 1u)  /* 14,999,999 < 2^24 */
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

/* Timer 0A, 32-bit periodic, each millisecond: it only ends the main loop's WFI. */
static void wake_every_ms(void)
{
    REG(SYSCTL_RCGC1) |= SYSCTL_RCGC1_TIMER0;
    REG(TIMER0 + GPTM_CTL) = 0;
    REG(TIMER0 + GPTM_CFG) = 0;     /* one 32-bit timer */
    REG(TIMER0 + GPTM_TAMR) = 2u;   /* periodic */
    REG(TIMER0 + GPTM_TAILR) = CPU_HZ / 1000u - 1u;
    REG(TIMER0 + GPTM_IMR) = GPTM_TATO;
    REG(NVIC_ISER0) = 1u << IRQ_TIMER0A;
    REG(TIMER0 + GPTM_CTL) = 1u;    /* timer A on */
}

void clock_init(void)
{
    pll_50mhz();
    REG(SYST_RVR) = RELOAD;
    REG(SYST_CVR) = 0;
    REG(SYST_CSR) = 0x7u;  /* the core's clock, the interrupt, enabled */
    wake_every_ms();
}

void systick_isr(void)
{
    base_us += PERIOD_US;
}

void timer0a_isr(void)
{
    REG(TIMER0 + GPTM_ICR) = GPTM_TATO;
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
