# SPDX-License-Identifier: MIT
# What `cmake --install` puts under the prefix, and the Debian package of it
# (`cpack -G DEB` in a build directory):
#   bin/tern                      the tool, RPATH $ORIGIN/../lib
#   lib/libtern.so.MAJOR[.MINOR.PATCH], lib/libtern.so, lib/libtern.a
#   include/tern.h
#   lib/pkgconfig/tern.pc         pkg-config --libs tern (--static for libtern.a's needs)
#   lib/cmake/tern/               find_package(tern): tern::tern (shared), tern::tern_static
#   share/man/man1/tern.1
#   share/doc/tern/copyright      LICENSE, in Debian's machine-readable format

install(TARGETS tern tern_static EXPORT ternTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES include/tern.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES docs/tern.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# The licence as Debian ships it (copyright-format 1.0): LICENSE's text,
# every line indented by one space and blank lines written " .".
file(READ ${PROJECT_SOURCE_DIR}/LICENSE TERN_LICENSE_TEXT)
string(REGEX REPLACE "\n$" "" TERN_LICENSE_TEXT "${TERN_LICENSE_TEXT}")
string(REGEX REPLACE "\n\n" "\n.\n" TERN_LICENSE_TEXT "${TERN_LICENSE_TEXT}")
string(REGEX REPLACE "\n" "\n " TERN_LICENSE_TEXT "${TERN_LICENSE_TEXT}")
file(WRITE ${PROJECT_BINARY_DIR}/copyright
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: tern
Upstream-Contact: tern maintainers <tern@localhost>

Files: *
Copyright: 2026 the tern authors
License: MIT

License: MIT
 ${TERN_LICENSE_TEXT}
")
install(FILES ${PROJECT_BINARY_DIR}/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})

# pkg-config: -ltern is the shared library; `pkg-config --static` adds what
# libtern.a needs (see README.md for linking the static one).
set(TERN_PC_LIBS_PRIVATE "-lpthread -lm")
# How far tern.pc sits below the prefix: one level per part of LIBDIR, plus pkgconfig/.
string(REGEX REPLACE "[^/]+" ".." TERN_PC_UP "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(tern.pc.in tern.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tern.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake package.
set(TERN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tern)
install(EXPORT ternTargets NAMESPACE tern:: DESTINATION ${TERN_CMAKE_DIR})
configure_package_config_file(cmake/ternConfig.cmake.in ${PROJECT_BINARY_DIR}/ternConfig.cmake
  INSTALL_DESTINATION ${TERN_CMAKE_DIR})
# 0.x releases break compatibility at every minor version; 1.0 on, at every major.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(TERN_COMPAT SameMinorVersion)
else()
  set(TERN_COMPAT SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ternConfigVersion.cmake
  COMPATIBILITY ${TERN_COMPAT})
install(FILES ${PROJECT_BINARY_DIR}/ternConfig.cmake ${PROJECT_BINARY_DIR}/ternConfigVersion.cmake
  cmake/TernDeps.cmake DESTINATION ${TERN_CMAKE_DIR})

# Debian package: one package with the tool, both libraries, header, pkg-config
# and CMake files, the man page and the copyright file.  tern.pc and
# ternConfig.cmake require LMDB's and xxHash's development files, so the
# package depends on them (shlibdeps adds the runtime libraries).
set(CPACK_PACKAGE_NAME tern)
set(CPACK_PACKAGE_VENDOR "tern")
set(CPACK_PACKAGE_CONTACT "tern maintainers <tern@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "liblmdb-dev, libxxhash-dev, pkg-config")
if(TARGET PkgConfig::TERN_LIBURING)
  # tern.pc then requires liburing too (Requires.private, for libtern.a)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", liburing-dev")
endif()
set(CPACK_GENERATOR DEB)
include(CPack)
