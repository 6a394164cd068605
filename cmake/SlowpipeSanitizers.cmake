# Instrumented builds. Each lives in its own build directory, never in build/:
#   SLOWPIPE_SANITIZE  AddressSanitizer + UBSan on every slowpipe target
#                      (`make sanitize`, scripts/sanitize.sh, build-sanitize/)
#   SLOWPIPE_FUZZ      the libFuzzer targets of fuzz/ and the libraries they use,
#                      with coverage, ASan and UBSan (`make fuzz`, scripts/fuzz.sh,
#                      build-fuzz/; clang only)
# Third-party libraries (libtorch, HDF5, OpenBLAS) are the system's and are not
# instrumented: ASan checks their heap blocks through its malloc interceptors, not
# their stacks or globals.
if(SLOWPIPE_SANITIZE AND SLOWPIPE_FUZZ)
  message(FATAL_ERROR "SLOWPIPE_FUZZ brings its own sanitizers; do not combine it with "
                      "SLOWPIPE_SANITIZE")
endif()

if(SLOWPIPE_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

if(SLOWPIPE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SLOWPIPE_FUZZ needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                        "configure with CC=clang CXX=clang++ (scripts/fuzz.sh does)")
  endif()
  # fuzzer-no-link: coverage feedback in every library; only the fuzz binaries
  # link libFuzzer itself (fuzz/CMakeLists.txt). -fno-sanitize-recover: a UBSan
  # report aborts, so libFuzzer saves the input as a crash.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
