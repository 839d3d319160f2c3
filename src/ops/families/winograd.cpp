// The Winograd family (ops/winograd.h): the two transforms of a F(4x4, 3x3) convolution.
//   graph ops: winograd_input(x [N,C,H,W]) -> [36, C, T]
//              winograd_output(m [36, K, T][, bias [K]]), attributes n, h, w -> [N, K, H, W]
//              (T = n * ceil(h/4) * ceil(w/4) tiles, image-major, then tile rows, columns)
//   tasks:     winograd_in (output [6, 6, C, N, TH, TW], the same memory as [36, C, T]),
//              winograd_out (input read as [6, 6, K, N, TH, TW]; "+bias" along K); both
//              schedule themselves (no decision points)
//   ONNX:      none (a graph rewrite writes them)
#include "ops/winograd.h"

#include "ops/family.h"
#include "ops/pipeline_builder.h"
#include "util/error.h"

namespace tlm {
namespace winograd {

const double kBt[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                          {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
const double kG[6][3] = {{1.0 / 4, 0, 0},
                         {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                         {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                         {1.0 / 24, 1.0 / 12, 1.0 / 6},
                         {1.0 / 24, -1.0 / 12, 1.0 / 6},
                         {0, 0, 1}};
const double kAt[4][6] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

std::vector<float> filter_transform(const std::vector<float>& w, int64_t k, int64_t c) {
  if (int64_t(w.size()) != k * c * 9) throw Error("winograd: weights are not [K, C, 3, 3]");
  std::vector<float> u(size_t(kPoints * k * c));
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < c; ++i) {
      const float* g = &w[size_t((o * c + i) * 9)];
      double gg[6][3] = {};  // G g
      for (int e = 0; e < 6; ++e)
        for (int s = 0; s < 3; ++s)
          for (int r = 0; r < 3; ++r) gg[e][s] += kG[e][r] * g[r * 3 + s];
      for (int e = 0; e < 6; ++e)
        for (int n = 0; n < 6; ++n) {
          double v = 0;
          for (int s = 0; s < 3; ++s) v += gg[e][s] * kG[n][s];
          u[size_t(((e * 6 + n) * k + o) * c + i)] = float(v);
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

int64_t tile_count(int64_t n, int64_t h, int64_t w) {
  return n * tiles(h) * tiles(w);
}

// ---- graph ops ----

Shape infer_input(const OpCall& c) {
  const Shape& x = c.inputs[0];
  if (x.size() != 4) c.fail("wants x [N,C,H,W]");
  return {kPoints, x[1], tile_count(x[0], x[2], x[3])};
}

// V[e*6+n][c][t] = sum_ij B^T[e][i] d_t[i][j] B^T[n][j], d_t the 6x6 patch of tile t at
// (4 * tile row - 1, 4 * tile column - 1), zero outside the image.
TensorValue reference_input(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const Shape& x = c.inputs[0];
  int64_t th = tiles(x[2]), tw = tiles(x[3]);
  TensorValue out = TensorValue::filled(DType::F32, infer_input(c), 0.0);
  int64_t t_count = out.shape[2];
  for (int64_t img = 0; img < x[0]; ++img)
    for (int64_t ch = 0; ch < x[1]; ++ch)
      for (int64_t ty = 0; ty < th; ++ty)
        for (int64_t tx = 0; tx < tw; ++tx) {
          double d[6][6];
          for (int i = 0; i < 6; ++i)
            for (int j = 0; j < 6; ++j) {
              int64_t y = 4 * ty + i - 1, z = 4 * tx + j - 1;
              bool inside = y >= 0 && z >= 0 && y < x[2] && z < x[3];
              d[i][j] = inside ? in[0]->data[size_t(((img * x[1] + ch) * x[2] + y) * x[3] + z)] : 0;
            }
          int64_t t = (img * th + ty) * tw + tx;
          for (int e = 0; e < 6; ++e)
            for (int n = 0; n < 6; ++n) {
              double v = 0;
              for (int i = 0; i < 6; ++i)
                for (int j = 0; j < 6; ++j) v += kBt[e][i] * d[i][j] * kBt[n][j];
              out.data[size_t(((e * 6 + n) * x[1] + ch) * t_count + t)] = v;
            }
        }
  return out;
}

AnchorTask input_task(const OpCall& c) {
  const Shape& x = c.inputs[0];
  return {"winograd_in:" + param_text("n", x[0]) + "," + param_text("c", x[1]) + "," +
              param_text("h", x[2]) + "," + param_text("w", x[3]),
          {0},
          -1,
          {6, 6, x[1], x[0], tiles(x[2]), tiles(x[3])}};
}

Shape output_image(const OpCall& c, int64_t k) {
  return {c.attr("n", 1), k, c.attr("h", 0), c.attr("w", 0)};
}

Shape infer_output(const OpCall& c) {
  const Shape& m = c.inputs[0];
  if (m.size() != 3 || m[0] != kPoints) c.fail("wants m [36, K, tiles]");
  Shape y = output_image(c, m[1]);
  if (y[0] < 1 || y[2] < 1 || y[3] < 1) c.fail("needs n, h and w of at least 1");
  if (m[2] != tile_count(y[0], y[2], y[3]))
    c.fail(shape_text(m) + " does not hold the tiles of a " + shape_text(y) + " output");
  if (c.inputs.size() > 1 && c.inputs[1] != Shape{m[1]}) c.fail("bias is not [K]");
  return y;
}

// y[img][k][4 ty + i][4 tx + j] = bias[k] + sum_en A^T[i][e] M[e*6+n][k][t] A^T[j][n].
TensorValue reference_output(const OpCall& c, const std::vector<const TensorValue*>& in) {
  Shape y = infer_output(c);
  int64_t th = tiles(y[2]), tw = tiles(y[3]), k_count = y[1], t_count = c.inputs[0][2];
  TensorValue out = TensorValue::filled(DType::F32, y, 0.0);
  const auto& m = in[0]->data;
  for (int64_t img = 0; img < y[0]; ++img)
    for (int64_t k = 0; k < k_count; ++k)
      for (int64_t row = 0; row < y[2]; ++row)
        for (int64_t col = 0; col < y[3]; ++col) {
          int64_t t = (img * th + row / 4) * tw + col / 4, i = row % 4, j = col % 4;
          double v = in.size() > 1 ? in[1]->data[size_t(k)] : 0;
          for (int e = 0; e < 6; ++e)
            for (int n = 0; n < 6; ++n)
              v += kAt[i][e] * m[size_t(((e * 6 + n) * k_count + k) * t_count + t)] * kAt[j][n];
          out.data[size_t(((img * k_count + k) * y[2] + row) * y[3] + col)] = v;
        }
  return out;
}

AnchorTask output_task(const OpCall& c) {
  Shape y = infer_output(c);
  return {"winograd_out:" + param_text("n", y[0]) + "," + param_text("k", y[1]) + "," +
              param_text("h", y[2]) + "," + param_text("w", y[3]),
          {0},
          1,
          y};
}

// ---- tasks ----

// sum_i coef[i] * term(i) over the nonzero coefficients: the zeros fold away.
Expr combination(const double* coef, int count, const std::function<Expr(int)>& term) {
  Expr sum;
  for (int i = 0; i < count; ++i) {
    if (coef[i] == 0) continue;
    Expr t = coef[i] == 1 ? term(i) : coef[i] == -1 ? -term(i) : float(coef[i]) * term(i);
    sum = sum.defined() ? sum + t : t;
  }
  return sum;
}

// Arithmetic per transform of one 6x6 (or 6x4) block, rows then columns.
double separable_flops(const double* coef, int rows, int lines) {
  double nonzero = 0;
  for (int i = 0; i < rows * 6; ++i) nonzero += coef[i] != 0;
  return 2.0 * nonzero * lines;
}

// The widest vector of at most `cap` lanes that fits `extent` (1: scalar).
int vector_lanes(int64_t extent, int cap) {
  int lanes = 1;
  while (lanes * 2 <= cap && lanes * 2 <= extent) lanes *= 2;
  return lanes;
}

void build_input(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t n = t.get("n"), c = t.get("c"), h = t.get("h"), w = t.get("w");
  int64_t th = tiles(h), tw = tiles(w);
  ImageParam X = b.input("X", {n, c, h, w});
  Func inside = Halide::BoundaryConditions::constant_exterior(X, 0.0f);
  Var px("px"), py("py"), tx("tx"), ty("ty"), img("img"), ch("ch"), j("j"), e("e"), nu("nu");
  Func padded("padded"), rows("rows");  // rows(tx, j, e, ty, ch, img) = (B^T d)[e][j]
  padded(px, py, ch, img) = inside(px, py, ch, img);
  std::vector<Expr> by_e, by_n;
  for (int r = 0; r < 6; ++r)
    by_e.push_back(combination(
        kBt[r], 6, [&](int i) { return padded(4 * tx + j - 1, 4 * ty + i - 1, ch, img); }));
  rows(tx, j, e, ty, ch, img) = Halide::mux(e, by_e);
  for (int r = 0; r < 6; ++r)
    by_n.push_back(combination(kBt[r], 6, [&](int col) { return rows(tx, col, e, ty, ch, img); }));
  b.add_output(Halide::mux(nu, by_n), {tx, ty, img, ch, nu, e}, {6, 6, c, n, th, tw});
  int lanes = vector_lanes(tw, 8);
  b.schedule_itself([=](Func out) mutable {
    out.reorder(nu, e, tx, ty, img, ch).unroll(nu).unroll(e).parallel(ch);
    rows.compute_at(out, ty).reorder(j, e, tx).unroll(j).unroll(e);
    padded.compute_at(out, img).vectorize(px, vector_lanes(w, 16));
    if (lanes > 1) {
      out.vectorize(tx, lanes, TailStrategy::ShiftInwards);
      rows.vectorize(tx, lanes, TailStrategy::ShiftInwards);
    }
  });
  double per_tile = separable_flops(&kBt[0][0], 6, 6) * 2;
  b.finish(per_tile * double(c * n * th * tw), 1);
}

void build_output(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t n = t.get("n"), k = t.get("k"), h = t.get("h"), w = t.get("w");
  int64_t th = tiles(h), tw = tiles(w);
  ImageParam M = b.input("M", {6, 6, k, n, th, tw});
  Var x("x"), y("y"), ko("ko"), img("img"), tx("tx"), ty("ty"), i("i"), j("j"), nu("nu");
  Func cols("cols"), tile("tile");  // cols(tx, nu, i, ty, ko, img) = (A^T M)[i][nu]
  std::vector<Expr> by_i, by_j;
  for (int r = 0; r < 4; ++r)
    by_i.push_back(combination(kAt[r], 6, [&](int e) { return M(tx, ty, img, ko, nu, e); }));
  cols(tx, nu, i, ty, ko, img) = Halide::mux(i, by_i);
  for (int r = 0; r < 4; ++r)
    by_j.push_back(combination(kAt[r], 6, [&](int col) { return cols(tx, col, i, ty, ko, img); }));
  tile(j, tx, i, ty, ko, img) = Halide::mux(j, by_j);
  b.add_output(tile(x % 4, x / 4, y % 4, y / 4, ko, img), {x, y, ko, img}, {n, k, h, w});
  int lanes = vector_lanes(tw, 8);
  b.schedule_itself([=](Func out) mutable {
    Var yo("yo"), yi("yi"), row("row"), block("block");
    out.split(y, yo, yi, 4, TailStrategy::GuardWithIf)
        .reorder(x, yi, yo, ko, img)
        .fuse(yo, ko, row)
        .fuse(row, img, block)
        .parallel(block)
        .unroll(yi);
    int x_lanes = vector_lanes(w, 16);
    if (x_lanes > 1) out.vectorize(x, x_lanes, TailStrategy::ShiftInwards);
    tile.compute_at(out, block).reorder(j, tx, i).unroll(j).unroll(i);
    cols.compute_at(out, block).reorder(tx, nu, i).unroll(nu).unroll(i);
    if (lanes > 1) {
      tile.vectorize(tx, lanes, TailStrategy::ShiftInwards);
      cols.vectorize(tx, lanes, TailStrategy::ShiftInwards);
    }
  });
  double per_tile = separable_flops(&kAt[0][0], 4, 6) + separable_flops(&kAt[0][0], 4, 4);
  b.finish(per_tile * double(k * n * th * tw), 1);
}

}  // namespace

void register_winograd_family(OpRegistry& r) {
  OpDef input;
  input.kind = OpKind::WinogradInput;
  input.infer = infer_input;
  input.reference = reference_input;
  input.task = input_task;
  r.ops.push_back(input);
  OpDef output;
  output.kind = OpKind::WinogradOutput;
  output.min_inputs = 1, output.max_inputs = 2;
  output.infer = infer_output;
  output.reference = reference_output;
  output.task = output_task;
  r.ops.push_back(output);

  r.tasks.push_back({TaskKind::WinogradIn,
                     {{"n", "1"}, {"c", ""}, {"h", ""}, {"w", ""}},
                     6,
                     -1,
                     nullptr,
                     build_input,
                     nullptr,
                     {"winograd_in:n=1,c=3,h=8,w=8", "winograd_in:n=2,c=5,h=9,w=14",
                      "winograd_in:n=1,c=4,h=28,w=28"}});
  r.tasks.push_back({TaskKind::WinogradOut,
                     {{"n", "1"}, {"k", ""}, {"h", ""}, {"w", ""}},
                     4,
                     1,
                     nullptr,
                     build_output,
                     nullptr,
                     {"winograd_out:n=1,k=3,h=8,w=8+bias+relu", "winograd_out:n=2,k=5,h=9,w=14",
                      "winograd_out:n=1,k=4,h=28,w=28+bias+add"}});
}

}  // namespace tlm
