# The programs start, and run on the CPU, without NVIDIA's libraries: nothing of CUDA is in
# their ELF dependencies, the CUDA backend comes from libampstudio-cuda.so at run time, and a
# missing or broken plugin is one line in `devices` and in a refused backend=cuda, never a
# failure to start. Inputs: CLI, APP (may be empty), PLUGIN (empty in builds without CUDA), WORK.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(needed_libraries file out)
  execute_process(COMMAND readelf -d "${file}" RESULT_VARIABLE rc OUTPUT_VARIABLE dyn)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf -d ${file} failed")
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]]*\\]" needed "${dyn}")
  set(${out} "${needed}" PARENT_SCOPE)
endfunction()

foreach(program IN ITEMS "${CLI}" "${APP}")
  if(program STREQUAL "")
    continue()
  endif()
  needed_libraries("${program}" needed)
  if(needed MATCHES "libcud|libcublas|libnccl|libnvrtc")
    message(FATAL_ERROR "${program} needs a CUDA library at start: ${needed}")
  endif()
  if(NOT needed MATCHES "libdnnl")
    message(FATAL_ERROR "readelf output not understood for ${program}: ${needed}")
  endif()
endforeach()

if(NOT PLUGIN STREQUAL "")
  needed_libraries("${PLUGIN}" needed)
  foreach(lib IN ITEMS libcudart libcublasLt libcudnn)
    if(NOT needed MATCHES "${lib}")
      message(FATAL_ERROR "the plugin does not link ${lib}: ${needed}")
    endif()
  endforeach()
  # One exported function: the plugin's copy of the engine must not interpose the program's.
  execute_process(COMMAND nm -D --defined-only "${PLUGIN}" OUTPUT_VARIABLE symbols)
  string(REGEX MATCHALL " [TDBRVW] [^\n]+" exported "${symbols}")
  if(NOT exported STREQUAL " T amp_cuda_provider_v1")
    message(FATAL_ERROR "the plugin exports more than its entry point: ${exported}")
  endif()
  # The real plugin loads here (NVIDIA's libraries are installed on build machines): the reason
  # is then the driver's or the device's, never "not installed".
  execute_process(COMMAND "${CLI}" devices RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR out MATCHES "not installed|cannot load|another AMP Studio")
    message(FATAL_ERROR "devices with the built plugin (exit ${rc}):\n${out}${err}")
  endif()
endif()

function(expect_devices plugin needle)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "AMP_CUDA_PLUGIN=${plugin}" "${CLI}" devices
                  TIMEOUT 60 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "devices with AMP_CUDA_PLUGIN=${plugin} exited ${rc}:\n${err}")
  endif()
  string(FIND "${out}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "devices with AMP_CUDA_PLUGIN=${plugin} lacks '${needle}':\n${out}")
  endif()
  if(NOT out MATCHES "backend=auto uses: cpu")
    message(FATAL_ERROR "auto should fall back to the CPU:\n${out}")
  endif()
endfunction()

expect_devices("${WORK}/missing/libampstudio-cuda.so" "no usable GPU: the CUDA backend is not installed")
file(WRITE "${WORK}/broken.so" "not an ELF file\n")
expect_devices("${WORK}/broken.so" "no usable GPU: the CUDA backend cannot load: ${WORK}/broken.so")

# Training runs on the CPU under auto; backend=cuda is refused in one line that says why.
execute_process(COMMAND ${CMAKE_COMMAND} -E env "AMP_CUDA_PLUGIN=${WORK}/missing.so"
                        "${CLI}" run --preset spirals --set train.steps=3 --out "${WORK}/auto" --quiet
                TIMEOUT 120 RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS "${WORK}/auto/summary.json")
  message(FATAL_ERROR "a run under auto without the plugin failed (exit ${rc}):\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env "AMP_CUDA_PLUGIN=${WORK}/missing.so"
                        "${CLI}" run --preset spirals --set train.steps=3 --set backend=cuda --out "${WORK}/cuda"
                TIMEOUT 120 RESULT_VARIABLE rc ERROR_VARIABLE err)
string(STRIP "${err}" err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "CUDA backend is not installed" OR err MATCHES "\n")
  message(FATAL_ERROR "backend=cuda without the plugin: expected exit 2 and one line, got ${rc}:\n${err}")
endif()
