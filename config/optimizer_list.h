// The built-in optimizers, one line each: SLOWPIPE_OPTIMIZER(name, "description")
// is `optim.name = name` with its one-line description, and its implementation
// is sim/optimizers/<name>.cpp, which defines `sim::OptimizerEntry
// <name>_optimizer()` (sim/internal/optimizer_impl.h). No includes and no
// libtorch: config/optim_registry.cpp reads these lines for the names and
// descriptions (the option's choices, the sweeps' checks), sim/optimizer.cpp
// for the implementations. Adding an optimizer = that one file (CMake picks
// it up) + one line here (sim/README.md, "Adding an optimizer").
SLOWPIPE_OPTIMIZER(sgd, "SGD with optim.momentum (0: plain SGD) and weight decay")
SLOWPIPE_OPTIMIZER(adamw, "AdamW (optim.beta1, optim.beta2, decoupled weight decay)")
SLOWPIPE_OPTIMIZER(muon, "Muon for hidden matrices, AdamW for the rest (optim.muon_*)")
