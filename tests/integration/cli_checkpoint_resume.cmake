# ampstudio-cli run with checkpoint.every, then --resume from the middle checkpoint: the resumed
# run must reproduce the uninterrupted run's metrics (all but timings) and final state exactly,
# and bad resumes must fail with exit code 2 and one line.
# Usage: cmake -DCLI=path/to/ampstudio-cli -DWORK=scratch/folder -P cli_checkpoint_resume.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(run_cli expected_rc)
  execute_process(COMMAND "${CLI}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "ampstudio-cli ${ARGN}: exit code ${rc}, expected ${expected_rc}\n${out}\n${err}")
  endif()
  set(last_stderr "${err}" PARENT_SCOPE)
endfunction()

# The step metrics of a metrics.jsonl without the fields that measure time (and the thread count,
# which the step thread tuner picks by timing the steps; it changes no other number).
function(metrics_without_timings path out_var)
  file(STRINGS "${path}" lines)
  set(result "")
  foreach(line IN LISTS lines)
    foreach(key step_ms samples_per_s gemm_gflops threads)  # threads: the tuner follows the timings
      string(JSON line REMOVE "${line}" ${key})
    endforeach()
    string(APPEND result "${line}\n")
  endforeach()
  set(${out_var} "${result}" PARENT_SCOPE)
endfunction()

set(common --preset spirals --set train.steps=20 --set checkpoint.every=10 --set train.inject_nonfinite=5,13 --quiet)
run_cli(0 run ${common} --out "${WORK}/whole")
foreach(f step-10.zip step-20.zip)
  if(NOT EXISTS "${WORK}/whole/checkpoints/${f}")
    message(FATAL_ERROR "checkpoint ${f} was not written")
  endif()
endforeach()

run_cli(0 run --resume "${WORK}/whole/checkpoints/step-10.zip" --out "${WORK}/resumed" --quiet)
metrics_without_timings("${WORK}/whole/metrics.jsonl" whole)
metrics_without_timings("${WORK}/resumed/metrics.jsonl" resumed)
if(NOT whole STREQUAL resumed)
  message(FATAL_ERROR "resumed metrics differ from the uninterrupted run:\n${whole}\n---\n${resumed}")
endif()

# The final checkpoints hold the same weights, optimizer and scaler state.
file(ARCHIVE_EXTRACT INPUT "${WORK}/whole/checkpoints/step-20.zip" DESTINATION "${WORK}/x-whole")
file(ARCHIVE_EXTRACT INPUT "${WORK}/resumed/checkpoints/step-20.zip" DESTINATION "${WORK}/x-resumed")
foreach(entry model.safetensors optimizer.safetensors scaler.json metrics.jsonl)
  file(SHA256 "${WORK}/x-whole/${entry}" a)
  file(SHA256 "${WORK}/x-resumed/${entry}" b)
  if(entry STREQUAL "metrics.jsonl")
    metrics_without_timings("${WORK}/x-whole/${entry}" a)
    metrics_without_timings("${WORK}/x-resumed/${entry}" b)
  endif()
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "${entry} differs between the uninterrupted and the resumed run")
  endif()
endforeach()

# Resuming in place (the folder already has steps after the checkpoint) keeps one line per step.
run_cli(0 run --resume "${WORK}/whole/checkpoints/step-10.zip" --set train.steps=25 --quiet)
file(STRINGS "${WORK}/whole/metrics.jsonl" lines)
list(LENGTH lines n)
if(NOT n EQUAL 25)
  message(FATAL_ERROR "in-place resume to 25 steps left ${n} lines in metrics.jsonl")
endif()

# Bad resumes: exit code 2, one line naming the problem.
run_cli(2 run --resume "${WORK}/whole/checkpoints/step-10.zip" --set model.hidden=8 --out "${WORK}/bad")
if(NOT last_stderr MATCHES "model.hidden")
  message(FATAL_ERROR "unexpected message: ${last_stderr}")
endif()
file(WRITE "${WORK}/broken.zip" "not a zip")
run_cli(2 run --resume "${WORK}/broken.zip" --out "${WORK}/bad")
if(NOT last_stderr MATCHES "broken.zip: not a zip archive")
  message(FATAL_ERROR "unexpected message: ${last_stderr}")
endif()
