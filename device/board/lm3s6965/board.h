/* The LM3S6965 board support the firmware needs: two UARTs, a microsecond clock, a boot
 * id, and the stack's high-water mark. Everything else is the portable core's. */
#ifndef BOARD_H
#define BOARD_H

#include <stddef.h>
#include <stdint.h>

/* UART0: the host's serial line (QEMU: -serial pty). UART1: the test port. */
void uart_init(void);
void uart_write(int port, const uint8_t *bytes, size_t len);
/* Bytes received since the last call (the RX interrupt filled a ring buffer). */
size_t uart_read(int port, uint8_t *out, size_t cap);
int uart_pending(void);  /* any byte waiting on either port */

void clock_init(void);
uint32_t clock_us(void);  /* 32-bit, wrapping, as the device core expects */

uint32_t boot_id(void);
uint32_t boot_resets(void);

void stack_paint(void);
uint32_t stack_used(void);  /* bytes, from the painted stack */
uint32_t stack_size(void);

#define REG(addr) (*(volatile uint32_t *)(addr))

#endif
