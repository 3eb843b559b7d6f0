# Finds the CUDA toolkit and cuDNN 9 for the CUDA backend (see AMP_ENABLE_CUDA), enables the CUDA
# language and defines the imported target AmpCudnn::cudnn. Sets AMP_HAVE_CUDA; without either
# the backend is left out under AUTO and the configuration fails under ON. Never links the
# driver library (libcuda): the runtime loads it at run time, so the programs start on machines
# without a GPU or driver and report why no device is usable.
set(AMP_HAVE_CUDA OFF)
# Leaves the backend out, saying why (_amp_why), or stops the configuration where it was asked
# for (AMP_ENABLE_CUDA=ON). A macro, so that its return() leaves this file.
macro(_amp_cuda_not_built)
  if(_amp_cuda_required)
    message(FATAL_ERROR "AMP_ENABLE_CUDA=${AMP_ENABLE_CUDA}: ${_amp_why}")
  endif()
  message(STATUS "CUDA backend: not built: ${_amp_why}")
  return()
endmacro()
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
  _amp_cuda_not_built()
endif()

# cuDNN 9 (convolutions) has no CMake package: its header and library are looked for beside the
# toolkit's (where NVIDIA's installers and the tarball put them) and in /usr/local. The library
# found is the unversioned link name, whose SONAME (libcudnn.so.9) is what the programs then
# load: any cuDNN 9 on the loader's path serves, e.g. PyTorch's pip package nvidia-cudnn-cu13.
find_path(AMP_CUDNN_INCLUDE_DIR cudnn.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include /usr/local/include)
find_library(AMP_CUDNN_LIBRARY NAMES cudnn
             HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/local/cuda/lib)
set(_amp_cudnn_major "")
if(AMP_CUDNN_INCLUDE_DIR AND EXISTS "${AMP_CUDNN_INCLUDE_DIR}/cudnn_version.h")
  file(STRINGS "${AMP_CUDNN_INCLUDE_DIR}/cudnn_version.h" _amp_cudnn_version_lines
       REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  foreach(_part MAJOR MINOR PATCHLEVEL)
    string(REGEX MATCH "CUDNN_${_part} +([0-9]+)" _ "${_amp_cudnn_version_lines}")
    set(_amp_cudnn_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(_amp_cudnn_major "${_amp_cudnn_MAJOR}")
endif()
if(NOT AMP_CUDNN_INCLUDE_DIR OR NOT AMP_CUDNN_LIBRARY OR NOT _amp_cudnn_major STREQUAL "9")
  if(AMP_CUDNN_INCLUDE_DIR AND AMP_CUDNN_LIBRARY AND _amp_cudnn_major STREQUAL "")
    set(_amp_why "no cuDNN version in ${AMP_CUDNN_INCLUDE_DIR}/cudnn_version.h; the CUDA backend needs cuDNN 9")
  elseif(AMP_CUDNN_INCLUDE_DIR AND AMP_CUDNN_LIBRARY)
    set(_amp_why "cuDNN ${_amp_cudnn_major} found in ${AMP_CUDNN_INCLUDE_DIR}, but the CUDA backend needs cuDNN 9")
  else()
    set(_amp_why "cuDNN 9 not found (cudnn.h: ${AMP_CUDNN_INCLUDE_DIR}, libcudnn: ${AMP_CUDNN_LIBRARY}); install NVIDIA's cuDNN 9 for this CUDA, or set AMP_CUDNN_INCLUDE_DIR and AMP_CUDNN_LIBRARY")
  endif()
  _amp_cuda_not_built()
endif()
if(NOT TARGET AmpCudnn::cudnn)
  add_library(AmpCudnn::cudnn UNKNOWN IMPORTED GLOBAL)
  set_target_properties(AmpCudnn::cudnn PROPERTIES
                        IMPORTED_LOCATION "${AMP_CUDNN_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${AMP_CUDNN_INCLUDE_DIR}")
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
message(STATUS "CUDA backend: on (CUDA ${CUDAToolkit_VERSION}, cuDNN ${_amp_cudnn_MAJOR}.${_amp_cudnn_MINOR}.${_amp_cudnn_PATCHLEVEL} from ${AMP_CUDNN_LIBRARY}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
