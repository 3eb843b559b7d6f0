# Sanitizers for every target of the build (our libraries, the programs and the tests), chosen with
# AMP_SANITIZE, a list: "address;undefined" (the asan preset). Empty (the default) adds nothing.
# Only our own code is instrumented; Qt, oneDNN, libgomp and GoogleTest come from Debian as they are,
# which ASan and UBSan tolerate (they intercept malloc and friends whoever calls them).
set(AMP_SANITIZE "" CACHE STRING "Sanitizers for every target, e.g. address;undefined (empty: none)")
if(NOT AMP_SANITIZE)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  message(FATAL_ERROR "AMP_SANITIZE=${AMP_SANITIZE}: needs GCC or Clang, not ${CMAKE_CXX_COMPILER_ID}")
endif()
set(_amp_sanitizers ${AMP_SANITIZE})
# GCC leaves float-cast-overflow out of -fsanitize=undefined (Clang has it in). A float converted
# to an integer it does not fit is undefined behaviour, and ours come from data (loss scales,
# histogram bins, sizes read from files), so both compilers check it.
if("undefined" IN_LIST _amp_sanitizers)
  list(APPEND _amp_sanitizers float-cast-overflow)
endif()
list(JOIN _amp_sanitizers "," _amp_sanitize_csv)
message(STATUS "Sanitizers: ${_amp_sanitize_csv}")
# -fno-sanitize-recover=all: a UBSan finding ends the program with a failure, so the test that ran
# into it fails (by default UBSan prints and carries on, and ctest would pass). Frame pointers give
# ASan's malloc/free stacks their callers.
set(_amp_sanitize_flags -fsanitize=${_amp_sanitize_csv} -fno-sanitize-recover=all
    -fno-omit-frame-pointer)
add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${_amp_sanitize_flags}>")
add_link_options(${_amp_sanitize_flags})
if("address" IN_LIST _amp_sanitizers AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # libstdc++'s own checks: bounds on vector/string/array operator[] and front/back
  # (_GLIBCXX_ASSERTIONS; ABI-neutral), and ASan annotations on std::vector's unused capacity, so
  # that a read past size() but within capacity is reported too (ASan alone sees only the
  # allocation's end).
  add_compile_definitions("$<$<COMPILE_LANGUAGE:CXX>:_GLIBCXX_ASSERTIONS>"
                          "$<$<COMPILE_LANGUAGE:CXX>:_GLIBCXX_SANITIZE_VECTOR>")
endif()
