# Third-party dependencies, all from Debian packages (scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(Torch REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C CXX)
find_package(Boost REQUIRED COMPONENTS program_options)
find_package(fmt REQUIRED)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3 REQUIRED)

# Torch's exported flags leak into every consumer; wrap them in one target.
add_library(slowpipe_torch INTERFACE)
target_link_libraries(slowpipe_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(slowpipe_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})

add_library(slowpipe_hdf5 INTERFACE)
target_include_directories(slowpipe_hdf5 SYSTEM INTERFACE ${HDF5_INCLUDE_DIRS})
target_link_libraries(slowpipe_hdf5 INTERFACE ${HDF5_CXX_LIBRARIES} ${HDF5_LIBRARIES})
target_compile_definitions(slowpipe_hdf5 INTERFACE ${HDF5_DEFINITIONS})

# slowpipe_torch_pch(target): precompile the heavy torch headers once per target.
function(slowpipe_torch_pch target)
  if(SLOWPIPE_PCH)
    target_precompile_headers(${target} PRIVATE <torch/torch.h>)
  endif()
endfunction()

# slowpipe_warnings(target)
function(slowpipe_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()
