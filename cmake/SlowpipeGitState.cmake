# Run at every build (cmake -P, from the slowpipe_git_state target): writes the
# commit and whether the working tree differs from it into build_info.cpp,
# touching the file only when that changed, so a rebuild recompiles one file.
# Inputs: SOURCE_DIR, OUTPUT.
execute_process(
  COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE commit
  OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE commit_rc
  ERROR_QUIET)
set(dirty "false")
if(NOT commit_rc EQUAL 0 OR NOT commit)
  set(commit "unknown")
  set(dirty "unknown")
else()
  # Tracked files that differ from the commit (untracked files do not count).
  execute_process(
    COMMAND git status --porcelain --untracked-files=no
    WORKING_DIRECTORY ${SOURCE_DIR}
    OUTPUT_VARIABLE changes
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET)
  if(changes)
    set(dirty "true")
  endif()
endif()
set(text "// Generated at build time by cmake/SlowpipeGitState.cmake.
#include \"common/version.h\"

namespace slowpipe {
const char* git_commit() { return \"${commit}\"; }
const char* git_dirty() { return \"${dirty}\"; }
}  // namespace slowpipe
")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUTPUT} "${text}")
endif()
