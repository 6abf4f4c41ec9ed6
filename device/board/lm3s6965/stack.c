/* The stack's high-water mark, by painting: every unused word holds a pattern at reset,
 * and the deepest word changed since is as deep as the stack has been. */
#include "board.h"

#define PAINT 0xA5C3E10Fu

extern uint32_t __stack_bottom, __stack_top;

void stack_paint(void)
{
    uint32_t *p = &__stack_bottom, *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    while (p < sp - 16)  /* below this function's own frame, with a margin */
        *p++ = PAINT;
}

uint32_t stack_used(void)
{
    const uint32_t *p = &__stack_bottom;
    while (p < &__stack_top && *p == PAINT)
        p++;
    return (uint32_t)((const char *)&__stack_top - (const char *)p);
}

uint32_t stack_size(void)
{
    return (uint32_t)((const char *)&__stack_top - (const char *)&__stack_bottom);
}
