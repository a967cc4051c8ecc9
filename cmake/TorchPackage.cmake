# LibTorch from a Python torch package (TESSERA_TORCH_PACKAGE_DIR, the
# folder `import torch` loads), linked by path. A GPU node's PyTorch wheel
# carries LibTorch's headers and libraries; its CMake package also looks for
# a whole CUDA toolkit (cuDNN and NVTX headers), which the proxy does not
# compile against. Defines TORCH_LIBRARIES like find_package(Torch).
set(_dir "${TESSERA_TORCH_PACKAGE_DIR}")
find_package(Python3 COMPONENTS Interpreter)
if(NOT EXISTS "${_dir}/include/torch/script.h")
  message(FATAL_ERROR "TESSERA_TORCH_PACKAGE_DIR=${_dir}: no include/torch/script.h "
                      "(give the folder of the torch Python package)")
endif()
find_library(TESSERA_TORCH_LIB torch PATHS "${_dir}/lib" NO_DEFAULT_PATH REQUIRED)
find_library(TESSERA_TORCH_CPU_LIB torch_cpu PATHS "${_dir}/lib" NO_DEFAULT_PATH REQUIRED)
find_library(TESSERA_C10_LIB c10 PATHS "${_dir}/lib" NO_DEFAULT_PATH REQUIRED)
find_library(TESSERA_TORCH_CUDA_LIB torch_cuda PATHS "${_dir}/lib" NO_DEFAULT_PATH)

add_library(tessera_torch_package INTERFACE)
target_include_directories(tessera_torch_package SYSTEM INTERFACE
  "${_dir}/include" "${_dir}/include/torch/csrc/api/include")
# The package's C++ ABI (wheels since PyTorch 2.7 use the new one).
execute_process(
  COMMAND "${Python3_EXECUTABLE}" -c
          "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
  OUTPUT_VARIABLE _abi OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
if(_rc EQUAL 0 AND _abi MATCHES "^[01]$")
  target_compile_definitions(tessera_torch_package INTERFACE
    _GLIBCXX_USE_CXX11_ABI=${_abi})
endif()
if(TESSERA_TORCH_CUDA_LIB)
  # Nothing references libtorch_cuda's symbols; its static initializers
  # register the CUDA backend, so it must stay linked.
  target_link_libraries(tessera_torch_package INTERFACE
    "-Wl,--no-as-needed" "${TESSERA_TORCH_CUDA_LIB}" "-Wl,--as-needed")
endif()
target_link_libraries(tessera_torch_package INTERFACE
  "${TESSERA_TORCH_LIB}" "${TESSERA_TORCH_CPU_LIB}" "${TESSERA_C10_LIB}")
set(TORCH_LIBRARIES tessera_torch_package)
message(STATUS "LibTorch from ${_dir} (CUDA: ${TESSERA_TORCH_CUDA_LIB})")
