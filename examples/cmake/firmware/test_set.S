/* Links the digits test set (TEST_SET_FILE, a quoted path) into flash. */
  .section .rodata
  .global digits_test_set
  .balign 4
digits_test_set:
  .incbin TEST_SET_FILE
