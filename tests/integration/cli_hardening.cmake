# The CLI under a careless or hostile user (issue 13): pipes and devices where files belong, a
# full disk, a folder that already holds a run, paths in the way, absurd values. Each case gives
# exit 2 and one line naming the file or key, in bounded time and memory, and loses nothing
# already written.
# Usage: cmake -DCLI=ampstudio-cli -DPRELOAD=full_disk_preload.so -DWORK=dir [-DSANITIZE=address]
#        -P cli_hardening.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(small --preset spirals --set train.steps=6 --quiet)

include(${CMAKE_CURRENT_LIST_DIR}/cli_expect.cmake)


# 4. Pipes and devices: a FIFO blocked forever; /dev/zero filled memory.
execute_process(COMMAND mkfifo ${WORK}/fifo.json)
expect_fail(2 "fifo.json: not a regular file" run ${WORK}/fifo.json --out ${WORK}/x)
expect_fail(2 "/dev/zero: not a regular file" run /dev/zero --out ${WORK}/x)
expect_fail(2 "data.path: /dev/zero: not a folder" run --preset fmnist-mlp --set data.path=/dev/zero --out ${WORK}/x)
expect_fail(2 "data.path: /dev/zero: not a regular file" run --preset spirals --set data.name=csv --set data.path=/dev/zero --out ${WORK}/x)
expect_fail(2 "data.path: 0: no such" run --preset fmnist-mlp --set data.path=0 --out ${WORK}/x)

# 7. A folder that holds a run is not written over, unless asked.
expect_fail(0 "" run ${small} --set checkpoint.every=3 --out ${WORK}/taken)
file(READ ${WORK}/taken/metrics.jsonl before)
expect_fail(2 "already holds a run" run ${small} --set seed=9 --out ${WORK}/taken)
file(READ ${WORK}/taken/metrics.jsonl after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "a refused run changed ${WORK}/taken/metrics.jsonl")
endif()
file(WRITE ${WORK}/taken/notes.txt "mine")
expect_fail(0 "" run ${small} --set train.steps=2 --out ${WORK}/taken --overwrite)
if(EXISTS ${WORK}/taken/checkpoints/step-6.zip OR NOT EXISTS ${WORK}/taken/notes.txt)
  message(FATAL_ERROR "--overwrite left the old run's checkpoint, or removed a file that is not a run's")
endif()
whole_lines(${WORK}/taken/metrics.jsonl n)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "--overwrite: expected the new run's 2 steps, found ${n}")
endif()

# 8. Paths in the way are found before the run, not after it (or at every checkpoint).
file(MAKE_DIRECTORY ${WORK}/way/summary.json)
expect_fail(2 "way/summary.json: exists and is not a file" run ${small} --out ${WORK}/way)
if(EXISTS ${WORK}/way/metrics.jsonl)
  message(FATAL_ERROR "the run started although summary.json could never be written")
endif()
file(MAKE_DIRECTORY ${WORK}/ck)
file(WRITE ${WORK}/ck/checkpoints "a file")
expect_fail(2 "ck/checkpoints: exists and is not a folder" run ${small} --set checkpoint.every=1 --out ${WORK}/ck)
file(WRITE ${WORK}/plain "a file")
expect_fail(2 "plain: exists and is not a folder" run ${small} --out ${WORK}/plain/run)
expect_fail(2 "is a folder" compare ${small} --json ${WORK})
expect_fail(2 "does not exist" export --run ${WORK}/taken --format csv --output ${WORK}/no/such/out.csv)

# 8. Values: long ones are cut, control characters escaped, internal names never shown.
string(REPEAT "a" 100000 long)
expect_fail(2 "(100000 bytes)" run --preset spirals --set "model.hidden=${long}" --out ${WORK}/x)
expect_fail(2 "got 'a\\nb'" run --preset spirals "--set" "data.name=a\nb" --out ${WORK}/x)
expect_fail(2 "data.test_fraction" run --preset spirals --set data.test_fraction=2 --out ${WORK}/x)

# 2. Sizes refused before anything is allocated (the 8 GiB cap above stops the old code early).
expect_fail(2 "data.samples=10000000000 needs" run --preset spirals --set data.samples=10000000000 --out ${WORK}/x)
expect_fail(2 "needs" run --preset fmnist-cnn --set model.cnn=fc:4294967297 --out ${WORK}/x)
# The recipe's batches (2^30 values at most) are not made before the model is found too big.
expect_fail(2 "model.width=200000, model.layers=3 (batch 256, fp32) needs" run --preset recipe --set model.width=200000 --out ${WORK}/x)
expect_fail(2 "train.threads" run --preset spirals --set train.threads=100000 --out ${WORK}/x)

# 6. A full disk: the run stops with exit 2 naming the file and "No space left on device";
# every line written is whole and no summary claims what is not there.
if(PRELOAD)
  set(full env AMP_TEST_DISK_DIR=${WORK}/full LD_PRELOAD=${PRELOAD})
  file(MAKE_DIRECTORY ${WORK}/full)
  execute_process(COMMAND ${full} AMP_TEST_DISK_BYTES=4000 ${CLI} run ${small} --set train.steps=40 --out ${WORK}/full/new
                  TIMEOUT 60 RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "No space left on device")
    message(FATAL_ERROR "full disk, new run: expected exit 2 and the system's reason, got ${rc}: ${err}")
  endif()
  whole_lines(${WORK}/full/new/metrics.jsonl n)
  if(EXISTS ${WORK}/full/new/summary.json OR n EQUAL 0)
    message(FATAL_ERROR "full disk: a summary was written, or no step was kept (${n})")
  endif()
  # A finished 8-step run, resumed from step 4 on a full disk: its metrics are not cut to 4
  # while summary.json still claims 8.
  expect_fail(0 "" run ${small} --set train.steps=8 --set checkpoint.every=4 --out ${WORK}/full/done)
  execute_process(COMMAND ${full} AMP_TEST_DISK_BYTES=0 ${CLI} run --resume ${WORK}/full/done/checkpoints/step-4.zip --quiet
                  TIMEOUT 60 RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "No space left on device")
    message(FATAL_ERROR "full disk, resume: expected exit 2 and the system's reason, got ${rc}: ${err}")
  endif()
  whole_lines(${WORK}/full/done/metrics.jsonl n)
  if(EXISTS ${WORK}/full/done/summary.json)
    file(READ ${WORK}/full/done/summary.json summary)
    string(JSON steps GET "${summary}" steps)
    if(NOT steps EQUAL n)
      message(FATAL_ERROR "full disk, resume: summary.json claims ${steps} steps, metrics.jsonl holds ${n}")
    endif()
  endif()
  # A checkpoint that cannot be written says why (it said "Unknown error").
  execute_process(COMMAND ${full} AMP_TEST_DISK_BYTES=9000 ${CLI} run ${small} --set checkpoint.every=2 --out ${WORK}/full/ck
                  TIMEOUT 60 RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT err MATCHES "No space left on device" OR err MATCHES "Unknown error")
    message(FATAL_ERROR "full disk, checkpoint: expected the system's reason (${rc}): ${err}")
  endif()
endif()
