# Issue 24: nothing written is lost, nothing ambiguous is guessed. Each case here failed on the
# code before it (exit 0 on a failure, a process killed by a signal, a comparison replaced, a
# typo accepted): it now exits 2 with one line naming the file, key or entry.
# Usage: cmake -DCLI=ampstudio-cli -DWORK=dir [-DSANITIZE=address] -P cli_hardening_outputs.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(small --preset spirals --set train.steps=6 --quiet)
include(${CMAKE_CURRENT_LIST_DIR}/cli_expect.cmake)

# Runs the CLI through the shell with `prefix` before it (redirections, ulimit); sets rc and err.
function(cli_through_shell prefix suffix)
  execute_process(COMMAND sh -c "${prefix} exec \"$@\" ${suffix}" sh ${CLI} ${ARGN}
                  TIMEOUT 60 RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  set(rc "${rc}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

# 3. Standard output that cannot be written is a failure, not exit 0.
if(EXISTS /dev/full)
  cli_through_shell("" "> /dev/full" convert --to fp16 1 0.1 65520)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "standard output: No space left on device")
    message(FATAL_ERROR "convert > /dev/full: expected exit 2 naming standard output, got ${rc}: ${err}")
  endif()
  execute_process(COMMAND ${CLI} run ${small} --out ${WORK}/r RESULT_VARIABLE made OUTPUT_QUIET)
  cli_through_shell("" "> /dev/full" export --run ${WORK}/r --format csv)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "standard output")
    message(FATAL_ERROR "export > /dev/full: expected exit 2 naming standard output, got ${rc}: ${err}")
  endif()
endif()

# 3. Past the file-size limit the run stops with exit 2 and the system's reason, every line
# whole; SIGXFSZ no longer kills it mid-line.
cli_through_shell("ulimit -f 8;" "" run --preset spirals --set train.steps=400 --set train.histogram_every=1 --quiet --out ${WORK}/fsize)
if(NOT rc EQUAL 2 OR NOT err MATCHES "File too large")
  message(FATAL_ERROR "ulimit -f: expected exit 2 and 'File too large', got '${rc}': ${err}")
endif()
foreach(f metrics.jsonl histograms.jsonl)
  if(EXISTS ${WORK}/fsize/${f})
    whole_lines(${WORK}/fsize/${f} n)
  endif()
endforeach()

# 3. A comparison of no modes is a usage error, not an empty success; nor a mode twice.
cli_through_shell("" "--modes ''" compare ${small})
if(NOT rc EQUAL 2 OR NOT err MATCHES "--modes: no mode given")
  message(FATAL_ERROR "compare --modes '': expected exit 2, got ${rc}: ${err}")
endif()
expect_fail(2 "--modes: fp16 given twice" compare ${small} --modes fp16,fp16)

# 1. A second comparison into the same --out does not replace the first without --overwrite.
expect_fail(0 "" compare ${small} --modes fp32 --out ${WORK}/cmp)
file(READ ${WORK}/cmp/fp32/metrics.jsonl first)
expect_fail(2 "already holds a run" compare ${small} --set seed=5 --modes fp32 --out ${WORK}/cmp)
file(READ ${WORK}/cmp/fp32/metrics.jsonl second)
if(NOT first STREQUAL second)
  message(FATAL_ERROR "a refused comparison changed ${WORK}/cmp/fp32/metrics.jsonl")
endif()
expect_fail(0 "" compare ${small} --set seed=5 --modes fp32 --out ${WORK}/cmp --overwrite)

# 2. A misspelt autocast op is refused with the op it was probably meant to be.
expect_fail(2 "did you mean autocast.linear?" run ${small} --set autocast.lienar=fp32 --out ${WORK}/x)

# 1. An output file is never a special file turned into a regular one, nor the command's input.
execute_process(COMMAND mkfifo ${WORK}/out.fifo)
expect_fail(2 "out.fifo: not a regular file" export --run ${WORK}/r --format csv -o ${WORK}/out.fifo)
if(NOT IS_SYMLINK ${WORK}/out.fifo AND EXISTS ${WORK}/out.fifo)
  execute_process(COMMAND test -p ${WORK}/out.fifo RESULT_VARIABLE notfifo)
  if(NOT notfifo EQUAL 0)
    message(FATAL_ERROR "export replaced the FIFO with a regular file")
  endif()
endif()
file(READ ${WORK}/r/metrics.jsonl input_before)
expect_fail(2 "is an input of this command" export --run ${WORK}/r --format csv -o ${WORK}/r/metrics.jsonl)
file(READ ${WORK}/r/metrics.jsonl input_after)
if(NOT input_before STREQUAL input_after)
  message(FATAL_ERROR "export -o R/metrics.jsonl changed its own input")
endif()
# Through a symbolic link: the link stays a link, and the file it names gets the export.
file(WRITE ${WORK}/real.csv "old")
file(CREATE_LINK ${WORK}/real.csv ${WORK}/link.csv SYMBOLIC)
expect_fail(0 "" export --run ${WORK}/r --format csv -o ${WORK}/link.csv)
if(NOT IS_SYMLINK ${WORK}/link.csv)
  message(FATAL_ERROR "export replaced the symbolic link with a regular file")
endif()
file(READ ${WORK}/real.csv exported)
if(exported STREQUAL "old")
  message(FATAL_ERROR "export through a symbolic link did not write the file it names")
endif()

# 1. --overwrite replaces an earlier run only once the new one has started: a new run refused
# for its input leaves the old one whole (metrics and every checkpoint).
expect_fail(0 "" run ${small} --set checkpoint.every=3 --out ${WORK}/keep)
file(READ ${WORK}/keep/metrics.jsonl kept)
file(WRITE ${WORK}/bad.csv "x,y,label\n1,2,0\n3,oops,1\n")
expect_fail(2 "bad.csv" run ${small} --set data.name=csv --set data.path=${WORK}/bad.csv --out ${WORK}/keep --overwrite)
expect_fail(2 "train.inject_param" run ${small} --set train.inject_param=nope --out ${WORK}/keep --overwrite)
expect_fail(2 "needs" run --preset recipe --set model.width=200000 --out ${WORK}/keep --overwrite)
file(READ ${WORK}/keep/metrics.jsonl still)
if(NOT kept STREQUAL still OR NOT EXISTS ${WORK}/keep/checkpoints/step-6.zip OR NOT EXISTS ${WORK}/keep/summary.json)
  message(FATAL_ERROR "a refused --overwrite run removed the earlier run's files")
endif()
# A preset with variants: a later variant's refusal keeps every earlier variant's files too.
expect_fail(0 "" run --preset underflow --set train.steps=3 --quiet --out ${WORK}/variants)
file(READ ${WORK}/variants/fp32/metrics.jsonl v_before)
expect_fail(2 "train.inject_param" run --preset underflow --set train.steps=3 --set train.inject_param=nope --quiet --out ${WORK}/variants --overwrite)
file(READ ${WORK}/variants/fp32/metrics.jsonl v_after)
if(NOT v_before STREQUAL v_after)
  message(FATAL_ERROR "a refused --overwrite of a preset's variants replaced the first variant")
endif()
expect_fail(0 "" run ${small} --set train.steps=2 --out ${WORK}/keep --overwrite)
if(EXISTS ${WORK}/keep/checkpoints/step-6.zip)
  message(FATAL_ERROR "--overwrite left the earlier run's checkpoint beside the new run")
endif()

# 4. String values are capped (a 300 MB name took 2.8 GB before anything refused it), config
# files too, and a refused run leaves no empty folder of its own behind.
string(REPEAT "n" 5000 longname)
file(WRITE ${WORK}/longname.json "{\"name\": \"${longname}\"}")
expect_fail(2 "name: expected at most 4096 bytes" run ${WORK}/longname.json ${small} --out ${WORK}/fresh/run)
if(EXISTS ${WORK}/fresh)
  message(FATAL_ERROR "a refused run left its empty output folder behind")
endif()
expect_fail(2 "bad.csv" run ${small} --set data.name=csv --set data.path=${WORK}/bad.csv --out ${WORK}/fresh2/run)
if(EXISTS ${WORK}/fresh2)
  message(FATAL_ERROR "a run refused for its data left its empty output folder behind")
endif()

# 1. Two runs started at once: with one --out, one of them runs and the other is refused (both
# said "outputs in DIR" and one run's files were gone); with the default folder, each gets its
# own (ampstudio-run and ampstudio-run-2).
set(long --preset spirals --set train.steps=800 --set train.threads=1 --quiet)
# Both started by one shell, side by side; prints "rc1 rc2".
function(two_at_once dir)
  execute_process(COMMAND sh -c "\"$0\" \"$@\" > /dev/null & p=$!; \"$0\" \"$@\" > /dev/null; b=$?; wait $p; echo \"$? $b\""
                          ${CLI} run ${ARGN}
                  WORKING_DIRECTORY ${dir} TIMEOUT 120 OUTPUT_VARIABLE rcs ERROR_VARIABLE err)
  string(STRIP "${rcs}" rcs)
  set(rcs "${rcs}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()
two_at_once(${WORK} ${long} --out ${WORK}/both)
if(NOT (rcs STREQUAL "0 2" OR rcs STREQUAL "2 0") OR NOT err MATCHES "another run is writing there")
  message(FATAL_ERROR "two runs into one --out: expected one to run and one refused, got ${rcs}: ${err}")
endif()
file(MAKE_DIRECTORY ${WORK}/defaults)
two_at_once(${WORK}/defaults ${long})
if(NOT rcs STREQUAL "0 0" OR NOT EXISTS ${WORK}/defaults/ampstudio-run/summary.json
   OR NOT EXISTS ${WORK}/defaults/ampstudio-run-2/summary.json)
  message(FATAL_ERROR "two runs with the default folder: expected two folders, got ${rcs}: ${err}")
endif()
if(EXISTS ${WORK}/defaults/ampstudio-run/.ampstudio.lock)
  message(FATAL_ERROR "a finished run left its claim file behind")
endif()

# 1. Resume: a checkpoint that ends after the new train.steps runs nothing and must not cut the
# run's files; a cut metrics.jsonl is restored from the checkpoint (it holds the metrics up to its
# step) instead of leaving a gap that summary.json claims; another run's checkpoint copied into
# the folder is refused instead of mixing the two runs.
set(twelve --preset spirals --set train.steps=12 --set checkpoint.every=4 --quiet)
expect_fail(0 "" run ${twelve} --out ${WORK}/res)
file(READ ${WORK}/res/metrics.jsonl res_before)
file(READ ${WORK}/res/histograms.jsonl hist_before)
expect_fail(2 "nothing to run" run --resume ${WORK}/res/checkpoints/step-8.zip --set train.steps=5 --quiet)
file(READ ${WORK}/res/metrics.jsonl res_after)
file(READ ${WORK}/res/histograms.jsonl hist_after)
if(NOT res_before STREQUAL res_after OR NOT hist_before STREQUAL hist_after)
  message(FATAL_ERROR "a resume with nothing to run cut the run's metrics or histograms")
endif()
file(STRINGS ${WORK}/res/metrics.jsonl lines)
list(SUBLIST lines 0 3 first3)
string(JOIN "\n" cut ${first3})
file(WRITE ${WORK}/res/metrics.jsonl "${cut}\n")
expect_fail(0 "" run --resume ${WORK}/res/checkpoints/step-8.zip --quiet)
file(STRINGS ${WORK}/res/metrics.jsonl lines)
set(expected 1)
foreach(line IN LISTS lines)
  string(JSON step GET "${line}" step)
  if(NOT step EQUAL expected)
    message(FATAL_ERROR "resume after a cut metrics.jsonl: step ${step} where ${expected} belongs")
  endif()
  math(EXPR expected "${expected} + 1")
endforeach()
if(NOT expected EQUAL 13)
  message(FATAL_ERROR "resume after a cut metrics.jsonl: expected steps 1..12, got up to ${expected}")
endif()
expect_fail(0 "" run ${twelve} --set seed=9 --out ${WORK}/other)
file(COPY_FILE ${WORK}/other/checkpoints/step-8.zip ${WORK}/res/checkpoints/copied.zip)
file(READ ${WORK}/res/metrics.jsonl res_before)
expect_fail(2 "is not the checkpoint of the run in" run --resume ${WORK}/res/checkpoints/copied.zip --quiet)
file(READ ${WORK}/res/metrics.jsonl res_after)
if(NOT res_before STREQUAL res_after)
  message(FATAL_ERROR "another run's checkpoint changed this run's metrics")
endif()

# 2. Resuming on other data of the same size (a changed file, or a relative data.path read from
# another folder) is refused: the checkpoint holds the data's fingerprint.
file(WRITE ${WORK}/a.csv "x,y,label\n0.1,0.2,0\n0.3,0.4,1\n0.5,0.6,0\n0.7,0.8,1\n0.9,0.1,0\n0.2,0.3,1\n0.4,0.5,0\n0.6,0.7,1\n0.8,0.9,0\n0.1,0.9,1\n")
expect_fail(0 "" run --preset spirals --set data.name=csv --set data.path=${WORK}/a.csv --set train.batch_size=4
            --set train.steps=6 --set checkpoint.every=3 --quiet --out ${WORK}/fp)
file(WRITE ${WORK}/a.csv "x,y,label\n0.9,0.2,0\n0.3,0.4,1\n0.5,0.6,0\n0.7,0.8,1\n0.9,0.1,0\n0.2,0.3,1\n0.4,0.5,0\n0.6,0.7,1\n0.8,0.9,0\n0.1,0.9,1\n")
expect_fail(2 "trained on other data" run --resume ${WORK}/fp/checkpoints/step-3.zip --quiet)

# Issue 40, part 3: a TensorBoard export into the log folder it reads (or a folder below it) is
# refused in one line and the log stays as it was (it exited 0 and added event files that the
# next import read as more runs).
expect_fail(0 "" run ${small} --out ${WORK}/tbsrc)
expect_fail(0 "" export --run ${WORK}/tbsrc --format tensorboard --output ${WORK}/tblog)
function(folder_digest dir var)
  file(GLOB_RECURSE files LIST_DIRECTORIES true RELATIVE ${dir} ${dir}/*)
  list(SORT files)
  set(all "")
  foreach(f IN LISTS files)
    if(IS_DIRECTORY ${dir}/${f})
      string(APPEND all "${f}/\n")
    else()
      file(SHA256 ${dir}/${f} h)
      string(APPEND all "${f} ${h}\n")
    endif()
  endforeach()
  set(${var} "${all}" PARENT_SCOPE)
endfunction()
folder_digest(${WORK}/tblog tb_before)
foreach(out ${WORK}/tblog ${WORK}/tblog/sub ${WORK}/tblog/./x/..)
  expect_fail(2 "is inside the input" export --run ${WORK}/tblog --format tensorboard --output ${out})
endforeach()
folder_digest(${WORK}/tblog tb_after)
if(NOT tb_before STREQUAL tb_after OR tb_before STREQUAL "")
  message(FATAL_ERROR "export into its own TensorBoard log changed it:\n${tb_before}\n---\n${tb_after}")
endif()
