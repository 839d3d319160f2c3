// The Winograd family (ops/winograd.h): the two transforms of a F(m x m, 3x3) convolution.
//   graph ops: winograd_input(x [N,C,H,W]), attribute m (tile side, 4 or 2) -> [P, C, T]
//              winograd_output(M [P, K, T][, bias [K]]), attributes m, n, h, w -> [N,K,H,W]
//              (P = (m+2)^2; T = n * ceil(h/m) * ceil(w/m) tiles, image-major, then tile
//              rows, columns); attribute block b > 1: x [N,C/b,H,W,b] -> [P, T, C] and
//              M [P, T, K] -> [N,K/b,H,W,b] (channels innermost throughout)
//   tasks:     winograd_in (output [m+2, m+2, C, N, TH, TW], the same memory as [P, C, T];
//              block: [m+2, m+2, N, TH, TW, C]), winograd_out (input read as
//              [m+2, m+2, K, N, TH, TW], block: [m+2, m+2, N, TH, TW, K]; "+bias" along K);
//              both schedule themselves (no decision points); m is left out of keys at 4,
//              block at 1
//   ONNX:      none (a graph rewrite writes them)
#include "ops/winograd.h"

#include "ops/family.h"
#include "ops/pipeline_builder.h"
#include "util/error.h"

namespace tlm {
namespace winograd {

const Transform& transform(int64_t tile) {
  static const Transform f4{
      4,
      6,
      {4, 0,  -5, 0, 1, 0, 0, -4, -4, 1,  1, 0, 0, 4, -4, -1, 1, 0,
       0, -2, -1, 2, 1, 0, 0, 2,  -1, -2, 1, 0, 0, 4, 0,  -5, 0, 1},
      {1.0 / 4, 0, 0, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6, 1.0 / 24, 1.0 / 12,
       1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6, 0, 0, 1},
      {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1}};
  static const Transform f2{2,
                            4,
                            {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1},
                            {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1},
                            {1, 1, 1, 0, 0, 1, -1, -1}};
  if (tile == 4) return f4;
  if (tile == 2) return f2;
  throw Error("winograd: tiles of " + std::to_string(tile) + " outputs (known: 4, 2)");
}

std::vector<float> filter_transform(const std::vector<float>& w, int64_t k, int64_t c, int64_t tile,
                                    bool channels_last) {
  const Transform& f = transform(tile);
  int64_t p = f.patch;
  if (int64_t(w.size()) != k * c * 9) throw Error("winograd: weights are not [K, C, 3, 3]");
  std::vector<float> u(size_t(f.points() * k * c));
  std::vector<double> gg(size_t(p * 3));  // G g
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < c; ++i) {
      const float* g = &w[size_t((o * c + i) * 9)];
      std::fill(gg.begin(), gg.end(), 0.0);
      for (int64_t e = 0; e < p; ++e)
        for (int s = 0; s < 3; ++s)
          for (int r = 0; r < 3; ++r)
            gg[size_t(e * 3 + s)] += f.g[size_t(e * 3 + r)] * g[r * 3 + s];
      for (int64_t e = 0; e < p; ++e)
        for (int64_t n = 0; n < p; ++n) {
          double v = 0;
          for (int s = 0; s < 3; ++s) v += gg[size_t(e * 3 + s)] * f.g[size_t(n * 3 + s)];
          int64_t point = e * p + n;
          u[size_t(channels_last ? (point * c + i) * k + o : (point * k + o) * c + i)] = float(v);
        }
    }
  return u;
}

}  // namespace winograd

namespace {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::TailStrategy;
using Halide::Var;
using namespace winograd;

// The transform of a node (attribute m, 4 when absent) or a task (parameter m).
const Transform& node_transform(const OpCall& c) {
  int64_t m = c.attr("m", 4);
  if (m != 2 && m != 4) c.fail("tiles of " + std::to_string(m) + " outputs (known: 4, 2)");
  return transform(m);
}

int64_t tile_count(const Transform& f, int64_t n, int64_t h, int64_t w) {
  return n * tiles(h, f.tile) * tiles(w, f.tile);
}

// The channel block of the node's activations (1: NCHW, and the transform domain
// [P, C, T]; above 1: [P, T, C]).
int64_t node_block(const OpCall& c) {
  int64_t block = c.attr("block", 1);
  if (block < 1) c.fail("block must be >= 1");
  return block;
}

// [P, A, B] as [P, B, A]: the transpose operator's own reference.
TensorValue swap_last_two(const TensorValue& v) {
  const IntAttrs perm = {{"perm", {0, 2, 1}}};
  const RealAttrs none;
  return evaluate({OpKind::Transpose, perm, none, {v.shape}, {v.dtype}}, {&v});
}

// ---- graph ops ----

Shape infer_input(const OpCall& c) {
  const Shape x = c.plain_input("block");
  if (x.size() != 4) c.fail("wants x [N,C,H,W]");
  const Transform& f = node_transform(c);
  int64_t t = tile_count(f, x[0], x[2], x[3]);
  if (node_block(c) > 1) return {f.points(), t, x[1]};
  return {f.points(), x[1], t};
}

// V[e*P+n][c][t] = sum_ij B^T[e][i] d_t[i][j] B^T[n][j], d_t the (m+2)x(m+2) patch of tile
// t at (m * tile row - 1, m * tile column - 1), zero outside the image.
TensorValue reference_input(const OpCall& c, const std::vector<const TensorValue*>& in) {
  if (node_block(c) > 1) {  // the plain transform of the plain input, transposed
    TensorValue plain = from_channel_blocks(*in[0]);
    IntAttrs attrs = c.attrs;
    attrs.erase("block");
    OpCall call{c.kind, attrs, c.reals, {plain.shape}, c.dtypes};
    return swap_last_two(reference_input(call, {&plain}));
  }
  const Shape& x = c.inputs[0];
  const Transform& f = node_transform(c);
  int64_t p = f.patch, th = tiles(x[2], f.tile), tw = tiles(x[3], f.tile);
  TensorValue out = TensorValue::filled(DType::F32, infer_input(c), 0.0);
  int64_t t_count = out.shape[2];
  std::vector<double> d(size_t(p * p));
  for (int64_t img = 0; img < x[0]; ++img)
    for (int64_t ch = 0; ch < x[1]; ++ch)
      for (int64_t t = (img * th) * tw; t < (img + 1) * th * tw; ++t) {
        int64_t ty = (t / tw) % th, tx = t % tw;
        for (int64_t i = 0; i < p; ++i)
          for (int64_t j = 0; j < p; ++j) {
            int64_t y = f.tile * ty + i - 1, z = f.tile * tx + j - 1;
            bool inside = y >= 0 && z >= 0 && y < x[2] && z < x[3];
            size_t at = size_t(((img * x[1] + ch) * x[2] + y) * x[3] + z);
            d[size_t(i * p + j)] = inside ? in[0]->data[at] : 0;
          }
        for (int64_t e = 0; e < p; ++e)
          for (int64_t n = 0; n < p; ++n) {
            double v = 0;
            for (int64_t i = 0; i < p; ++i)
              for (int64_t j = 0; j < p; ++j)
                v += f.bt_row(e)[i] * d[size_t(i * p + j)] * f.bt_row(n)[j];
            out.data[size_t(((e * p + n) * x[1] + ch) * t_count + t)] = v;
          }
      }
  return out;
}

// ",m=2" for 2x2 tiles, ",block=b" for channel blocks; nothing for the defaults.
std::string optional_params(const Transform& f, int64_t block) {
  return (f.tile == 4 ? "" : "," + param_text("m", f.tile)) +
         (block == 1 ? "" : "," + param_text("block", block));
}

AnchorTask input_task(const OpCall& c) {
  const Shape x = c.plain_input("block");
  const Transform& f = node_transform(c);
  int64_t block = node_block(c), th = tiles(x[2], f.tile), tw = tiles(x[3], f.tile);
  Shape written = block > 1 ? Shape{f.patch, f.patch, x[0], th, tw, x[1]}
                            : Shape{f.patch, f.patch, x[1], x[0], th, tw};
  return {"winograd_in:" + param_text("n", x[0]) + "," + param_text("c", x[1]) + "," +
              param_text("h", x[2]) + "," + param_text("w", x[3]) + optional_params(f, block),
          {0},
          -1,
          written};
}

// The output as [N, K, H, W], whatever layout it is written in.
Shape infer_plain_output(const OpCall& c) {
  const Shape& m = c.inputs[0];
  const Transform& f = node_transform(c);
  bool blocked = node_block(c) > 1;
  if (m.size() != 3 || m[0] != f.points())
    c.fail(blocked ? "wants M [(m+2)^2, tiles, K]" : "wants M [(m+2)^2, K, tiles]");
  int64_t k = blocked ? m[2] : m[1], t = blocked ? m[1] : m[2];
  Shape y = {c.attr("n", 1), k, c.attr("h", 0), c.attr("w", 0)};
  if (y[0] < 1 || y[2] < 1 || y[3] < 1) c.fail("needs n, h and w of at least 1");
  if (t != tile_count(f, y[0], y[2], y[3]))
    c.fail(shape_text(m) + " does not hold the tiles of a " + shape_text(y) + " output");
  if (k % node_block(c)) c.fail("block " + std::to_string(node_block(c)) + " does not divide K");
  if (c.inputs.size() > 1 && c.inputs[1] != Shape{k}) c.fail("bias is not [K]");
  return y;
}

Shape infer_output(const OpCall& c) {
  return channel_blocked_shape(infer_plain_output(c), node_block(c));
}

// y[img][k][m ty + i][m tx + j] = bias[k] + sum_en A^T[i][e] M[e*P+n][k][t] A^T[j][n].
TensorValue reference_output(const OpCall& c, const std::vector<const TensorValue*>& in) {
  if (int64_t block = node_block(c); block > 1) {  // the plain transform, blocked
    TensorValue m = swap_last_two(*in[0]);
    IntAttrs attrs = c.attrs;
    attrs.erase("block");
    std::vector<Shape> shapes = c.inputs;
    shapes[0] = m.shape;
    std::vector<const TensorValue*> inputs = in;
    inputs[0] = &m;
    return to_channel_blocks(reference_output({c.kind, attrs, c.reals, shapes, c.dtypes}, inputs),
                             block);
  }
  Shape y = infer_output(c);
  const Transform& f = node_transform(c);
  int64_t p = f.patch, th = tiles(y[2], f.tile), tw = tiles(y[3], f.tile);
  int64_t k_count = y[1], t_count = c.inputs[0][2];
  TensorValue out = TensorValue::filled(DType::F32, y, 0.0);
  const auto& m = in[0]->data;
  for (int64_t img = 0; img < y[0]; ++img)
    for (int64_t k = 0; k < k_count; ++k)
      for (int64_t row = 0; row < y[2]; ++row)
        for (int64_t col = 0; col < y[3]; ++col) {
          int64_t t = (img * th + row / f.tile) * tw + col / f.tile;
          const double *ai = f.at_row(row % f.tile), *aj = f.at_row(col % f.tile);
          double v = in.size() > 1 ? in[1]->data[size_t(k)] : 0;
          for (int64_t e = 0; e < p; ++e)
            for (int64_t n = 0; n < p; ++n)
              v += ai[e] * m[size_t(((e * p + n) * k_count + k) * t_count + t)] * aj[n];
          out.data[size_t(((img * k_count + k) * y[2] + row) * y[3] + col)] = v;
        }
  return out;
}

AnchorTask output_task(const OpCall& c) {
  Shape y = infer_plain_output(c);
  return {"winograd_out:" + param_text("n", y[0]) + "," + param_text("k", y[1]) + "," +
              param_text("h", y[2]) + "," + param_text("w", y[3]) +
              optional_params(node_transform(c), node_block(c)),
          {0},
          1,
          infer_output(c)};
}

// ---- tasks ----

// sum_i coef[i] * term(i) over the nonzero coefficients: the zeros fold away.
Expr combination(const double* coef, int64_t count, const std::function<Expr(int)>& term) {
  Expr sum;
  for (int i = 0; i < int(count); ++i) {
    if (coef[i] == 0) continue;
    Expr t = coef[i] == 1 ? term(i) : coef[i] == -1 ? -term(i) : float(coef[i]) * term(i);
    sum = sum.defined() ? sum + t : t;
  }
  return sum;
}

// Arithmetic of applying a matrix (`rows` x patch) to each of `lines` vectors.
double matrix_flops(const std::vector<double>& matrix, int64_t lines) {
  double nonzero = 0;
  for (double v : matrix) nonzero += v != 0;
  return 2.0 * nonzero * double(lines);
}

// The widest vector of at most `cap` lanes that fits `extent` (1: scalar).
int vector_lanes(int64_t extent, int cap) {
  int lanes = 1;
  while (lanes * 2 <= cap && lanes * 2 <= extent) lanes *= 2;
  return lanes;
}

void validate_tile(const TaskSpec& t) {
  transform(t.get("m"));
  const char* channels = t.kind == TaskKind::WinogradIn ? "c" : "k";
  if (t.get(channels) % t.get("block"))
    throw Error("task spec: " + t.op() + " block=" + t.params.at("block") + " does not divide " +
                channels + "=" + t.params.at(channels));
}

// The loop nest both blocked transforms write: `loops` innermost first, the channel
// vector, two loops over one tile's values (unrolled), then the channel block and tile
// column, and last a tile row and the image, fused into one parallel loop.
void rows_of_tiles_in_parallel(Func out, const std::vector<Var>& loops) {
  Var row("row");
  out.reorder(std::vector<Halide::VarOrRVar>(loops.begin(), loops.end()))
      .fuse(loops[5], loops[6], row)
      .parallel(row)
      .vectorize(loops[0])
      .unroll(loops[1])
      .unroll(loops[2]);
}

// Channel blocks: x [N, C/b, H, W, b] -> V [P, T, C], each value a vector of the b
// channels of one pixel (loads) or one transform point (stores). One row of tiles per
// parallel iteration; per tile and channel block, the rows B^T d of its patch are made
// in registers, and the P points of V = (B^T d) B written one vector each.
void build_input_blocked(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  const Transform& f = transform(t.get("m"));
  int64_t n = t.get("n"), c = t.get("c"), h = t.get("h"), w = t.get("w"), p = f.patch;
  int64_t blk = t.get("block"), th = tiles(h, f.tile), tw = tiles(w, f.tile);
  ImageParam X = b.dense_input("X", {n, c / blk, h, w, blk});
  Halide::Region image_only = {
      {Expr(), Expr()}, {0, int(w)}, {0, int(h)}, {Expr(), Expr()}, {Expr(), Expr()}};
  Func inside = Halide::BoundaryConditions::constant_exterior(X, 0.0f, image_only);
  Var ch("ch"), tx("tx"), ty("ty"), img("img"), j("j"), e("e"), nu("nu");
  Func rows("rows");  // rows(ch, j, e, tx, ty, img) = (B^T d)[e][j]
  Expr m = int(f.tile), in_block = ch % int(blk), block_index = ch / int(blk);
  std::vector<Expr> by_e, by_n;
  for (int64_t r = 0; r < p; ++r)
    by_e.push_back(combination(f.bt_row(r), p, [&](int i) {
      return inside(in_block, m * tx + j - 1, m * ty + i - 1, block_index, img);
    }));
  rows(ch, j, e, tx, ty, img) = Halide::mux(e, by_e);
  for (int64_t r = 0; r < p; ++r)
    by_n.push_back(
        combination(f.bt_row(r), p, [&](int col) { return rows(ch, col, e, tx, ty, img); }));
  b.add_output(Halide::mux(nu, by_n), {ch, tx, ty, img, nu, e}, {p, p, n, th, tw, c});
  int lanes = int(blk);
  b.schedule_itself([=](Func out) mutable {
    Var co("co"), ci("ci");
    out.split(ch, co, ci, lanes);
    rows_of_tiles_in_parallel(out, {ci, nu, e, co, tx, ty, img});
    rows.compute_at(out, co).reorder(ch, j, e).vectorize(ch, lanes).unroll(j).unroll(e);
  });
  b.finish(matrix_flops(f.bt, 2 * p) * double(c * n * th * tw), 1);
}

void build_input(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  if (t.get("block") > 1) return build_input_blocked(b);
  const Transform& f = transform(t.get("m"));
  int64_t n = t.get("n"), c = t.get("c"), h = t.get("h"), w = t.get("w"), p = f.patch;
  int64_t th = tiles(h, f.tile), tw = tiles(w, f.tile);
  ImageParam X = b.input("X", {n, c, h, w});
  Func inside = Halide::BoundaryConditions::constant_exterior(X, 0.0f);
  Var px("px"), py("py"), tx("tx"), ty("ty"), img("img"), ch("ch"), j("j"), e("e"), nu("nu");
  // rows(tx, j, e, ty, ch, img) = (B^T d)[e][j]; image(tx, ty, nu, e, ch, img) = V of one
  // image and channel, staged so that V is written one point's plane at a time
  Func padded("padded"), rows("rows"), image("image");
  padded(px, py, ch, img) = inside(px, py, ch, img);
  Expr m = int(f.tile);
  std::vector<Expr> by_e, by_n;
  for (int64_t r = 0; r < p; ++r)
    by_e.push_back(combination(
        f.bt_row(r), p, [&](int i) { return padded(m * tx + j - 1, m * ty + i - 1, ch, img); }));
  rows(tx, j, e, ty, ch, img) = Halide::mux(e, by_e);
  for (int64_t r = 0; r < p; ++r)
    by_n.push_back(
        combination(f.bt_row(r), p, [&](int col) { return rows(tx, col, e, ty, ch, img); }));
  image(tx, ty, nu, e, ch, img) = Halide::mux(nu, by_n);
  b.add_output(image(tx, ty, nu, e, ch, img), {tx, ty, img, ch, nu, e}, {p, p, c, n, th, tw});
  int lanes = vector_lanes(tw, 8);
  b.schedule_itself([=](Func out) mutable {
    // The P planes of V lie C*N*T floats apart, often a multiple of 4 KiB (batch 8):
    // written all at once they would share one L1 set. So one image's planes are made
    // in a small buffer and copied out a plane at a time.
    out.reorder(tx, ty, nu, e, img, ch).parallel(ch);
    image.compute_at(out, img).reorder(nu, e, tx, ty).unroll(nu).unroll(e);
    rows.compute_at(image, ty).reorder(j, e, tx).unroll(j).unroll(e);
    padded.compute_at(out, img).vectorize(px, vector_lanes(w, 16));
    if (lanes > 1) {
      out.vectorize(tx, lanes, TailStrategy::ShiftInwards);
      image.vectorize(tx, lanes, TailStrategy::ShiftInwards);
      rows.vectorize(tx, lanes, TailStrategy::ShiftInwards);
    }
  });
  b.finish(matrix_flops(f.bt, 2 * p) * double(c * n * th * tw), 1);
}

// Channel blocks: M [P, T, K] -> y [N, K/b, H, W, b], vectors of b output channels. One
// row of tiles per parallel iteration; per tile and channel block, A^T M is made in
// registers from the P loads, and the tile's m x m outputs stored one vector each.
void build_output_blocked(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  const Transform& f = transform(t.get("m"));
  int64_t n = t.get("n"), k = t.get("k"), h = t.get("h"), w = t.get("w"), p = f.patch;
  int64_t blk = t.get("block"), th = tiles(h, f.tile), tw = tiles(w, f.tile);
  ImageParam M = b.dense_input("M", {p, p, n, th, tw, k});
  Var ki("ki"), ko("ko"), x("x"), y("y"), img("img"), tx("tx"), ty("ty"), i("i"), j("j");
  Var nu("nu");
  Func cols("cols"), tile("tile");  // cols(ki, nu, i, ...) = (A^T M)[i][nu]
  Expr channel = ko * int(blk) + ki;
  std::vector<Expr> by_i, by_j;
  for (int64_t r = 0; r < f.tile; ++r)
    by_i.push_back(
        combination(f.at_row(r), p, [&](int pe) { return M(channel, tx, ty, img, nu, pe); }));
  cols(ki, nu, i, tx, ty, ko, img) = Halide::mux(i, by_i);
  for (int64_t r = 0; r < f.tile; ++r)
    by_j.push_back(
        combination(f.at_row(r), p, [&](int col) { return cols(ki, col, i, tx, ty, ko, img); }));
  tile(ki, j, i, tx, ty, ko, img) = Halide::mux(j, by_j);
  Expr m = int(f.tile);
  b.add_output(tile(ki, x % m, y % m, x / m, y / m, ko, img), {ki, x, y, ko, img},
               {n, k / blk, h, w, blk});
  int side = int(f.tile);
  b.schedule_itself([=](Func out) mutable {
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
    out.split(x, xo, xi, side, TailStrategy::GuardWithIf)
        .split(y, yo, yi, side, TailStrategy::GuardWithIf);
    rows_of_tiles_in_parallel(out, {ki, xi, yi, ko, xo, yo, img});
    cols.compute_at(out, ko).reorder(ki, nu, i).vectorize(ki).unroll(nu).unroll(i);
  });
  b.finish(matrix_flops(f.at, p + f.tile) * double(k * n * th * tw), 1);
}

void build_output(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  if (t.get("block") > 1) return build_output_blocked(b);
  const Transform& f = transform(t.get("m"));
  int64_t n = t.get("n"), k = t.get("k"), h = t.get("h"), w = t.get("w"), p = f.patch;
  int64_t th = tiles(h, f.tile), tw = tiles(w, f.tile);
  ImageParam M = b.input("M", {p, p, k, n, th, tw});
  Var x("x"), y("y"), ko("ko"), img("img"), tx("tx"), ty("ty"), i("i"), j("j"), nu("nu"), e("e");
  // planes(tx, ty, nu, e, ko, img): M of one image and output channel, read a point's
  // plane at a time (the planes lie K*N*T floats apart: see the input transform);
  // cols(tx, nu, i, ty, ko, img) = (A^T M)[i][nu]
  Func planes("planes"), cols("cols"), tile("tile");
  planes(tx, ty, nu, e, ko, img) = M(tx, ty, img, ko, nu, e);
  std::vector<Expr> by_i, by_j;
  for (int64_t r = 0; r < f.tile; ++r)
    by_i.push_back(
        combination(f.at_row(r), p, [&](int pe) { return planes(tx, ty, nu, pe, ko, img); }));
  cols(tx, nu, i, ty, ko, img) = Halide::mux(i, by_i);
  for (int64_t r = 0; r < f.tile; ++r)
    by_j.push_back(
        combination(f.at_row(r), p, [&](int col) { return cols(tx, col, i, ty, ko, img); }));
  tile(j, tx, i, ty, ko, img) = Halide::mux(j, by_j);
  Expr m = int(f.tile);
  b.add_output(tile(x % m, x / m, y % m, y / m, ko, img), {x, y, ko, img}, {n, k, h, w});
  int lanes = vector_lanes(tw, 8), side = int(f.tile);
  b.schedule_itself([=](Func out) mutable {
    Var yo("yo"), yi("yi"), plane("plane");
    out.split(y, yo, yi, side, TailStrategy::GuardWithIf)
        .reorder(x, yi, yo, ko, img)
        .fuse(ko, img, plane)
        .parallel(plane)
        .unroll(yi);
    int x_lanes = vector_lanes(w, 16);
    if (x_lanes > 1) out.vectorize(x, x_lanes, TailStrategy::ShiftInwards);
    planes.compute_at(out, plane).reorder(tx, ty, nu, e);
    tile.compute_at(out, yo).reorder(j, tx, i).unroll(j).unroll(i);
    cols.compute_at(out, yo).reorder(tx, nu, i).unroll(nu).unroll(i);
    if (lanes > 1) {
      planes.vectorize(tx, lanes, TailStrategy::ShiftInwards);
      tile.vectorize(tx, lanes, TailStrategy::ShiftInwards);
      cols.vectorize(tx, lanes, TailStrategy::ShiftInwards);
    }
  });
  b.finish(matrix_flops(f.at, p + f.tile) * double(k * n * th * tw), 1);
}

}  // namespace

void register_winograd_family(OpRegistry& r) {
  OpDef input;
  input.kind = OpKind::WinogradInput;
  input.infer = infer_input;
  input.reference = reference_input;
  input.task = input_task;
  input.per_image = true;
  r.ops.push_back(input);
  OpDef output;
  output.kind = OpKind::WinogradOutput;
  output.min_inputs = 1, output.max_inputs = 2;
  output.infer = infer_output;
  output.reference = reference_output;
  output.task = output_task;
  output.per_image = true;
  output.batch_attr = "n";  // its images, which its input (the product) mixes
  r.ops.push_back(output);

  ParamSchema tile_side{"m", "4", {}, ParamSchema::Kind::Int, true};
  ParamSchema block{"block", "1", {}, ParamSchema::Kind::Int, true};
  r.tasks.push_back(
      {TaskKind::WinogradIn,
       {{"n", "1"}, {"c", ""}, {"h", ""}, {"w", ""}, tile_side, block},
       6,
       -1,
       validate_tile,
       build_input,
       nullptr,
       {"winograd_in:n=1,c=3,h=8,w=8", "winograd_in:n=2,c=5,h=9,w=14",
        "winograd_in:n=1,c=4,h=28,w=28", "winograd_in:n=1,c=3,h=7,w=9,m=2",
        "winograd_in:n=1,c=32,h=9,w=10,block=16", "winograd_in:n=2,c=16,h=7,w=6,m=2,block=8"}});
  r.tasks.push_back(
      {TaskKind::WinogradOut,
       {{"n", "1"}, {"k", ""}, {"h", ""}, {"w", ""}, tile_side, block},
       4,
       1,
       validate_tile,
       build_output,
       nullptr,
       {"winograd_out:n=1,k=3,h=8,w=8+bias+relu", "winograd_out:n=2,k=5,h=9,w=14",
        "winograd_out:n=1,k=4,h=28,w=28+bias+add", "winograd_out:n=2,k=4,h=7,w=9,m=2+bias+relu",
        "winograd_out:n=1,k=32,h=9,w=10,block=16+bias+relu",
        "winograd_out:n=2,k=16,h=7,w=6,m=2,block=8+bias+add"},
       "block"});
}

}  // namespace tlm
