// Anchor source of the shared precompiled-header targets (cmake/SlowpipeDeps.cmake):
// CMake builds a precompiled header only for a target with at least one source.
