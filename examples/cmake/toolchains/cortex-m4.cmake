# A CMake toolchain file for Arm Cortex-M4F microcontrollers (hard float)
# with the GNU Arm Embedded toolchain (Debian: gcc-arm-none-eabi,
# libnewlib-arm-none-eabi):
#
#   cmake -S examples/cmake -B build-m4 \
#         -DCMAKE_TOOLCHAIN_FILE=toolchains/cortex-m4.cmake
#
# (CMake looks a relative path up in the build folder, then in the source
# folder.)
#
# It also sets MLCC_TARGET, so that mlcc_add_model compiles models for the
# same processor, and runs programs (ctest) under QEMU's mps2-an386 board.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# There is no OS to link a test program for: try-compile a static library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(MLCC_CORTEX_M4_FLAGS "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
set(CMAKE_C_FLAGS_INIT "${MLCC_CORTEX_M4_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${MLCC_CORTEX_M4_FLAGS}")
set(CMAKE_ASM_FLAGS_INIT "${MLCC_CORTEX_M4_FLAGS}")

# Programs (mlcc among them) come from the build host; libraries and headers
# from the toolchain.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)

# The mlcc target preset of this processor (mlcc --list-targets).
set(MLCC_TARGET cortex-m4)

# ctest runs the firmware on QEMU's Cortex-M4 board, with semihosting for its
# output and exit status.
set(CMAKE_CROSSCOMPILING_EMULATOR
    qemu-system-arm -M mps2-an386 -nographic -semihosting -kernel)
