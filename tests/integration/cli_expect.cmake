# What the CLI tests share: run ampstudio-cli (${CLI}) expecting an exit code and a needle in
# stderr, with one line of error for exit 2. Each run has 60 s and, through the shell, an 8 GiB
# address-space cap, so a case that would hang or eat memory fails fast instead of taking the
# machine.
function(expect_fail code needle)
  execute_process(COMMAND sh -c "ulimit -v 8388608; exec \"$@\"" sh ${CLI} ${ARGN}
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
