/* PL011 UARTs 0 and 1: 115200 8N1, received bytes taken by the RX interrupt into a ring
 * buffer each (the FIFO is 16 bytes: a frame of 263 would overrun it between polls), sent
 * by polling the TX FIFO (a frame is written whole; at 115200 baud that is 23 ms). */
#include "board.h"

#define SYSCTL_RCGC1 0x400FE104u
#define SYSCTL_RCGC2 0x400FE108u
#define GPIO_AFSEL 0x420u
#define GPIO_DEN 0x51Cu
#define NVIC_ISER0 0xE000E100u

#define DR 0x000u
#define FR 0x018u
#define IBRD 0x024u
#define FBRD 0x028u
#define LCRH 0x02Cu
#define CR 0x030u
#define IMSC 0x038u
#define ICR 0x044u
#define FR_RXFE (1u << 4)
#define FR_TXFF (1u << 5)
#define INT_RX (1u << 4)
#define INT_RT (1u << 6)

#define RING 1024u  /* a power of two: four whole frames */

typedef struct {
    volatile uint8_t buf[RING];
    volatile uint32_t head;  /* written by the interrupt only */
    uint32_t tail;           /* written by the main loop only */
    volatile uint32_t overruns;
} uart;

static const uint32_t bases[2] = {0x4000C000u, 0x4000D000u};
static uart ports[2];  /* in .bss: 2 KB of zeros need no copy in flash */

static void setup(uint32_t base)
{
    REG(base + CR) = 0;
    /* 50 MHz / (16 * 115200) = 27.13: integer 27, fraction 0.13 * 64 = 8 */
    REG(base + IBRD) = 27;
    REG(base + FBRD) = 8;
    REG(base + LCRH) = (3u << 5) | (1u << 4);  /* 8 bits, FIFOs on */
    REG(base + IMSC) = INT_RX | INT_RT;
    REG(base + CR) = (1u << 0) | (1u << 8) | (1u << 9);  /* enabled, TX, RX */
}

void uart_init(void)
{
    REG(SYSCTL_RCGC1) |= 0x3u;              /* UART0, UART1 clocks */
    REG(SYSCTL_RCGC2) |= (1u << 0) | (1u << 3);  /* GPIO A, D */
    REG(0x40004000u + GPIO_AFSEL) |= 0x3u;  /* PA0 U0Rx, PA1 U0Tx */
    REG(0x40004000u + GPIO_DEN) |= 0x3u;
    REG(0x40007000u + GPIO_AFSEL) |= 0xCu;  /* PD2 U1Rx, PD3 U1Tx */
    REG(0x40007000u + GPIO_DEN) |= 0xCu;
    setup(bases[0]);
    setup(bases[1]);
    REG(NVIC_ISER0) = (1u << 5) | (1u << 6);
}

static void drain(int port)
{
    uart *u = &ports[port];
    uint32_t base = bases[port];
    while (!(REG(base + FR) & FR_RXFE)) {
        uint8_t b = (uint8_t)REG(base + DR);
        uint32_t h = u->head;
        if (h - u->tail == RING) {
            u->overruns++;  /* the main loop is late: the link's CRC and NAK recover it */
            continue;
        }
        u->buf[h % RING] = b;
        u->head = h + 1u;
    }
    REG(base + ICR) = INT_RX | INT_RT;
}

void uart0_isr(void) { drain(0); }
void uart1_isr(void) { drain(1); }

void uart_write(int port, const uint8_t *bytes, size_t len)
{
    uint32_t base = bases[port];
    size_t i;
    for (i = 0; i < len; i++) {
        while (REG(base + FR) & FR_TXFF) {
        }
        REG(base + DR) = bytes[i];
    }
}

size_t uart_read(int port, uint8_t *out, size_t cap)
{
    uart *u = &ports[port];
    size_t n = 0;
    while (n < cap && u->tail != u->head) {
        out[n++] = u->buf[u->tail % RING];
        u->tail++;
    }
    return n;
}

int uart_pending(void)
{
    return ports[0].tail != ports[0].head || ports[1].tail != ports[1].head;
}
