# Finds the CUDA toolkit for the CUDA backend (see AMP_ENABLE_CUDA) and enables the CUDA language.
# Sets AMP_HAVE_CUDA. Never links the driver library (libcuda): the runtime loads it at run time,
# so the programs start on machines without a GPU or driver and report why no device is usable.
set(AMP_HAVE_CUDA OFF)
string(TOUPPER "${AMP_ENABLE_CUDA}" _amp_cuda_mode)
if(_amp_cuda_mode MATCHES "^(OFF|FALSE|0|NO|N|IGNORE|NOTFOUND|.*-NOTFOUND)$")
  message(STATUS "CUDA backend: off (AMP_ENABLE_CUDA=${AMP_ENABLE_CUDA})")
  return()
endif()
set(_amp_cuda_required OFF)
if(NOT _amp_cuda_mode STREQUAL "AUTO")
  set(_amp_cuda_required ON)
endif()

# An explicit list, Turing through Hopper (sm_90), so a build without a GPU is the same everywhere
# (no "native": it fails without a GPU). Override with -DCMAKE_CUDA_ARCHITECTURES=90 to iterate.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 75 80 86 89 90)
endif()
include(CheckLanguage)
check_language(CUDA)
find_package(CUDAToolkit QUIET)
if(NOT CMAKE_CUDA_COMPILER OR NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cublasLt
   OR NOT TARGET CUDA::cublas)
  set(_amp_why "nvcc, cudart or cuBLAS/cuBLASLt not found (install NVIDIA's CUDA toolkit, or point CUDAToolkit_ROOT at it)")
  if(_amp_cuda_required)
    message(FATAL_ERROR "AMP_ENABLE_CUDA=${AMP_ENABLE_CUDA}: ${_amp_why}")
  endif()
  message(STATUS "CUDA backend: not built: ${_amp_why}")
  return()
endif()

# The shared runtime: the default static one would put two runtimes on the link line.
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
enable_language(CUDA)
# The .cu files are C++17 (set on the target in kernels/CMakeLists.txt).
set(AMP_HAVE_CUDA ON)
# The device list (engine/backend/cuda_devices.cpp) marks a GPU this build has no code for as
# unusable, with the rebuild to do: it needs the architectures actually built.
# Set on that one file (deferred until engine/ has been processed), so a changed list rebuilds
# nothing else.
string(REPLACE ";" " " _amp_cuda_archs_text "${CMAKE_CUDA_ARCHITECTURES}")
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL set_source_files_properties
               ${PROJECT_SOURCE_DIR}/engine/backend/cuda_devices.cpp
               DIRECTORY ${PROJECT_SOURCE_DIR}/engine
               PROPERTIES COMPILE_DEFINITIONS "AMP_CUDA_ARCHITECTURES=\"${_amp_cuda_archs_text}\"")
message(STATUS "CUDA backend: on (CUDA ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
