# SPDX-License-Identifier: MIT
# The test suite, run by ctest: every tests/AREA/test_NAME.c is the cmocka
# test AREA/test_NAME; the scripts below check the built and installed
# artefacts as a user sees them.
enable_testing()
file(GLOB TERN_TEST_COMMON CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/common/*.c)
add_library(tern_testlib STATIC ${TERN_TEST_COMMON})
target_link_libraries(tern_testlib PUBLIC tern_internal tern::cmocka)
set(TERN_TEST_ENV "TERN_BIN=$<TARGET_FILE:tern_cli>;TERN_BENCH_BIN=${PROJECT_BINARY_DIR}/tern-bench;TERN_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
file(GLOB TERN_TESTS_SRC CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/*/test_*.c)
foreach(src ${TERN_TESTS_SRC})
  get_filename_component(name ${src} NAME_WE)
  get_filename_component(dir ${src} DIRECTORY)
  get_filename_component(area ${dir} NAME)
  add_executable(${area}_${name} ${src})
  target_link_libraries(${area}_${name} PRIVATE tern_testlib)
  add_test(NAME ${area}/${name} COMMAND ${area}_${name})
  set_tests_properties(${area}/${name} PROPERTIES ENVIRONMENT "${TERN_TEST_ENV}" TIMEOUT 600)
endforeach()

# Someone else's build, with nothing but the installed files: pkg-config and
# find_package(tern), each against libtern.so and libtern.a.
if(TERN_SANITIZE)
  set(TERN_INSTALL_CFLAGS "-fsanitize=address,undefined")
elseif(TERN_TSAN)
  set(TERN_INSTALL_CFLAGS "-fsanitize=thread")
endif()
add_test(NAME tools/install COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-install
         ${PROJECT_BINARY_DIR} "${TERN_INSTALL_CFLAGS}")
# libtern.so exports exactly the functions tern.h declares; libtern.a
# defines no global symbol without the tern_ prefix.
add_test(NAME tools/symbols COMMAND ${PROJECT_SOURCE_DIR}/tests/tools/symbols.sh
         $<TARGET_FILE:tern> ${PROJECT_SOURCE_DIR}/include/tern.h $<TARGET_FILE:tern_static>)
# docs/cli.md, the man page and `tern help` name the same subcommands and options.
add_test(NAME tools/cli_docs COMMAND ${PROJECT_SOURCE_DIR}/tests/tools/cli_docs.sh
         $<TARGET_FILE:tern_cli> ${PROJECT_SOURCE_DIR}/docs/cli.md ${PROJECT_SOURCE_DIR}/docs/tern.1)
# The README's first command, on a small index.
add_test(NAME tools/demo COMMAND ${PROJECT_SOURCE_DIR}/scripts/demo)
set_tests_properties(tools/demo PROPERTIES ENVIRONMENT "TERN_BIN=$<TARGET_FILE:tern_cli>;DOCS=20000")
# Every call of tern.h lists its errors and has a row in test_conventions.c.
add_test(NAME tools/header_errors COMMAND ${PROJECT_SOURCE_DIR}/tests/tools/header_errors.sh
         ${PROJECT_SOURCE_DIR}/include/tern.h ${PROJECT_SOURCE_DIR}/tests/engine/test_conventions.c)
# Every tracked source file carries the MIT licence's SPDX line.
add_test(NAME tools/licence COMMAND ${PROJECT_SOURCE_DIR}/tests/tools/licence.sh ${PROJECT_SOURCE_DIR})
# tern-bench stays in small functions (issue 21): none over 80 lines.
add_test(NAME tools/bench_function_length
         COMMAND ${PROJECT_SOURCE_DIR}/tests/tools/function_length.sh 80
                 ${PROJECT_SOURCE_DIR}/tools/bench)
# engine/'s folders include and call one another in one direction only
# (engine/README.md): no circle between folders.
add_test(NAME tools/layout COMMAND ${PROJECT_SOURCE_DIR}/tests/tools/layout.sh
         ${PROJECT_SOURCE_DIR} $<TARGET_FILE:tern_static>)
