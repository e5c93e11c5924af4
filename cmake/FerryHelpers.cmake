# Small helpers so that each src/<layer>/CMakeLists.txt is a short list of explicit sources.

set(FERRY_WARNINGS -Wall -Wextra -Wpedantic $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local> -Wnon-virtual-dtor
    -Wno-missing-field-initializers -Werror=unused-result -Werror=return-type)
# GCC 12 at -O3 reports impossible overlaps inside libstdc++'s std::string (GCC bug 105329);
# the warning is noise there, so it is off for GCC.
list(APPEND FERRY_WARNINGS $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)
# Clang checks the locking annotations (src/base/thread_annotations.h) wherever it compiles: in
# the fuzz preset, and in scripts/check-thread-safety.py, the syntax-only pass make test runs.
list(APPEND FERRY_WARNINGS $<$<CXX_COMPILER_ID:Clang>:-Wthread-safety -Werror=thread-safety>)
# A unity build (the dev and release presets': it halves the time make test spends compiling)
# includes each source into a batch file, where GCC takes an anonymous-namespace type inside a
# class for one from a header and warns of linkage that cannot differ across translation units.
if(CMAKE_UNITY_BUILD)
  list(APPEND FERRY_WARNINGS $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
endif()
if(FERRY_WERROR)
  list(APPEND FERRY_WARNINGS -Werror)
endif()

set(FERRY_SANITIZER_FLAGS)
if(FERRY_SANITIZE)
  set(FERRY_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
      -fno-omit-frame-pointer)
endif()
if(FERRY_FUZZ)
  set(FERRY_SANITIZER_FLAGS -fsanitize=fuzzer-no-link,address,undefined
      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
endif()

function(ferry_apply_flags target)
  target_compile_options(${target} PRIVATE ${FERRY_WARNINGS} ${FERRY_SANITIZER_FLAGS})
  target_link_options(${target} PRIVATE ${FERRY_SANITIZER_FLAGS})
endfunction()

# ferry_cc_library(NAME SRCS ... DEPS ...): a static library of one layer.
function(ferry_cc_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  ferry_apply_flags(${name})
  # Sanitized objects need the sanitizer runtime wherever they are linked.
  target_link_options(${name} INTERFACE ${FERRY_SANITIZER_FLAGS})
endfunction()

# ferry_cc_test(NAME SRCS ... DEPS ... [LABELS ...]): one GoogleTest executable, discovered by ctest.
function(ferry_cc_test name)
  if(NOT FERRY_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
      FERRY_FIXTURES_DIR="${FERRY_FIXTURES_DIR}"
      FERRY_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  ferry_apply_flags(${name})
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()
