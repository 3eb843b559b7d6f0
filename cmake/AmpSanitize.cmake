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
# libstdc++'s own bounds checks on vector/string/array operator[], front() and back()
# (_GLIBCXX_ASSERTIONS; ABI-neutral): an index past size() but within the capacity is caught,
# which ASan, seeing only the allocation's end, misses. Not _GLIBCXX_SANITIZE_VECTOR (ASan
# annotations on the capacity): Debian's libgtest.a is built without them, its push_backs then
# share std::vector's out-of-line code with our annotated test files, and ASan reports a
# heap-buffer-overflow inside GoogleTest's own test registration.
add_compile_definitions("$<$<COMPILE_LANGUAGE:CXX>:_GLIBCXX_ASSERTIONS>")
