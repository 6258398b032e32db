@ Cortex-M4 micro-kernels whose cycle counts follow from the Cortex-M4
@ Technical Reference Manual's instruction timings (zero wait states).
@ tests/mcu/cycles.sh runs them under QEMU, estimates each function's
@ cycles with `mlcc cycles` and compares with the "expect" lines: the count
@ the manual gives, derived in the comment above each. Every function is
@ entered by a BL from main and returns with BX LR to a 16-bit NOP: the
@ return costs 1 + P with P = 2 (an indirect branch to a 16-bit target).
  .syntax unified
  .thumb
  .text

@ expect mac_smlad 452
@ MOVS 1, MOVS 1; 64 x (LDR 2 + LDR 1 (pipelined behind the first: its
@ loaded r1 is not the address) + SMLAD 1 + SUBS 1 + BNE taken 1+P(1) = 2)
@ = 448, the last BNE not taken -1; BX LR 3. (The loop's first instruction
@ is word-aligned: a 32-bit branch target at a halfword would add a cycle
@ to P.)
  .balign 4
  .global mac_smlad
  .type mac_smlad, %function
  .thumb_func
mac_smlad:
  movs r5, #64
  movs r0, #0
1:
  ldr r1, [r2], #4
  ldr r4, [r3], #4
  smlad r0, r1, r4, r0
  subs r5, #1
  bne 1b
  bx lr
  .size mac_smlad, . - mac_smlad

@ expect unaligned_loop 98
@ MOVS 1; 16 x (LDR 2 + SUBS 1 + BNE taken 1+P with P = 2: its target is a
@ 32-bit instruction at a halfword, two fetches) = 96, the last BNE not
@ taken (1 instead of 3) -2; BX LR 3.
  .balign 4
  .global unaligned_loop
  .type unaligned_loop, %function
  .thumb_func
unaligned_loop:
  movs r5, #16
1:
  ldr.w r1, [r2]
  subs r5, #1
  bne 1b
  bx lr
  .size unaligned_loop, . - unaligned_loop

@ expect load_run 12
@ Eight independent LDRs: 2 + 7 x 1 (each pipelined behind the one
@ before) = 9; BX LR 3.
  .global load_run
  .type load_run, %function
  .thumb_func
load_run:
  ldr r1, [r0]
  ldr r2, [r0, #4]
  ldr r3, [r0, #8]
  ldr r4, [r0, #12]
  ldr r5, [r0, #16]
  ldr r6, [r0, #20]
  ldr r7, [r0, #24]
  ldr r1, [r0, #28]
  bx lr
  .size load_run, . - load_run

@ expect load_chain 11
@ Four LDRs each addressed by the one before's result: none pipelines,
@ 4 x 2 = 8; BX LR 3.
  .global load_chain
  .type load_chain, %function
  .thumb_func
load_chain:
  ldr r1, [r0]
  ldr r1, [r1]
  ldr r1, [r1]
  ldr r1, [r1]
  bx lr
  .size load_chain, . - load_chain

@ expect agu_stall 17
@ Three pairs ADDS 1 + LDR from the register the ADDS just wrote (2, and 1
@ more: the address waits for the register bank) = 12; STR with an
@ immediate offset 1; MOVS 1; BX LR 3.
  .global agu_stall
  .type agu_stall, %function
  .thumb_func
agu_stall:
  adds r1, r0, #4
  ldr r2, [r1]
  adds r1, r0, #8
  ldr r2, [r1]
  adds r1, r0, #12
  ldr r2, [r1]
  str r2, [r0, #16]
  movs r3, #0
  bx lr
  .size agu_stall, . - agu_stall

@ expect branch_loop 131
@ MOVS 1; 31 passes of SUBS 1 + BEQ not taken 1 + B taken 1+P(1) = 4 (124);
@ the 32nd: SUBS 1 + BEQ taken 2 = 3; BX LR 3.
  .global branch_loop
  .type branch_loop, %function
  .thumb_func
branch_loop:
  movs r0, #32
1:
  subs r0, #1
  beq 2f
  b 1b
2:
  bx lr
  .size branch_loop, . - branch_loop

@ expect float_mac 293
@ MOVS 1, MOVS 1, VMOV 1; 32 x (VLDR 2 + VLDR 1 (pipelined behind the
@ first) + VFMA 3 + SUBS 1 + BNE taken 2) = 288, the last BNE not taken -1;
@ BX LR 3. (The loop's first instruction is word-aligned.)
  .balign 4
  .global float_mac
  .type float_mac, %function
  .thumb_func
float_mac:
  movs r5, #32
  movs r0, #0
  vmov.f32 s2, #1.0
1:
  vldr s0, [r2]
  vldr s1, [r3]
  vfma.f32 s2, s0, s1
  subs r5, #1
  bne 1b
  bx lr
  .size float_mac, . - float_mac

@ expect multiple 23
@ PUSH {r4-r7} 1+4; LDMIA r0, {r1-r4} 1+4; MULS 1; MLA 1; STMIA r1!,
@ {r2, r3} 1+2; POP {r4-r7} 1+4; BX LR 3: 5 + 5 + 1 + 1 + 3 + 5 + 3.
  .global multiple
  .type multiple, %function
  .thumb_func
multiple:
  push {r4-r7}
  ldmia r0, {r1-r4}
  muls r2, r3, r2
  mla r3, r4, r2, r3
  stmia r1!, {r2, r3}
  pop {r4-r7}
  bx lr
  .size multiple, . - multiple

@ expect it_fold 6
@ CMP (16-bit) 1, IT folded onto it 0, MOVGT 1, ADDS 1; BX LR 3.
  .global it_fold
  .type it_fold, %function
  .thumb_func
it_fold:
  cmp r0, r1
  it gt
  movgt r0, r1
  adds r0, #1
  bx lr
  .size it_fold, . - it_fold

@ expect call_leaf 12
@ PUSH {r4, lr} 1+2; BL 1+P(1) to leaf's 16-bit MOVS; MOV 1; ADDS 1; POP
@ {r4, pc} 1+2+P(2) to main's NOP: 3 + 2 + 1 + 1 + 5. leaf: MOVS 1 + BX LR
@ 1+P(2) back to the MOV = 4.
  .global call_leaf
  .type call_leaf, %function
  .thumb_func
call_leaf:
  push {r4, lr}
  bl leaf
  mov r4, r0
  adds r0, r4, #1
  pop {r4, pc}
  .size call_leaf, . - call_leaf

@ expect leaf 4
  .global leaf
  .type leaf, %function
  .thumb_func
leaf:
  movs r0, #7
  bx lr
  .size leaf, . - leaf

@ main: calls each once (the BL and NOP are main's), then exits through
@ semihosting (SYS_EXIT with ADP_Stopped_ApplicationExit).
  .global main
  .type main, %function
  .thumb_func
main:
  push {r4, lr}
  ldr r2, =data
  ldr r3, =data
  bl mac_smlad
  nop
  ldr r2, =data
  bl unaligned_loop
  nop
  ldr r0, =data
  bl load_run
  nop
  ldr r0, =chain
  bl load_chain
  nop
  ldr r0, =data
  bl agu_stall
  nop
  bl branch_loop
  nop
  ldr r2, =data
  ldr r3, =data
  bl float_mac
  nop
  ldr r0, =data
  ldr r1, =out
  bl multiple
  nop
  movs r0, #1
  movs r1, #2
  bl it_fold
  nop
  bl call_leaf
  nop
  movs r0, #0
  pop {r4, pc}
  .size main, . - main

  .data
  .balign 4
chain:
  .word chain
data:
  .space 512
out:
  .space 64
