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
