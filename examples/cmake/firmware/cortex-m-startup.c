/*
 * Minimal Cortex-M startup for the digits firmware (QEMU's MPS2/MPS3 boards:
 * the CMake example and tests/cross/baremetal.sh).
 *
 * The vector table holds the initial stack pointer and the reset handler;
 * the reset handler turns on the FPU (CP10/CP11 full access, needed before
 * any hard-float instruction) and enters newlib's _start (rdimon crt0), which
 * clears .bss, sets up semihosting I/O and calls main. QEMU loads .data
 * directly at its RAM address, so no copy from flash is needed here.
 */
#include <stdint.h>

extern void _start(void);
extern uint32_t __stack_top;

void Reset_Handler(void);
void Default_Handler(void);

void Default_Handler(void) {
  for (;;) {
  }
}

void Reset_Handler(void) {
#if defined(__ARM_FP)
  volatile uint32_t *cpacr = (volatile uint32_t *)0xE000ED88u;
  *cpacr |= (0xFu << 20);
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  _start();
  for (;;) {
  }
}

__attribute__((section(".vectors"), used)) static const void *const vectors[16] = {
    &__stack_top,     Reset_Handler,   Default_Handler, Default_Handler,
    Default_Handler,  Default_Handler, Default_Handler, 0,
    0,                0,               0,               Default_Handler,
    Default_Handler,  0,               Default_Handler, Default_Handler,
};
