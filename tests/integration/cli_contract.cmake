# The CLI's contract: bad input gives one line naming the problem and exit code 2; a run writes
# metrics.jsonl with the documented keys and a summary; a diverging run exits 1, not a crash.
# Usage: cmake -DCLI=path/to/ampstudio-cli -DWORK=dir -P cli_contract.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

include(${CMAKE_CURRENT_LIST_DIR}/cli_expect.cmake)

expect_fail(2 "unknown preset 'nope'" run --preset nope --out ${WORK}/x)
expect_fail(2 "unknown config key 'scaler.grow'" run --preset spirals --set scaler.grow=2 --out ${WORK}/x)
expect_fail(2 "scaler.growth_interval: expected an integer, got 'x'" run --preset spirals --set scaler.growth_interval=x --out ${WORK}/x)
expect_fail(2 "train.batch_size must be > 0" run --preset spirals --set train.batch_size=0 --out ${WORK}/x)
expect_fail(2 "model.width must be > 0" run --preset recipe --set model.width=-3 --out ${WORK}/x)
expect_fail(2 "optimizer.lr must be a finite number" run --preset spirals --set optimizer.lr=nan --out ${WORK}/x)
expect_fail(2 "optimizer.lr must be a finite number" run --preset spirals --set optimizer.lr=inf --out ${WORK}/x)
expect_fail(2 "${WORK}/missing.json: cannot open" run ${WORK}/missing.json --out ${WORK}/x)
file(WRITE ${WORK}/bad.json "{\"amp\": {\"mode\": 16}}")
expect_fail(2 "amp.mode: expected one of" run ${WORK}/bad.json --out ${WORK}/x)
file(WRITE ${WORK}/broken.json "{\"amp\": ")
expect_fail(2 "broken.json: not valid JSON" run ${WORK}/broken.json --out ${WORK}/x)
# A truncated data file is named in the error (the real files, with the images archive cut).
set(FM /usr/share/datasets/fashion-mnist)
if(EXISTS ${FM}/train-images-idx3-ubyte.gz)
  file(MAKE_DIRECTORY ${WORK}/fm)
  foreach(f train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
    file(COPY ${FM}/${f} DESTINATION ${WORK}/fm)
  endforeach()
  execute_process(COMMAND head -c 100000 ${FM}/train-images-idx3-ubyte.gz
                  OUTPUT_FILE ${WORK}/fm/train-images-idx3-ubyte.gz)
  expect_fail(2 "train-images-idx3-ubyte.gz" run --preset fmnist-mlp --set data.path=${WORK}/fm --out ${WORK}/x)
endif()
expect_fail(2 "unknown command" frobnicate)
expect_fail(2 "--to" convert 1.0)

# OpenMP's idle threads spin briefly (GOMP_SPINCOUNT=10000, engine/core/openmp_wait_policy.h):
# libgomp itself reports the value it read at start-up (OMP_DISPLAY_ENV=verbose), so this sees
# the setting take effect in the re-executed program, not just the variable. The user's own
# choice is left alone. Started through the dynamic loader (as installer/package_test.sh starts
# it with NVIDIA's libraries hidden) the program is not executed again, and runs: re-executing
# /proc/self/exe there ran the loader on "devices" ("cannot open shared object file").
function(expect_spin expected)
  execute_process(COMMAND env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u AMPSTUDIO_OMP_WAIT_SET
                          OMP_DISPLAY_ENV=verbose ${ARGN} devices
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT "${out}${err}" MATCHES "GOMP_SPINCOUNT = '${expected}'"
     OR NOT "${out}" MATCHES "cpu")
    message(FATAL_ERROR "expected `devices` to run with libgomp's GOMP_SPINCOUNT '${expected}' for ${ARGN} (rc ${rc}):\n${out}${err}")
  endif()
endfunction()
expect_spin(10000 ${CLI})
expect_spin(12345 env GOMP_SPINCOUNT=12345 ${CLI})
execute_process(COMMAND readelf -l ${CLI} OUTPUT_VARIABLE phdrs)
if(phdrs MATCHES "interpreter: ([^]]+)]" AND NOT SANITIZE)
  expect_spin(300000 ${CMAKE_MATCH_1} ${CLI})  # libgomp's default: not re-executed
endif()

# --set of the key a preset's variants vary means one run with that value (the recipe runs
# fp32, fp16 and bf16; "--set amp.mode=bf16" is one bf16 run, not three runs all in bf16).
execute_process(COMMAND ${CLI} run --preset recipe --set amp.mode=bf16 --set train.steps=2
                        --set model.width=32 --out ${WORK}/one
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK}/one/metrics.jsonl OR EXISTS ${WORK}/one/fp32)
  message(FATAL_ERROR "recipe with amp.mode=bf16: expected one run in ${WORK}/one (${rc}): ${err}")
endif()
file(READ ${WORK}/one/summary.json one_summary)
string(JSON one_mode GET "${one_summary}" mode)
if(NOT one_mode STREQUAL "bf16")
  message(FATAL_ERROR "recipe with amp.mode=bf16 ran mode '${one_mode}'")
endif()

# A preset's variants train in turns (issue 38: engine/train/speed_turns.h), so their speeds
# share the machine's load: 10 steps are 10 rounds of 1 step, the progress lines (one per step
# here) come in turn, and the speed against fp32 is compared round by round (7 rounds: the first
# 3 steps are warm-up).
execute_process(COMMAND ${CLI} run --preset underflow --set train.steps=10 --set train.histogram_every=0
                        --out ${WORK}/turns
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "underflow in turns failed (${rc}): ${err}")
endif()
string(REGEX MATCHALL "\\[[a-z0-9_]+\\] step [0-9]+/10" steps_seen "${err}")
set(steps_expected)
foreach(step RANGE 1 10)
  foreach(variant fp32 fp16_noscale fp16_dynamic)
    list(APPEND steps_expected "[${variant}] step ${step}/10")
  endforeach()
endforeach()
if(NOT steps_seen STREQUAL steps_expected)
  message(FATAL_ERROR "the variants did not train in turns:\n${steps_seen}\nexpected\n${steps_expected}")
endif()
foreach(text "trained in turns, 1 step(s) a turn" "fp16_noscale" "rounds)")
  string(FIND "${out}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "run --preset underflow: '${text}' missing from its table:\n${out}")
  endif()
endforeach()
file(READ ${WORK}/turns/summary.json turns_summary)
string(JSON paired_rounds GET "${turns_summary}" runs 1 paired_speed_vs_fp32 rounds)
if(NOT paired_rounds EQUAL 7)
  message(FATAL_ERROR "paired_speed_vs_fp32: ${paired_rounds} rounds, expected 7")
endif()

# A run's outputs.
execute_process(COMMAND ${CLI} run --preset overflow --set train.steps=40 --set model.width=64
                        --inject-nonfinite 2,7 --out ${WORK}/ok
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "run failed (${rc}): ${err}")
endif()
string(FIND "${err}" "step 2: non-finite gradient in" at)
if(at EQUAL -1)
  message(FATAL_ERROR "no event line for the injected step:\n${err}")
endif()
file(STRINGS ${WORK}/ok/metrics.jsonl lines)
list(LENGTH lines n)
if(NOT n EQUAL 40)
  message(FATAL_ERROR "metrics.jsonl has ${n} lines, expected 40")
endif()
list(GET lines 1 second)
foreach(key step loss scale growth_tracker skipped grad_norm lr step_ms)
  string(JSON v ERROR_VARIABLE e GET "${second}" ${key})
  if(e)
    message(FATAL_ERROR "metrics.jsonl lacks '${key}': ${second}")
  endif()
endforeach()
string(JSON skipped GET "${second}" skipped)
string(JSON scaleAfter GET "${second}" scale_after)
if(NOT skipped STREQUAL "ON" AND NOT skipped STREQUAL "true")
  message(FATAL_ERROR "step 2 should be skipped: ${second}")
endif()
if(NOT scaleAfter EQUAL 32768)
  message(FATAL_ERROR "step 2 should back the scale off to 32768: ${second}")
endif()
foreach(f summary.json config.json events.log histograms.jsonl)
  if(NOT EXISTS ${WORK}/ok/${f})
    message(FATAL_ERROR "missing output ${f}")
  endif()
endforeach()

# A diverging run: exit 1 with the step and tensor, and its metrics kept.
# The recipe's settings without its preset: the recipe lesson runs three variants.
execute_process(COMMAND ${CLI} run --set model.name=recipe_mlp --set data.name=synthetic
                        --set optimizer.name=sgd --set amp.mode=fp32 --set model.width=64
                        --set data.batches=2 --set train.batch_size=32
                        --set optimizer.lr=1e30 --set train.steps=50 --out ${WORK}/div
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "a diverging run should exit 1, got ${rc}: ${err}")
endif()
string(FIND "${err}" "first non-finite tensor" at)
if(at EQUAL -1)
  message(FATAL_ERROR "divergence report lacks the tensor:\n${err}")
endif()
file(READ ${WORK}/div/summary.json summary)
string(JSON status GET "${summary}" status)
if(NOT status STREQUAL "diverged")
  message(FATAL_ERROR "summary status '${status}', expected diverged")
endif()

# The number-format inspector.
execute_process(COMMAND ${CLI} convert --to fp16 65520 1e-8 0.1 RESULT_VARIABLE rc OUTPUT_VARIABLE out)
foreach(needle "0x7c00" "0x0000" "0x2e66")
  string(FIND "${out}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "convert output lacks ${needle}:\n${out}")
  endif()
endforeach()
# fp8: PyTorch's casts (E4M3 saturates 465 to 448 = 0x7e; E5M2 sends 61440 to inf = 0x7c), the
# other overflow rule on request (E4M3 NaN = 0x7f), E8M0 rounds 1.5 up to 2 (0x80), fp4 rounds 5
# to the even 4 (0x6); a bad --overflow is one line, exit 2; an fp8 run prints its recipe.
foreach(case "e4m3;465;0x7e" "e5m2;61440;0x7c" "e8m0;1.5;0x80" "e2m1;5;0x06")
  list(GET case 0 fmt)
  list(GET case 1 value)
  list(GET case 2 bits)
  execute_process(COMMAND ${CLI} convert --to ${fmt} ${value} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  string(FIND "${out}" "${bits}" at)
  if(NOT rc EQUAL 0 OR at EQUAL -1)
    message(FATAL_ERROR "convert --to ${fmt} ${value}: expected ${bits} (exit ${rc}):\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${CLI} convert --to e4m3 --overflow inf_nan 465 RESULT_VARIABLE rc OUTPUT_VARIABLE out)
string(FIND "${out}" "0x7f" at)
if(at EQUAL -1)
  message(FATAL_ERROR "convert --to e4m3 --overflow inf_nan 465: expected NaN 0x7f:\n${out}")
endif()
expect_fail(2 "--overflow: expected saturate or inf_nan" convert --to e4m3 --overflow wrap 1)
expect_fail(2 "fp8.history_len" run --set amp.mode=fp8 --set fp8.history_len=0 --out ${WORK}/bad_fp8)
execute_process(COMMAND ${CLI} run --set amp.mode=fp8 --set model.width=64 --set train.steps=2
                --out ${WORK}/fp8 RESULT_VARIABLE rc ERROR_VARIABLE err)
string(FIND "${err}" "fp8 delayed (hybrid, 1024, max)" at)
if(NOT rc EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "an fp8 run: exit ${rc}, its header lacks the recipe:\n${err}")
endif()
file(READ ${WORK}/fp8/metrics.jsonl fp8metrics)
string(FIND "${fp8metrics}" "\"tensor\":\"2.x\"" at)
if(at EQUAL -1)
  message(FATAL_ERROR "an fp8 run's metrics.jsonl lacks the middle layer's figures")
endif()
# The GPU lesson without a GPU (this test hides any): its CPU-sized form runs, and says so; an
# explicit backend=cuda is refused in one line (exit 2), in `run` and in `bench`.
execute_process(COMMAND ${CLI} run --preset tensor-cores --set train.steps=2 --out ${WORK}/tc
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tensor-cores CPU-sized run failed (${rc}): ${err}")
endif()
string(FIND "${err}" "running its CPU-sized form" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the GPU lesson did not say it ran CPU-sized:\n${err}")
endif()
foreach(mode fp32 fp16 bf16)
  file(READ ${WORK}/tc/${mode}/config.json cfg)
  string(JSON width GET "${cfg}" model width)
  if(NOT width EQUAL 1024)
    message(FATAL_ERROR "tensor-cores/${mode}: width ${width}, expected the CPU-sized 1024")
  endif()
endforeach()
expect_fail(2 "backend" run --preset tensor-cores --set backend=cuda --set train.steps=2 --out ${WORK}/tc2)
expect_fail(2 "backend" bench --set backend=cuda --steps 2)

# CLI runs as an experiment the app opens (export --format ampx): a zip holding each run's files.
execute_process(COMMAND ${CLI} run --preset spirals --set train.steps=5 --out ${WORK}/forampx --quiet
                RESULT_VARIABLE rc)
execute_process(COMMAND ${CLI} export --run ${WORK}/forampx --format ampx --output ${WORK}/runs.ampx
                RESULT_VARIABLE rc2 OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT rc2 EQUAL 0 OR NOT out MATCHES "1 run\\(s\\) in")
  message(FATAL_ERROR "export --format ampx failed (${rc}, ${rc2}): ${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E tar tf ${WORK}/runs.ampx OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT listing MATCHES "manifest.json" OR NOT listing MATCHES "runs/0-[^\n]*/metrics.jsonl")
  message(FATAL_ERROR "runs.ampx is not an experiment zip (${rc}):\n${listing}")
endif()
expect_fail(2 "--format ampx needs --output" export --run ${WORK}/forampx --format ampx)

message(STATUS "CLI contract holds")
