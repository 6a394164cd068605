// Removing a folder tree with the C library alone.
//
// Why not std::filesystem::remove_all: some libtorch builds (pip's CUDA wheel of
// torch 2.11) export their own copy of parts of std::filesystem, and a program
// linked against them can have its remove_all() bound to that copy, which
// crashed (docs/cuda.md). remove_tree walks the tree with nftw(3) and calls
// unlink(2)/rmdir(2), which no C++ library can interpose.
//
// Leaves out: following symbolic links (a link is removed, never its target),
// and any retry on a tree that another process is filling at the same time.
#pragma once

#include <cstdint>
#include <string>

namespace slowpipe {

// Removes `path` and everything under it; a missing path is no error.
// Returns the number of entries removed. Throws std::runtime_error naming the
// entry that could not be removed (and why) on the first failure.
uint64_t remove_tree(const std::string& path);

}  // namespace slowpipe
