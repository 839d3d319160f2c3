#include "space/apply_schedule.h"

#include <algorithm>

#include "util/shape.h"

namespace tlm {
namespace {

using Halide::Func;
using Halide::LoopLevel;
using Halide::RVar;
using Halide::TailStrategy;
using Halide::Var;
using Halide::VarOrRVar;

constexpr int64_t kMaxUnrolledBody = 64;  // cap on the product of unrolled trip counts

// Register-tile dims innermost first: the vector dim, then the others by ascending trip
// count (ties in dim order). The longest dim outermost keeps few operands live across the
// unrolled body: in a channel-blocked convolution with 14 output columns and 2 output
// channel blocks, the 2 weight vectors stay in registers while each input broadcast is
// used at once by both, instead of 14 broadcasts waiting for the second block (which
// spilled 28 accumulators to the stack: 0.67 -> 0.31 ms for 256->1024 at 14x14 on Intel).
std::vector<int> register_tile_order(size_t dims, int vector_dim,
                                     const std::vector<int64_t>& tile_extent) {
  std::vector<int> order = {vector_dim};
  for (size_t d = 0; d < dims; ++d)
    if (static_cast<int>(d) != vector_dim) order.push_back(static_cast<int>(d));
  std::stable_sort(order.begin() + 1, order.end(),
                   [&](int a, int b) { return tile_extent[a] < tile_extent[b]; });
  return order;
}

// The register-tile dims to unroll: innermost first while the unrolled body stays small.
// The vector dim counts its trips after vectorization; dims of one trip are skipped.
std::vector<int> unrolled_dims(const std::vector<int>& tile_dims,
                               const std::vector<int64_t>& trips_per_dim, int vector_width) {
  std::vector<int> dims;
  int64_t body = 1;
  for (size_t k = 0; k < tile_dims.size(); ++k) {
    int64_t trips = trips_per_dim[tile_dims[k]] / (k == 0 ? vector_width : 1);
    if (body * trips > kMaxUnrolledBody) break;
    body *= trips;
    if (trips > 1) dims.push_back(tile_dims[k]);
  }
  return dims;
}

// The dim and width the output stage stores along. The schedule's vector dim, except when
// that is not the buffer's innermost dim: its vector stores would then be scatters, and a
// fused residual's loads gathers (NCHW convolutions vectorized along output channels).
// The output stage then stores along dim 0, one vector per register-tile row of 4-16
// elements, reading the accumulator tile across (a gather from L1, not from memory).
// Not when the schedule asks for no vectors (width 1): LLVM vectorizes some of those
// unrolled tiles itself, which the rows broke (a channel-blocked 1x1 convolution 16->96
// at 112x112 took 4.7 ms instead of 0.38).
// ResNet-50's 64->256 1x1 convolution with its residual add at 56x56: 0.44 -> 0.39 ms
// per step in the model on Zen 5.
std::pair<int, int> store_vector(const OutputSchedule& s) {
  if (s.vector_dim == 0 || s.vector_width == 1 || s.tile2[0] < 4 || s.tile2[0] > 16)
    return {s.vector_dim, s.vector_width};
  return {0, int(s.tile2[0])};
}

// The output's loop nest after tiling, kept to place other stages inside it.
struct OutputLoops {
  LoopLevel cache_tile, register_tile;
  bool parallel = false;
};

// The cache-tile loops to fuse into the parallel loop, outermost first: the schedule's
// `parallel_loops` outermost dims, except that a guarded dim (stores past the written
// extent skipped) goes outermost. Fused inside another loop, its tile index would be the
// fused index modulo a count, which Halide cannot split into full tiles and a last one:
// every tile then ran guarded, its register tile of unknown width (GPT-2's 50257-column
// head 3.5x slower on Zen 5). Outermost, the index is a quotient, which it can. Not when
// another fused dim shifts its last tile inwards: Halide reads past that dim's extent
// when it is fused inside.
std::vector<size_t> fused_dims(size_t dims, int parallel_loops,
                               const std::vector<TailStrategy>& tails,
                               const std::vector<int64_t>& iterations) {
  std::vector<size_t> fused;
  for (size_t k = dims; k-- > dims - parallel_loops;) fused.push_back(k);
  // Outermost loops of one iteration stay out of the fusion (serial, inside the parallel
  // loop): a loop that shifts its last tile inwards is then the outermost fused one (the
  // space's ParallelLoops rule).
  while (fused.size() > 1 && iterations[fused.front()] == 1) fused.erase(fused.begin());
  auto tail_is = [&](TailStrategy tail) {
    return [&, tail](size_t d) { return tails[d] == tail; };
  };
  if (std::none_of(fused.begin(), fused.end(), tail_is(TailStrategy::ShiftInwards)))
    std::stable_partition(fused.begin(), fused.end(), tail_is(TailStrategy::GuardWithIf));
  return fused;
}

// Fuses the outer loops of `fused` (outermost first, already adjacent in that order) into
// one parallel loop, and returns it.
Var fuse_parallel(Func out, const std::vector<Var>& outer, const std::vector<size_t>& fused) {
  Var loop = outer[fused[0]];
  for (size_t k = 1; k < fused.size(); ++k) {
    Var next(loop.name() + "_" + outer[fused[k]].name());
    out.fuse(outer[fused[k]], loop, next);
    loop = next;
  }
  out.parallel(loop);
  return loop;
}

// How each tiled loop ends: a cache tile that does not divide its loop shifts its last
// tile inwards. An output written narrower than the loops its tiles divide (a dense
// layer's padded columns) guards its stores instead: the tiles stay on the packed
// weight's blocks.
std::vector<TailStrategy> tail_strategies(const OutputSchedule& s,
                                          const std::vector<int64_t>& extents,
                                          const std::vector<int64_t>& written) {
  std::vector<TailStrategy> tails(extents.size());
  for (size_t d = 0; d < extents.size(); ++d) {
    bool divides = extents[d] % s.tile1[d] == 0;
    tails[d] = divides ? TailStrategy::Auto : TailStrategy::ShiftInwards;
    if (divides && d < written.size() && written[d] < extents[d])
      tails[d] = TailStrategy::GuardWithIf;
  }
  return tails;
}

// `fused` with dim `first` outermost, where parallel_dims (apply_schedule.h) allows it.
std::vector<size_t> put_outermost(const std::vector<size_t>& fused, int first,
                                  const std::vector<TailStrategy>& tails,
                                  const std::vector<int64_t>& iterations) {
  if (fused.empty() || first < 0 || size_t(first) >= iterations.size()) return fused;
  auto f = size_t(first);
  if (iterations[f] < 2) return fused;
  for (size_t d = f + 2; d < iterations.size(); ++d)
    if (iterations[d] > 1) return fused;  // a batch: whole images per thread already
  std::vector<size_t> out{f};
  for (size_t d : fused)
    if (d != f) out.push_back(d);
  for (size_t d : out)
    if (tails[d] != TailStrategy::Auto) return fused;
  return out;
}

// The fused dims (parallel_dims in apply_schedule.h), given each loop's tail strategy.
std::vector<size_t> parallel_dims_with(const OutputSchedule& s, const std::vector<int64_t>& extents,
                                       const std::vector<TailStrategy>& tails, int first_dim) {
  std::vector<int64_t> iterations(extents.size());
  for (size_t d = 0; d < extents.size(); ++d)
    iterations[d] = (extents[d] + s.tile1[d] - 1) / s.tile1[d];
  std::vector<size_t> fused = fused_dims(extents.size(), s.parallel_loops, tails, iterations);
  return put_outermost(fused, first_dim, tails, iterations);
}

// `extents`: the loops the schedule tiles; `written`: the output buffer's extents, both
// innermost first.
OutputLoops schedule_output(PipelineStage& stage, const OutputSchedule& s,
                            const std::vector<int64_t>& extents,
                            const std::vector<int64_t>& written, int first_dim) {
  Func out = stage.func;
  size_t dims = stage.vars.size();
  std::vector<Var> outer, mid, inner;
  std::vector<TailStrategy> tails = tail_strategies(s, extents, written);
  for (size_t d = 0; d < dims; ++d) {
    const std::string n = stage.vars[d].name();
    outer.emplace_back(n + "_o");
    mid.emplace_back(n + "_m");
    inner.emplace_back(n + "_i");
    Var tile(n + "_t");
    out.split(stage.vars[d], outer[d], tile, static_cast<int>(s.tile1[d]), tails[d])
        .split(tile, mid[d], inner[d], static_cast<int>(s.tile2[d]), tails[d]);
  }
  std::vector<size_t> fused = parallel_dims_with(s, extents, tails, first_dim);
  auto is_fused = [&](size_t d) { return std::find(fused.begin(), fused.end(), d) != fused.end(); };
  auto [store_dim, store_width] = store_vector(s);
  std::vector<int> tile_dims = register_tile_order(dims, store_dim, s.tile2);
  std::vector<VarOrRVar> order;
  for (int d : tile_dims) order.push_back(inner[d]);
  for (auto& v : mid) order.push_back(v);
  for (size_t d = 0; d < dims; ++d)  // the loops not fused, inside the fused one
    if (!is_fused(d)) order.push_back(outer[d]);
  for (auto d = fused.rbegin(); d != fused.rend(); ++d) order.push_back(outer[*d]);
  out.reorder(order);
  if (store_width > 1) out.vectorize(inner[store_dim], store_width);
  if (s.unroll) {
    for (int d : unrolled_dims(tile_dims, s.tile2, store_width)) out.unroll(inner[d]);
  }
  // The innermost loop over cache tiles: the innermost dim's not fused, else the fused loop.
  size_t free_dim = 0;
  while (free_dim < dims && is_fused(free_dim)) ++free_dim;
  Var tile_loop = free_dim < dims ? outer[free_dim] : outer[0];
  if (!fused.empty()) {
    Var loop = fuse_parallel(out, outer, fused);
    if (free_dim == dims) tile_loop = loop;
  }
  return {LoopLevel(out, tile_loop), LoopLevel(out, mid[0]), !fused.empty()};
}

void place_in_output(Func f, int location, const OutputLoops& loops) {
  if (location == kRoot) f.compute_root();
  if (location == kCacheTile) f.compute_at(loops.cache_tile);
  if (location == kRegisterTile) f.compute_at(loops.register_tile);
}

// Places stage i; a producer of another stage goes with that consumer or inside the
// consumer's tile loops (the anchor's outer loops, see schedule_anchor).
void place(TaskPipeline& pipeline, const Schedule& schedule, size_t i, const OutputLoops& loops) {
  Func f = pipeline.stages[i].func;
  int location = schedule.stages[i].location;
  int consumer = pipeline.shape.stages[i].feeds;
  if (location == kWithConsumer) {
    place_in_output(f, schedule.stages[consumer].location, loops);
  } else if (location == kInsideConsumer) {
    const PipelineStage& c = pipeline.stages[consumer];
    f.compute_at(c.func, Var(c.vars[0].name() + "_ao"));
  } else {
    place_in_output(f, location, loops);
  }
}

// The stage's dim that follows the output's vector dim (its own dim 0 if none does).
int stage_vector_dim(const StageShape& shape, int output_vector_dim) {
  for (size_t d = 0; d < shape.output_dim.size(); ++d)
    if (shape.output_dim[d] == output_vector_dim) return static_cast<int>(d);
  return 0;
}

// Splits each reduction loop, then orders [register tile] and [reduction] loops.
void order_reduction(Halide::Stage update, const PipelineStage& stage, const StageSchedule& s,
                     const std::vector<VarOrRVar>& tile, const std::vector<VarOrRVar>& outer) {
  std::vector<VarOrRVar> r_inner, r_outer;
  for (int r = 0; r < stage.rdom.dimensions(); ++r) {
    RVar rv = stage.rdom[r];
    RVar ro(rv.name() + "_o"), ri(rv.name() + "_i");
    update.split(rv, ro, ri, static_cast<int>(s.rsplit[r]));
    r_inner.push_back(ri);
    r_outer.push_back(ro);
  }
  std::vector<VarOrRVar> order;
  auto append = [&](const std::vector<VarOrRVar>& loops) {
    order.insert(order.end(), loops.begin(), loops.end());
  };
  if (s.reduction_order == kTileInsideReduction) append(tile), append(r_inner), append(r_outer);
  if (s.reduction_order == kReductionInnerInside) append(r_inner), append(tile), append(r_outer);
  if (s.reduction_order == kReductionInside) append(r_inner), append(r_outer), append(tile);
  append(outer);
  update.reorder(order);
  if (s.unroll_reduction && s.rsplit[0] > 1) update.unroll(r_inner[0]);
}

// The packed weight input an anchor prefetches (none: `input` null).
struct PrefetchedWeights {
  const Halide::ImageParam* input = nullptr;
  int64_t block = 1;
};

// Prefetches the packed weights along the loop weight_prefetch_site picks. x86 prefetches
// do not fault, so the region is not clamped.
void prefetch_weights(Halide::Stage update, const PipelineStage& stage, const StageShape& shape,
                      const StageSchedule& s, const PrefetchedWeights& weights) {
  WeightPrefetchSite site = weight_prefetch_site(shape, s, weights.block);
  RVar at(stage.rdom[int(shape.rextents.size() - 1)].name() + (site.inner_loop ? "_i" : "_o"));
  update.prefetch(*weights.input, at, at, static_cast<int>(site.trips_ahead),
                  Halide::PrefetchBoundStrategy::NonFaulting);
}

// The anchor: its pure loops tiled like the output's register tile, vectorized along the
// same dim, the tile unrolled, the reduction split and ordered around the tile.
void schedule_anchor(PipelineStage& stage, const StageShape& shape, const StageSchedule& s,
                     const OutputSchedule& out, bool parallel, const PrefetchedWeights& weights) {
  int vdim = stage_vector_dim(shape, out.vector_dim);
  size_t dims = stage.vars.size();
  std::vector<int64_t> tile_extent(dims, 1);
  for (size_t d = 0; d < dims; ++d) {
    if (shape.output_dim[d] >= 0) tile_extent[d] = out.tile2[shape.output_dim[d]];
    // At root the stage spans its whole loop: a register tile that does not divide it
    // (its cache tile shifting inward) becomes the whole loop (Halide 14 miscomputes a
    // guarded, vectorized tail of an update).
    if (s.location == kRoot && shape.extents[d] % tile_extent[d] != 0)
      tile_extent[d] = shape.extents[d];
  }
  int width = tile_extent[size_t(vdim)] % s.vector_width == 0 ? s.vector_width : 1;
  std::vector<int> tile_dims = register_tile_order(dims, vdim, tile_extent);
  auto schedule_definition = [&](Halide::Stage def, bool is_update) {
    std::vector<Var> inner, outer;
    for (size_t d = 0; d < dims; ++d) {
      Var v = stage.vars[d];
      outer.emplace_back(v.name() + "_ao");
      inner.emplace_back(v.name() + "_ai");
      def.split(v, outer[d], inner[d], static_cast<int>(tile_extent[d]));
    }
    std::vector<VarOrRVar> tile, outside(outer.begin(), outer.end());
    for (int d : tile_dims) tile.push_back(inner[d]);
    if (is_update) {
      order_reduction(def, stage, s, tile, outside);
      if (weights.input && stage.rdom.dimensions() > 0)
        prefetch_weights(def, stage, shape, s, weights);
    } else {
      tile.insert(tile.end(), outside.begin(), outside.end());
      def.reorder(tile);
    }
    if (width > 1) def.vectorize(inner[vdim], width);
    if (out.unroll)
      for (int d : unrolled_dims(tile_dims, tile_extent, width)) def.unroll(inner[d]);
    if (parallel && s.location == kRoot) def.parallel(outer.back());
  };
  schedule_definition(stage.func, false);
  schedule_definition(stage.func.update(0), true);
  // Stored with the vector dim innermost, so the accumulator tile is read and written
  // as whole vectors (and LLVM can keep it in registers).
  std::vector<Var> storage;
  for (int d : tile_dims) storage.push_back(stage.vars[d]);
  if (storage.size() > 1) stage.func.reorder_storage(storage);
}

// Row reductions and producers: vectorized along one dim (guarded, so no loop reads past
// its region), the reduction split and ordered.
void schedule_plain_stage(PipelineStage& stage, const StageShape& shape, const StageSchedule& s,
                          const OutputSchedule& out, bool parallel) {
  if (stage.vars.empty()) return;
  // Guarded, so no vector loop reads past its region. Row reductions vectorize their
  // row dim, with a width the space keeps a divisor of the region (Halide 14 miscomputes
  // a guarded tail there when a row reduction reads another at the same loop level).
  bool rows = shape.kind == StageKind::Reduction;
  Var v = stage.vars[rows ? 0 : stage_vector_dim(shape, out.vector_dim)];
  TailStrategy tail = TailStrategy::GuardWithIf;
  auto schedule_definition = [&](Halide::Stage def, bool is_update) {
    if (is_update) order_reduction(def, stage, s, {}, {});
    if (s.vector_width > 1) def.vectorize(v, s.vector_width, tail);
    if (parallel && s.location == kRoot && stage.vars.size() > 1) def.parallel(stage.vars.back());
  };
  schedule_definition(stage.func, false);
  if (stage.has_update) schedule_definition(stage.func.update(0), true);
}

}  // namespace

WeightPrefetchSite weight_prefetch_site(const StageShape& shape, const StageSchedule& s,
                                        int64_t block) {
  size_t last = shape.rextents.size() - 1;
  int64_t bytes_per_inner_trip = int64_t(sizeof(float)) * block;
  for (size_t r = 0; r < last; ++r) bytes_per_inner_trip *= shape.rextents[r];
  WeightPrefetchSite site{false, 1, bytes_per_inner_trip * s.rsplit[last]};
  if (site.bytes_per_trip > kWeightPrefetchBytes && last == 0 &&
      s.reduction_order == kTileInsideReduction)
    site = {true, 1, bytes_per_inner_trip};
  site.trips_ahead = std::max<int64_t>(1, kWeightPrefetchBytes / site.bytes_per_trip);
  return site;
}

std::vector<size_t> parallel_dims(const OutputSchedule& s, const std::vector<int64_t>& extents,
                                  const std::vector<int64_t>& written, int first_dim) {
  return parallel_dims_with(s, extents, tail_strategies(s, extents, written), first_dim);
}

namespace {

// Elements of a task's packable weight and of the rest of its inputs plus its output.
std::pair<int64_t, int64_t> weights_and_activations(const TaskShape& shape) {
  int64_t weights = 0, activations = element_count(shape.output_shape);
  for (size_t i = 0; i < shape.inputs.size(); ++i)
    (int(i) == shape.packable_input ? weights : activations) +=
        element_count(shape.inputs[i].shape);
  return {weights, activations};
}

}  // namespace

int parallel_first_dim(const TaskSpec& task) {
  bool blocked_conv = task.kind == TaskKind::Conv2d && task.output_block() > 1;
  if (!blocked_conv && task.kind != TaskKind::Dense) return -1;
  TaskShape shape = describe_task(task);
  auto [weights, activations] = weights_and_activations(shape);
  if (task.kind == TaskKind::Dense) return weights > activations ? 0 : -1;
  if (shape.output_shape.size() != 5) return -1;
  return weights <= 2 * activations ? 2 : -1;
}

void apply_schedule(TaskPipeline& pipeline, const Schedule& schedule,
                    const CodegenOptions& options) {
  OutputLoops loops =
      schedule_output(pipeline.stages.back(), schedule.output, pipeline.shape.output().extents,
                      {pipeline.shape.output_shape.rbegin(), pipeline.shape.output_shape.rend()},
                      options.first_parallel_dim);
  PrefetchedWeights prefetched;
  int weights = pipeline.shape.packable_input;
  if (options.prefetch_weights && pipeline.shape.prefetch_packable && weights >= 0 &&
      schedule.weight_block > 1)
    prefetched = {&pipeline.inputs[size_t(weights)], schedule.weight_block};
  for (size_t i = 0; i + 1 < pipeline.stages.size(); ++i) {
    const StageSchedule& s = schedule.stages[i];
    const StageShape& shape = pipeline.shape.stages[i];
    if (s.location == kInline) continue;
    place(pipeline, schedule, i, loops);
    if (shape.kind == StageKind::Anchor)
      schedule_anchor(pipeline.stages[i], shape, s, schedule.output, loops.parallel, prefetched);
    else
      schedule_plain_stage(pipeline.stages[i], shape, s, schedule.output, loops.parallel);
  }
  for (auto& table : pipeline.tables)
    table.func.compute_root().vectorize(table.func.args()[0], table.vector_width);
}

}  // namespace tlm
