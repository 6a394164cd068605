# Third-party dependencies, all from Debian packages (scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(Torch REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C CXX)
find_package(Boost REQUIRED COMPONENTS program_options)
find_package(fmt REQUIRED)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3 REQUIRED)

# A libtorch that ships its own fmt headers (the CUDA builds of pip's torch do)
# puts them ahead of the system's on every torch target's include path, so the
# code compiles against that fmt while linking the system's library, whose
# version differs. Compiling fmt header-only keeps each object self-consistent.
get_target_property(slowpipe_fmt_include fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
foreach(dir IN LISTS TORCH_INCLUDE_DIRS)
  if(EXISTS "${dir}/fmt/format.h" AND NOT dir IN_LIST slowpipe_fmt_include)
    set_property(TARGET fmt::fmt APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
    message(STATUS "slowpipe: libtorch ships fmt headers (${dir}); fmt is compiled header-only")
    break()
  endif()
endforeach()

# Torch's exported flags leak into every consumer; wrap them in one target.
add_library(slowpipe_torch INTERFACE)
target_link_libraries(slowpipe_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(slowpipe_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
# c10's header-only types (Half, BFloat16) for plain C++ libraries: the include
# paths alone, no libtorch linked (slowpipe::codecs).
add_library(slowpipe_c10_headers INTERFACE)
target_include_directories(slowpipe_c10_headers SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})

add_library(slowpipe_hdf5 INTERFACE)
target_include_directories(slowpipe_hdf5 SYSTEM INTERFACE ${HDF5_INCLUDE_DIRS})
target_link_libraries(slowpipe_hdf5 INTERFACE ${HDF5_CXX_LIBRARIES} ${HDF5_LIBRARIES})
target_compile_definitions(slowpipe_hdf5 INTERFACE ${HDF5_DEFINITIONS})

# Precompiled headers. Two shared ones, each built once and reused by every
# target that picks it (REUSE_FROM), instead of one copy per target:
#   torch  <torch/torch.h>: for targets whose sources use torch::nn, optim or
#          serialize (models, the engine): 18 s -> 10 s per source
#   aten   <ATen/ATen.h>: for tensor-only code (codecs): 8 s -> 4 s per source;
#          the torch one would make these slower (loading it costs ~1 GB)
# Sources that reach neither (plain C++ in a torch target, e.g. the spec parser
# or the bit-packing kernels) skip the header: forcing it on them turned 0.5 s
# compiles into 4 s. Which sources reach torch is found by following their
# quoted includes inside the repository (slowpipe_reaches_tensor_headers).
if(SLOWPIPE_PCH)
  foreach(kind torch aten)
    add_library(slowpipe_pch_${kind} OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cpp)
    target_link_libraries(slowpipe_pch_${kind} PRIVATE slowpipe_torch)
  endforeach()
  target_precompile_headers(slowpipe_pch_torch PRIVATE <torch/torch.h>)
  target_precompile_headers(slowpipe_pch_aten PRIVATE <ATen/ATen.h>)
endif()

# slowpipe_reaches_tensor_headers(file out): TRUE when `file` includes a torch,
# ATen or c10 header, directly or through the repository's own headers (a
# quoted include is looked up beside the includer, then from the top).
function(slowpipe_reaches_tensor_headers file out)
  get_property(known GLOBAL PROPERTY "slowpipe_tensor_${file}" SET)
  if(known)
    get_property(result GLOBAL PROPERTY "slowpipe_tensor_${file}")
    set(${out} ${result} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY "slowpipe_tensor_${file}" FALSE)  # include cycles end here
  set(result FALSE)
  if(EXISTS ${file})
    file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include")
    foreach(line IN LISTS lines)
      if(line MATCHES "<(torch|ATen|c10)/")
        set(result TRUE)
        break()
      elseif(line MATCHES "\"([^\"]+)\"")
        get_filename_component(here ${file} DIRECTORY)
        set(included ${PROJECT_SOURCE_DIR}/${CMAKE_MATCH_1})
        if(EXISTS ${here}/${CMAKE_MATCH_1})  # beside the includer ("engine_fixture.h")
          set(included ${here}/${CMAKE_MATCH_1})
        endif()
        slowpipe_reaches_tensor_headers(${included} inner)
        if(inner)
          set(result TRUE)
          break()
        endif()
      endif()
    endforeach()
  endif()
  set_property(GLOBAL PROPERTY "slowpipe_tensor_${file}" ${result})
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# slowpipe_torch_pch(target [aten]): reuse the shared torch (default) or aten
# precompiled header for the target's sources that reach tensor headers.
# Without the precompiled header (SLOWPIPE_PCH=OFF, as `make lint` builds), a
# test source that includes catch.hpp before libtorch would get c10's
# glog-style CHECK(cond) in place of Catch2's CHECK (a failure would abort,
# passes would not count); such sources of test targets get c10's logging
# header forced first, so Catch2's definition stays in force as with the
# precompiled header.
# With SLOWPIPE_UNITY, the target's sources that reach tensor headers are
# compiled in batches of SLOWPIPE_UNITY_BATCH (one translation unit each): a
# libtorch source spends most of its compile time instantiating and generating
# the same inline torch and Catch2 code, once per unit (docs/performance.md,
# "Build time"). The sources that do not reach them compile one by one.
function(slowpipe_torch_pch target)
  set(kind torch)
  if(ARGC GREATER 1)
    set(kind ${ARGV1})
  endif()
  if(SLOWPIPE_PCH)
    target_precompile_headers(${target} REUSE_FROM slowpipe_pch_${kind})
  endif()
  # (SLOWPIPE_UNITY turns unity builds on for every target: CMakeLists.txt.)
  if(NOT SLOWPIPE_UNITY AND NOT SLOWPIPE_PCH AND NOT target MATCHES "^test_")
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.cpp$")
      continue()
    endif()
    get_filename_component(path ${source} ABSOLUTE BASE_DIR ${dir})
    slowpipe_reaches_tensor_headers(${path} tensor)
    if(SLOWPIPE_UNITY AND NOT tensor)
      set_source_files_properties(${source} TARGET_DIRECTORY ${target}
                                  PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
    if(SLOWPIPE_PCH AND NOT tensor)
      set_source_files_properties(${source} TARGET_DIRECTORY ${target}
                                  PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    elseif(NOT SLOWPIPE_PCH AND tensor AND target MATCHES "^test_")
      set_source_files_properties(${source} TARGET_DIRECTORY ${target}
                                  PROPERTIES COMPILE_OPTIONS "-include;c10/util/Logging.h")
    endif()
  endforeach()
endfunction()

# slowpipe_warnings(target): every target, tests and benchmarks included.
# SLOWPIPE_WERROR (CI) turns them into errors. -Winvalid-pch: a precompiled
# header that GCC refuses would silently cost its full parse.
function(slowpipe_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Winvalid-pch)
  if(SLOWPIPE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
