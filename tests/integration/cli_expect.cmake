# What the CLI tests share: run ampstudio-cli (${CLI}) expecting an exit code and a needle in
# stderr, with one line of error for exit 2. Each run has 60 s and, through the shell, an 8 GiB
# address-space cap, so a case that would hang or eat memory fails fast instead of taking the
# machine.
#
# A CLI built with AddressSanitizer (the asan preset, -DSANITIZE=address;undefined) reserves
# terabytes of address space for its shadow memory and cannot start under that cap; ASan's
# allocator is capped instead: an allocation over 8 GiB, or a process past 8 GiB resident, ends
# the program with ASan's report (where the cap would throw std::bad_alloc), so a case that
# allocates before it refuses still fails. ASan also wants its runtime first among the
# libraries, which LD_PRELOAD of the full-disk shim changes (the shim's write() forwards to the
# next one, ASan's, so the order is harmless).
set(vm_cap "ulimit -v 8388608; ")
if(SANITIZE MATCHES "address")
  set(vm_cap "")
  set(ENV{ASAN_OPTIONS} "$ENV{ASAN_OPTIONS}:max_allocation_size_mb=8192:hard_rss_limit_mb=8192:verify_asan_link_order=0")
endif()

function(expect_fail code needle)
  execute_process(COMMAND sh -c "${vm_cap}exec \"$@\"" sh ${CLI} ${ARGN}
                  TIMEOUT 60 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT "${rc}" STREQUAL "${code}")
    message(FATAL_ERROR "expected exit ${code}, got '${rc}' for: ${ARGN}\n${err}")
  endif()
  string(FIND "${err}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "stderr lacks '${needle}' for: ${ARGN}\n${err}")
  endif()
  string(STRIP "${err}" stripped)
  string(FIND "${stripped}" "\n" nl)
  if(code EQUAL 2 AND NOT nl EQUAL -1)
    message(FATAL_ERROR "expected a one-line error for: ${ARGN}\n${err}")
  endif()
endfunction()

# Every line of a JSON-lines file is whole; sets `count` in the caller.
function(whole_lines file count_var)
  file(STRINGS "${file}" lines)
  list(LENGTH lines n)
  foreach(line IN LISTS lines)
    string(JSON step ERROR_VARIABLE bad GET "${line}" step)
    if(bad)
      message(FATAL_ERROR "${file}: a cut line: ${line}")
    endif()
  endforeach()
  file(READ "${file}" all)
  string(LENGTH "${all}" len)
  if(len GREATER 0)
    math(EXPR last "${len} - 1")
    string(SUBSTRING "${all}" ${last} 1 tail)
    if(NOT tail STREQUAL "\n")
      message(FATAL_ERROR "${file} does not end with a whole line")
    endif()
  endif()
  set(${count_var} ${n} PARENT_SCOPE)
endfunction()
