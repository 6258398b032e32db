# mlcc_add_model: compiles an ONNX model with mlcc into a static library
# target (installed with mlcc's CMake package and included by mlccConfig.cmake).
#
#   mlcc_add_model(<target> MODEL <model.onnx>
#                  [NAME <C prefix>]
#                  [TARGET <mlcc target preset or LLVM triple>]
#                  [OPTIONS <extra mlcc arguments>...]
#                  [DEPENDS <files>...])
#
# <target> becomes a STATIC library whose one member is the object file mlcc
# writes, <build dir>/mlcc/<target>/<NAME>.o. The generated <NAME>.h lies next
# to it, and that folder is on the include path of whatever links <target>,
# as is libm (the generated code may call expf and the like). mlcc also
# writes a JSON report, <NAME>.json (code, weight and arena bytes, undefined
# symbols). The target's properties MLCC_HEADER and MLCC_REPORT hold the two
# paths.
#
#   MODEL    the .onnx file; a relative path is relative to
#            CMAKE_CURRENT_SOURCE_DIR (mlcc runs there, so relative paths in
#            OPTIONS, such as --freeze NAME=FILE.pb, are too).
#   NAME     the prefix of the generated symbols (NAME_run, NAME_ARENA_SIZE,
#            ...); default: <target> made a C identifier.
#   TARGET   what the code is for: a preset from `mlcc --list-targets`
#            (host, cortex-m4, aarch64-linux, riscv32, ...) or an LLVM
#            triple. Default: the variable MLCC_TARGET (a toolchain file can
#            set it), else `host` when not cross-compiling; a cross build
#            without either is an error.
#   OPTIONS  more mlcc arguments (-O2, --Os, --dim batch=1, --cpu ...).
#   DEPENDS  more files whose change must recompile the model (for example
#            the files named by --freeze).
#
# The model is compiled again when the model, the mlcc executable, a DEPENDS
# file or the command line changes. The command line is also kept in
# <NAME>.cmdline, rewritten only when it changes, so that generators that do
# not track command lines (Makefiles) see the change too.
#
# mlcc runs on the build host, also in a cross build: the command is the
# path of the imported mlcc::mlcc, never a cross-compiling emulator.
include_guard(GLOBAL)

function(mlcc_add_model target)
  set(where "mlcc_add_model(${target})")
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "MODEL;NAME;TARGET" "OPTIONS;DEPENDS")
  if(arg_UNPARSED_ARGUMENTS)
    list(JOIN arg_UNPARSED_ARGUMENTS " " unparsed)
    message(FATAL_ERROR "${where}: unexpected arguments: ${unparsed} "
      "(usage: mlcc_add_model(<target> MODEL <model.onnx> [NAME <prefix>] "
      "[TARGET <target>] [OPTIONS <mlcc arguments>...] [DEPENDS <files>...]))")
  endif()
  foreach(keyword IN LISTS arg_KEYWORDS_MISSING_VALUES)
    if(NOT keyword STREQUAL "OPTIONS" AND NOT keyword STREQUAL "DEPENDS")
      message(FATAL_ERROR "${where}: ${keyword} needs a value")
    endif()
  endforeach()
  if(NOT arg_MODEL)
    message(FATAL_ERROR "${where}: MODEL <model.onnx> is required: the ONNX model to compile")
  endif()
  if(NOT TARGET mlcc::mlcc)
    message(FATAL_ERROR "${where}: the target mlcc::mlcc does not exist; call find_package(mlcc) first")
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "C" IN_LIST languages)
    message(FATAL_ERROR "${where}: the C language must be enabled (project(... LANGUAGES C))")
  endif()

  cmake_path(ABSOLUTE_PATH arg_MODEL BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
             NORMALIZE OUTPUT_VARIABLE model)
  get_source_file_property(model_generated "${model}" GENERATED)
  if(NOT EXISTS "${model}" AND NOT model_generated)
    message(FATAL_ERROR "${where}: the model ${model} does not exist")
  endif()

  string(MAKE_C_IDENTIFIER "${target}" name)
  if(DEFINED arg_NAME)
    string(MAKE_C_IDENTIFIER "${arg_NAME}" c_name)
    if(NOT c_name STREQUAL arg_NAME)
      message(FATAL_ERROR "${where}: NAME ${arg_NAME} is not a C identifier")
    endif()
    set(name "${arg_NAME}")
  endif()

  if(DEFINED arg_TARGET)
    set(mlcc_target "${arg_TARGET}")
  elseif(NOT "${MLCC_TARGET}" STREQUAL "")
    set(mlcc_target "${MLCC_TARGET}")
  elseif(NOT CMAKE_CROSSCOMPILING)
    set(mlcc_target host)
  else()
    message(FATAL_ERROR "${where}: this is a cross build (CMAKE_SYSTEM_NAME "
      "${CMAKE_SYSTEM_NAME}): say what the model is compiled for with TARGET "
      "<preset or LLVM triple> or the variable MLCC_TARGET (see mlcc --list-targets)")
  endif()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/mlcc/${target}")
  set(object "${dir}/${name}.o")  # mlcc writes what -o's extension says
  set(header "${dir}/${name}.h")
  set(report "${dir}/${name}.json")
  set(command "${model}" --name "${name}" --target "${mlcc_target}" ${arg_OPTIONS}
              --report "${report}" -o "${object}")

  # One argument a line; rewritten (and so newer) only when it changes. The
  # command line is substituted as @cmdline@, whose value is not expanded
  # again, so ${...} and @...@ in it are kept as they are.
  file(MAKE_DIRECTORY "${dir}")
  list(JOIN command "\n" cmdline)
  set(cmdline_file "${dir}/${name}.cmdline")
  file(CONFIGURE OUTPUT "${cmdline_file}" CONTENT "@cmdline@\n" @ONLY)

  set(depends "${model}" "$<TARGET_FILE:mlcc::mlcc>" "${cmdline_file}")
  foreach(file IN LISTS arg_DEPENDS)
    cmake_path(ABSOLUTE_PATH file BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    list(APPEND depends "${file}")
  endforeach()

  cmake_path(GET model FILENAME model_file)
  add_custom_command(
    OUTPUT "${object}" "${header}" "${report}"
    COMMAND "$<TARGET_FILE:mlcc::mlcc>" ${command}
    DEPENDS ${depends}
    WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
    COMMENT "mlcc: compiling ${model_file} for ${mlcc_target} (${target})"
    VERBATIM)
  set_source_files_properties("${object}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set_source_files_properties("${header}" "${report}" PROPERTIES GENERATED TRUE)

  add_library(${target} STATIC "${object}" "${header}")
  set_target_properties(${target} PROPERTIES
    LINKER_LANGUAGE C
    MLCC_HEADER "${header}"
    MLCC_REPORT "${report}")
  target_include_directories(${target} INTERFACE "${dir}")
  target_link_libraries(${target} INTERFACE "$<$<NOT:$<C_COMPILER_ID:MSVC>>:m>")
endfunction()
