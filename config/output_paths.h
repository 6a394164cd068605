// Checks of the paths slowpipe writes, before anything is written, so a bad
// one is refused with one plain line (UsageError, exit 2) instead of the text
// of HDF5, libtorch or std::filesystem (/dev/full, /proc/..., a file where a
// folder is needed). `train`'s outputs (run.out, run.save: the preflight) and
// `retime --out` share them. Each decides by the nearest existing folder on
// the way: the missing ones would be created, so it must take new files, which
// is tested by creating (and removing) one, the one test that holds for root
// and for read-only mounts (/proc, /sys).
#pragma once

#include <string>

namespace slowpipe::config {

// `path` is a file slowpipe will write (the run log, a checkpoint): where it
// exists it is a regular, writable file, and its folder exists (or can be
// created) and takes new files. Messages start "KEY = PATH".
void check_writable_target(const std::string& key, const std::string& path);

// `dir` is a folder slowpipe will write files into (retime --out): where it
// exists it is a folder, else it can be created; either way it takes new
// files. Messages start "NAME DIR" (e.g. "--out /dev/full is a character
// device, not a folder").
void check_writable_folder(const std::string& name, const std::string& dir);

}  // namespace slowpipe::config
