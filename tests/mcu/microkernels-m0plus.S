@ Cortex-M0+ micro-kernels whose cycle counts follow from the Cortex-M0+
@ Technical Reference Manual's instruction timings (zero wait states):
@ data processing and MULS 1 (the single-cycle multiplier), loads and
@ stores 2, LDM/STM/PUSH 1+N, POP with PC 3+N, B and a taken Bcc 2, a
@ Bcc not taken 1, BL 3, BX 2. tests/mcu/cycles.sh compares each
@ function's estimate with its "expect" line; every function returns with
@ BX LR (2) to main.
  .syntax unified
  .thumb
  .text

@ expect mac_loop 290
@ MOVS 1; 32 x (LDR 2 + LDR 2 + MULS 1 + ADDS 1 + SUBS 1 + BNE taken 2 = 9)
@ = 288, the last BNE not taken -1; BX LR 2.
  .global mac_loop
  .type mac_loop, %function
  .thumb_func
mac_loop:
  movs r5, #32
1:
  ldr r1, [r2]
  ldr r4, [r3]
  muls r1, r4
  adds r0, r0, r1
  subs r5, #1
  bne 1b
  bx lr
  .size mac_loop, . - mac_loop

@ expect stores 12
@ Four STRs 4 x 2 = 8; two ADDS 2; BX LR 2.
  .global stores
  .type stores, %function
  .thumb_func
stores:
  str r1, [r0]
  str r1, [r0, #4]
  adds r1, #1
  str r1, [r0, #8]
  adds r1, #1
  str r1, [r0, #12]
  bx lr
  .size stores, . - stores

@ expect call_leaf 16
@ PUSH {r4, lr} 1+2; BL 3; LDR 2; ADDS 1; STR 2; POP {r4, pc} 3+2.
@ leaf: MOVS 1 + BX LR 2 = 3.
  .global call_leaf
  .type call_leaf, %function
  .thumb_func
call_leaf:
  push {r4, lr}
  bl leaf
  ldr r4, [r2]
  adds r4, #1
  str r4, [r2]
  pop {r4, pc}
  .size call_leaf, . - call_leaf

@ expect leaf 3
  .global leaf
  .type leaf, %function
  .thumb_func
leaf:
  movs r0, #7
  bx lr
  .size leaf, . - leaf

@ expect multiple 13
@ MOV 1; LDMIA r0!, {r1-r3} 1+3; STMIA r4!, {r1-r3} 1+3; MOVS 1; NOP 1;
@ BX LR 2.
  .global multiple
  .type multiple, %function
  .thumb_func
multiple:
  mov r4, r2
  ldmia r0!, {r1-r3}
  stmia r4!, {r1-r3}
  movs r0, #0
  nop
  bx lr
  .size multiple, . - multiple

  .global main
  .type main, %function
  .thumb_func
main:
  push {r4, lr}
  ldr r2, =data
  ldr r3, =data
  bl mac_loop
  ldr r0, =data
  bl stores
  ldr r2, =data
  bl call_leaf
  ldr r0, =data
  ldr r2, =out
  bl multiple
  movs r0, #0
  pop {r4, pc}
  .size main, . - main

  .data
  .balign 4
data:
  .space 256
out:
  .space 64
