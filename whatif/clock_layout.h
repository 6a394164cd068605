// The parallel layout of a published row (`slowpipe clock --layout`;
// docs/netmodel.md, "Round 5"): tensor-, pipeline- and data-parallel degrees,
// how data-parallel replicas share gradients and state, and the links that
// carry the exchanges. A row with a layout is timed as one GPU's share of a
// tensor-parallel group on one pipeline stage, with the exchanges a step
// needs and by fixed rules how much of them its compute hides:
//
// - tensor parallel (t > 1): four all-reduces of a micro-batch's activations
//   per layer (two in the forward, two in the backward; two more under full
//   recompute), each 2 (t - 1) / t of the activation's bytes over the link,
//   on the critical path (nothing hides them);
// - pipeline parallel (p > 1): the stage with the most layers and the LM
//   head, m micro-batches in m + (p - 1) / v slots (1F1B's bubble; v
//   virtual stages a GPU under the interleaved schedule, 1 otherwise);
// - data parallel (d = GPUs / (t p) > 1): ddp, zero1 and zero2 move
//   2 (d - 1) / d of the stage's gradients once a step (an all-reduce, or a
//   reduce-scatter and an all-gather), hidden behind the backward of the
//   step's last micro-batch; zero3 (FSDP) gathers the parameters in the
//   forward and the backward (and in a recompute) and reduce-scatters the
//   gradients every micro-batch, (d - 1) / d of them each, hidden behind
//   that micro-batch's compute; gradients and gathered parameters travel in
//   the run's activation bytes (2, or 4 for fp32);
// - offload (round 6): `optimizer` runs the update on the host, 0.43e9
//   parameters a second a node (calibrated on seen rows), sends the
//   gradients to the host behind the last micro-batch's backward and the
//   16-bit parameters back after the update; `params` also keeps the parameters on the host
//   and copies them in for every pass of every micro-batch (forward,
//   backward, recompute), hidden behind that micro-batch's compute.
//
// Links (per GPU and direction): NVLink inside a node, the datasheet's
// figure; between nodes the row's printed figure, else the reference design
// of the generation (clock_link_rates), times the group's members in a node
// (a collective between nodes runs one ring per NIC, as NCCL does), at most
// NVLink's; to the host the GPU's PCIe link. Leaves out: collective latencies,
// sequence parallelism, point-to-point activations between stages, the
// overlap of tensor-parallel exchanges, delayed (overlapped) host updates.
#pragma once

#include <string>
#include <vector>

namespace slowpipe::whatif {

struct PublishedRow;

struct RowLayout {
  int tp = 1, pp = 1, gpus_per_node = 8;
  std::string dp_mode = "none";       // none, ddp, zero1, zero2, zero3
  double internode_gbps_per_gpu = 0;  // as printed; 0: the generation's default
  int vpp = 1;                        // virtual pipeline stages a GPU (interleaved)
  std::string offload = "none";       // none, optimizer, params (to the host)
};

// Links of a GPU label's chip, in bytes per second and direction per GPU.
struct LinkRates {
  double nvlink_Bps = 0;     // inside a node (PCIe 4.0 x16 for the PCIe cards)
  double internode_Bps = 0;  // the generation's default between nodes
  double host_link_Bps = 0;  // GPU <-> host: the generation's PCIe x16
};
LinkRates clock_link_rates(const std::string& gpu);

// A one-device step's compute by part: forward and backward ops (over all
// its micro-batches), the rest (the optimizer).
struct StepParts {
  double forward_s = 0, backward_s = 0, other_s = 0;
};

// One GPU's step of a row with a layout (the file comment): `parts` of its
// share of one stage over `micro` micro-batches, `stage_params` the
// parameters it holds.
double layout_step_s(const PublishedRow& row, const StepParts& parts, int micro,
                     double stage_params);

// Sets the layout of every row of `rows` that layout.csv (columns id, tp, pp,
// dp_mode, gpus_per_node, internode_gbps_per_gpu, and optionally vpp and
// offload, an empty offload being none; others ignored) lists;
// returns how many. Ids the file lists that are not rows are ignored.
// DataError naming the file and line for a malformed entry (vpp > 1 needs
// pp > 1), and naming the row when t p does not divide its GPUs.
int apply_layouts(const std::string& path, std::vector<PublishedRow>& rows);

}  // namespace slowpipe::whatif
