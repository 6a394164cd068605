# What a run log records about the build (root attributes slowpipe.*):
# version, build type and compiler at configure time (version.h), and the git
# commit with a dirty flag at every build (cmake/SlowpipeGitState.cmake writes
# build_info.cpp, compiled into slowpipe::common).
if(CMAKE_BUILD_TYPE)
  set(SLOWPIPE_BUILD_TYPE "${CMAKE_BUILD_TYPE}")
else()
  set(SLOWPIPE_BUILD_TYPE "none")
endif()
set(SLOWPIPE_COMPILER "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
configure_file(${PROJECT_SOURCE_DIR}/common/version.h.in
               ${PROJECT_BINARY_DIR}/generated/common/version.h @ONLY)
set(SLOWPIPE_BUILD_INFO ${PROJECT_BINARY_DIR}/generated/common/build_info.cpp)
# Once now, so the file exists before the first build.
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                        -DOUTPUT=${SLOWPIPE_BUILD_INFO} -P ${PROJECT_SOURCE_DIR}/cmake/SlowpipeGitState.cmake)
add_custom_target(slowpipe_git_state
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${SLOWPIPE_BUILD_INFO}
          -P ${PROJECT_SOURCE_DIR}/cmake/SlowpipeGitState.cmake
  BYPRODUCTS ${SLOWPIPE_BUILD_INFO}
  COMMENT "slowpipe: git commit and dirty flag"
  VERBATIM)
