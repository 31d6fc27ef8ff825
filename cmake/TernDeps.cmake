# SPDX-License-Identifier: MIT
# tern_find_dep(NAME HEADER LIB WHAT DEBPKG REQUIRED|OPTIONAL)
# Finds a C library by header and library name and makes the imported target
# tern::NAME.  Each dependency is a Debian package: a missing REQUIRED one
# stops the configuration saying which package to install.
function(tern_find_dep name header lib what debpkg mode)
  find_path(TERN_${name}_INCLUDE_DIR ${header})
  find_library(TERN_${name}_LIBRARY ${lib})
  if(NOT TERN_${name}_INCLUDE_DIR OR NOT TERN_${name}_LIBRARY)
    if(mode STREQUAL "REQUIRED")
      message(FATAL_ERROR "${what} not found: install it with `apt-get install ${debpkg}` (or run scripts/deps)")
    endif()
    return()
  endif()
  add_library(tern::${name} INTERFACE IMPORTED)
  target_include_directories(tern::${name} INTERFACE ${TERN_${name}_INCLUDE_DIR})
  target_link_libraries(tern::${name} INTERFACE ${TERN_${name}_LIBRARY})
endfunction()

# tern_find_uring(): liburing (Debian liburing-dev) through pkg-config, for
# the read queue's io_uring backend (codec/io_queue.c).  Optional: without
# it the queue uses its thread pool, then plain pread.  Defines the target
# tern::uring and TERN_HAVE_LIBURING when found; TERN_URING=OFF skips it.
function(tern_find_uring)
  set(TERN_PC_URING "" PARENT_SCOPE)
  if(NOT TERN_URING)
    return()
  endif()
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(TERN_LIBURING QUIET IMPORTED_TARGET liburing)
  endif()
  if(NOT TERN_LIBURING_FOUND)
    message(STATUS "liburing not found (apt-get install liburing-dev): the read queue uses threads")
    return()
  endif()
  add_library(tern::uring INTERFACE IMPORTED)
  target_link_libraries(tern::uring INTERFACE PkgConfig::TERN_LIBURING)
  target_compile_definitions(tern::uring INTERFACE TERN_HAVE_LIBURING)
  set(TERN_PC_URING " liburing" PARENT_SCOPE)
endfunction()
