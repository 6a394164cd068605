# The loader's search order for slowpipe-torch (docs/cli-startup.md, "The
# loader's search order").
#   SLOWPIPE_LINK_ORDER  ON (default): slowpipe-torch names the libraries of
#                        cmake/link_order.txt first, so that they come first
#                        in the loader's global search list.
# Debian's libtorch pulls in about 280 shared libraries (OpenCV, GDAL, FFmpeg,
# ...). The loader resolves every symbol reference by walking that list from
# its start; a library deep in it that binds thousands of its own symbols
# costs a walk past a hundred libraries each time. Naming the busiest libraries
# first cuts the walks (14.4 M library look-ups to about 4 M) and a fifth of
# slowpipe-torch's start-up. Nothing else changes: the same libraries load, and
# BLAS, LAPACK, OpenMP and the C runtime keep their places (the list leaves
# them out), so every call binds where it did; test_link_order checks that
# against a binary linked without the list.
# Only libraries that libtorch already loads are named (ldd of libtorch at
# configure time), so a list made on another system does no harm: the rest are
# skipped. Off for sanitizer builds (their runtime must come first).
option(SLOWPIPE_LINK_ORDER "Name libtorch's busiest dependencies first in slowpipe-torch (start-up)" ON)

# slowpipe_link_order(target): adds the ordered libraries to `target`'s link line.
function(slowpipe_link_order target)
  if(NOT SLOWPIPE_LINK_ORDER OR SLOWPIPE_SANITIZE OR SLOWPIPE_FUZZ OR NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
    return()
  endif()
  find_program(SLOWPIPE_LDD ldd)
  if(NOT SLOWPIPE_LDD OR NOT TORCH_LIBRARY OR NOT EXISTS ${PROJECT_SOURCE_DIR}/cmake/link_order.txt)
    return()
  endif()
  execute_process(COMMAND ${SLOWPIPE_LDD} ${TORCH_LIBRARY} OUTPUT_VARIABLE closure
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0)
    message(STATUS "slowpipe: ldd ${TORCH_LIBRARY} failed; slowpipe-torch keeps the default library order")
    return()
  endif()
  # "\tsoname => /path (0x...)" lines: the libraries libtorch loads.
  string(REGEX MATCHALL "[^\n\t ]+ => /[^\n ]+" pairs "${closure}")
  foreach(pair IN LISTS pairs)
    string(REGEX REPLACE " => .*" "" soname "${pair}")
    string(REGEX REPLACE ".* => " "" path "${pair}")
    set(where_${soname} ${path})
  endforeach()
  # First the libraries whose order decides which copy of a C symbol a call
  # binds to, in the order a default link gives them: libm before libc (they
  # share frexp, ldexp, ...), libtorch, the C++ runtime, then BLAS, LAPACK,
  # OpenMP and the collective libraries (gloo, tensorpipe) as libtorch loads
  # them (ldd's order). Then the busiest of the rest.
  set(sonames "")
  foreach(name "libm[.]so" "libtorch_cpu[.]" "libc10[.]" "libtorch[.]so" "libstdc[+][+]" "libgcc_s[.]"
          "libc[.]so" "lib(blas|cblas|lapack|lapacke|openblas|blis|mkl|atlas|flexiblas|gomp|omp|iomp|tbb|gloo|tensorpipe)")
    foreach(pair IN LISTS pairs)  # ldd's order within each pattern
      if(pair MATCHES "^${name}")
        string(REGEX REPLACE " => .*" "" soname "${pair}")
        list(APPEND sonames ${soname})
      endif()
    endforeach()
  endforeach()
  file(STRINGS ${PROJECT_SOURCE_DIR}/cmake/link_order.txt lines REGEX "^[^#]")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE " .*" "" soname "${line}")
    list(APPEND sonames ${soname})
  endforeach()
  list(REMOVE_DUPLICATES sonames)
  set(paths "")
  foreach(soname IN LISTS sonames)
    if(DEFINED where_${soname})
      list(APPEND paths ${where_${soname}})
    endif()
  endforeach()
  list(LENGTH paths n)
  if(n EQUAL 0)
    return()
  endif()
  target_link_options(${target} PRIVATE "LINKER:--push-state,--no-as-needed" ${paths} "LINKER:--pop-state")
  set_property(GLOBAL PROPERTY slowpipe_link_order_applied ON)  # test_link_order checks it
  message(STATUS "slowpipe: ${target} names ${n} of libtorch's libraries first (cmake/link_order.txt)")
endfunction()
