# Records slowpipe's version and git commit for the run log's root attributes.
execute_process(
  COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  OUTPUT_VARIABLE SLOWPIPE_GIT_COMMIT
  OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET)
if(NOT SLOWPIPE_GIT_COMMIT)
  set(SLOWPIPE_GIT_COMMIT "unknown")
endif()
configure_file(${PROJECT_SOURCE_DIR}/common/version.h.in
               ${PROJECT_BINARY_DIR}/generated/common/version.h @ONLY)
