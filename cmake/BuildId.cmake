# cmake -DOUT=FILE -DVERSION=V -DLIST=FILES.txt -P BuildId.cmake (in the source folder)
#
# Writes FILE: `static const char kBuildId[] = "...";`, 16 hex digits of a
# hash of the compiler's version and sources (each file's path and
# contents; LIST names them, one a line), rewritten only when it changes. The kernel cache keeps each
# build's objects apart by it (compiler/driver/KernelCache.h).
file(STRINGS "${LIST}" SOURCES)
set(all "${VERSION}\n")
foreach(f IN LISTS SOURCES)
  file(SHA256 "${f}" h)
  string(APPEND all "${f} ${h}\n")
endforeach()
string(SHA256 id "${all}")
string(SUBSTRING "${id}" 0 16 id)
set(text "static const char kBuildId[] = \"${id}\";\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${text}")
