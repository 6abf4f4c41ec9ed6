/* Reset and the vector table: copy .data, clear .bss, paint the stack, run main. */
#include <stdint.h>
#include <string.h>

#include "board.h"

extern uint32_t __data_start, __data_end, __data_load, __bss_start, __bss_end;
extern uint32_t __stack_bottom, __stack_top;

int main(void);
void reset_handler(void);
void uart0_isr(void);
void uart1_isr(void);
void systick_isr(void);
void timer0a_isr(void);

static void hang(void)
{
    for (;;) {
    }
}

typedef void (*handler)(void);

/* The Cortex-M vector table: the initial stack pointer, then the handlers. IRQs 5 and 6
 * are UART0 and UART1 on this part, 19 Timer 0A. */
struct vectors {
    uint32_t *stack;
    handler exceptions[15];
    handler irqs[20];
};

__attribute__((section(".vectors"), used)) const struct vectors vector_table = {
    &__stack_top,
    {reset_handler, hang, hang, hang, hang, hang, 0, 0, 0, 0, hang, hang, 0, hang,
     systick_isr},
    {hang, hang, hang, hang, hang, uart0_isr, uart1_isr, hang, hang, hang, hang, hang, hang,
     hang, hang, hang, hang, hang, hang, timer0a_isr},
};

void reset_handler(void)
{
    memcpy(&__data_start, &__data_load,
           (size_t)((char *)&__data_end - (char *)&__data_start));
    memset(&__bss_start, 0, (size_t)((char *)&__bss_end - (char *)&__bss_start));
    stack_paint();
    main();
    hang();
}
