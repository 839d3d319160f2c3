// The matrix-product family.
//   graph ops: dense (x [..., K] times a constant w [K, N], optional bias [N]; attribute
//              cols < N keeps only the first cols columns, for a weight padded with zero
//              columns to a width the kernels tile well), matmul
//              (two activations, numpy semantics: batch dims broadcast; attribute a_heads
//              or b_heads 1: that operand is stored with its last dim but two and its
//              rows swapped, [..., m, heads, k] for [..., heads, m, k], as a projection
//              split into attention heads is before its transpose)
//   tasks:     matmul [m,k]x[k,n], dense (the same with weight names), batch_matmul
//              [b,m,k]x[b,k,n]; each C = sum_k A * B with the epilogue fused
//   ONNX:      Gemm (transA, transB, alpha, beta), MatMul, Einsum as a batched matmul
#include <algorithm>

#include "ops/family.h"
#include "ops/pipeline_builder.h"
#include "util/error.h"

namespace tlm {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::RDom;

// ---- graph ops ----

// The columns a dense layer writes: its attribute cols, else all N of its weight.
int64_t dense_columns(const OpCall& c) {
  int64_t n = c.inputs[1].size() == 2 ? c.inputs[1][1] : 0, cols = c.attr("cols", n);
  if (cols < 1 || cols > n) c.fail("cols " + std::to_string(cols) + " is not in [1, N]");
  return cols;
}

Shape infer_dense(const OpCall& c) {
  Shape x = c.inputs[0];
  const Shape& w = c.inputs[1];
  if (x.empty() || w.size() != 2 || x.back() != w[0])
    c.fail("input " + shape_text(x) + " does not match weight " + shape_text(w));
  int64_t cols = dense_columns(c);
  if (c.inputs.size() > 2 && c.inputs[2] != Shape{cols}) c.fail("bias is not [cols]");
  x.back() = cols;
  return x;
}

// Whether matmul operand `i` is stored head-split (attribute a_heads or b_heads).
bool heads_layout(const OpCall& c, size_t i) {
  return c.attr(i == 0 ? "a_heads" : "b_heads", 0) != 0;
}

// Operand `i` of a matmul as the product reads it: a head-split one with its last dim but
// two and its rows swapped back.
Shape logical_operand(const OpCall& c, size_t i) {
  Shape s = c.inputs[i];
  if (!heads_layout(c, i)) return s;
  if (s.size() < 3) c.fail("a head-split operand " + shape_text(s) + " is not [..., m, heads, k]");
  std::swap(s[s.size() - 3], s[s.size() - 2]);
  return s;
}

// The values of `v` [..., x, y, z] as [..., y, x, z].
TensorValue swap_rows_and_heads(const TensorValue& v) {
  size_t r = v.shape.size();
  int64_t x = v.shape[r - 3], y = v.shape[r - 2], z = v.shape[r - 1];
  TensorValue out = v;
  std::swap(out.shape[r - 3], out.shape[r - 2]);
  for (int64_t o = 0, outer = v.size() / (x * y * z); o < outer; ++o)
    for (int64_t i = 0; i < x; ++i)
      for (int64_t j = 0; j < y; ++j)
        std::copy_n(v.data.begin() + ((o * x + i) * y + j) * z, z,
                    out.data.begin() + ((o * y + j) * x + i) * z);
  return out;
}

// numpy matmul of operands of rank >= 2: [..., m, k] x [..., k, n], batch dims broadcast.
Shape infer_matmul(const OpCall& c) {
  const Shape a = logical_operand(c, 0), b = logical_operand(c, 1);
  if (a.size() < 2 || b.size() < 2 || a[a.size() - 1] != b[b.size() - 2])
    c.fail(shape_text(a) + " x " + shape_text(b) + " is not [..., M, K] x [..., K, N]");
  Shape batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  batch.push_back(a[a.size() - 2]);
  batch.push_back(b.back());
  return batch;
}

// The product of `a` [..., m, k] and `b` [..., k, n] into `out`, batches broadcast.
void matmul_values(const TensorValue& a, const TensorValue& b, const Shape& out_shape,
                   std::vector<double>& out) {
  int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  Shape batch(out_shape.begin(), out_shape.end() - 2);
  Shape a_batch(a.shape.begin(), a.shape.end() - 2), b_batch(b.shape.begin(), b.shape.end() - 2);
  out.assign(size_t(element_count(out_shape)), 0.0);
  for_each_broadcast(a_batch, b_batch, batch, [&](int64_t o, int64_t ia, int64_t ib) {
    const double* pa = a.data.data() + ia * m * k;
    const double* pb = b.data.data() + ib * k * n;
    double* po = out.data() + o * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < k; ++r)
        for (int64_t j = 0; j < n; ++j) po[i * n + j] += pa[i * k + r] * pb[r * n + j];
  });
}

TensorValue reference_dense(const OpCall& c, const std::vector<const TensorValue*>& in) {
  TensorValue out{DType::F32, infer_dense(c), {}};
  Shape all_columns = out.shape;
  all_columns.back() = in[1]->shape[1];
  std::vector<double> product;
  matmul_values(*in[0], *in[1], all_columns, product);
  size_t n = size_t(all_columns.back()), cols = size_t(out.shape.back());
  out.data.resize(product.size() / n * cols);
  for (size_t i = 0; i < out.data.size(); ++i) {
    out.data[i] = product[i / cols * n + i % cols];
    if (in.size() > 2) out.data[i] += in[2]->data[i % cols];
  }
  return out;
}

TensorValue reference_matmul(const OpCall& c, const std::vector<const TensorValue*>& in) {
  TensorValue out{DType::F32, infer_matmul(c), {}};
  TensorValue a = heads_layout(c, 0) ? swap_rows_and_heads(*in[0]) : *in[0];
  TensorValue b = heads_layout(c, 1) ? swap_rows_and_heads(*in[1]) : *in[1];
  matmul_values(a, b, out.shape, out.data);
  return out;
}

AnchorTask dense_task(const OpCall& c) {
  const Shape &x = c.inputs[0], &w = c.inputs[1];
  int64_t rows = element_count(x) / x.back(), cols = dense_columns(c);
  std::string spec =
      "dense:" + param_text("m", rows) + "," + param_text("n", w[1]) + "," + param_text("k", w[0]);
  if (cols != w[1]) spec += "," + param_text("cols", cols);
  return {spec, {0, 1}, 2, {rows, cols}};
}

// Equal batch dims: a batched product; a right-hand side without batch dims: one matrix
// product over all rows of the left. Other broadcasts have no task yet.
AnchorTask matmul_task(const OpCall& c) {
  const Shape a = logical_operand(c, 0), b = logical_operand(c, 1);
  int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  bool heads = heads_layout(c, 0) || heads_layout(c, 1);
  if (element_count(b_batch) == 1 && !heads)
    return {"matmul:" + param_text("m", element_count(a_batch) * m) + "," + param_text("n", n) +
                "," + param_text("k", k),
            {0, 1},
            -1,
            {element_count(a_batch) * m, n}};
  Shape batch = broadcast_shapes(a_batch, b_batch);
  if (element_count(a_batch) != element_count(batch) ||
      element_count(b_batch) != element_count(batch))
    c.fail(shape_text(a) + " x " + shape_text(b) + ": a broadcast left operand has no task yet");
  // A right-hand side the graph marks constant (a Winograd product's filters) may be
  // packed at compile time, as a dense layer's weight is.
  std::string layout = c.attr("constant_b", 0) ? ",constant_b=1" : "";
  // A head-split operand: the heads (its last dim but one) are the batch's innermost part.
  if (heads_layout(c, 0)) layout += "," + param_text("a_heads", a[a.size() - 3]);
  if (heads_layout(c, 1)) layout += "," + param_text("b_heads", b[b.size() - 3]);
  return {"batch_matmul:" + param_text("b", element_count(batch)) + "," + param_text("m", m) + "," +
              param_text("n", n) + "," + param_text("k", k) + layout,
          {0, 1},
          -1,
          {element_count(batch), m, n}};
}

// ---- tasks: C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] ----

// A batched operand [b, rows, cols] as the task reads it, stored plain or, with `heads`
// > 0, head-split: [b / heads, rows, heads, cols] (a_heads, b_heads). `args`: Halide's
// (col, row, batch).
Expr batched_operand(PipelineBuilder& b, const std::string& name, int64_t batch, int64_t rows,
                     int64_t cols, int64_t heads, const std::vector<Expr>& args) {
  if (heads == 0) return b.dense_input(name, {batch, rows, cols})(args);
  ImageParam stored = b.dense_input(name, {batch / heads, rows, heads, cols});
  Expr h = static_cast<int>(heads);
  return stored(args[0], args[2] % h, args[1], args[2] / h);
}

void build_product(PipelineBuilder& b, bool batched) {
  const TaskSpec& t = b.task();
  int64_t batch = batched ? t.get("b") : 1, m = t.get("m"), n = t.get("n"), k = t.get("k");
  std::vector<int64_t> a_shape = {m, k}, b_shape = {k, n}, c_shape = {m, n};
  if (batched) {
    a_shape.insert(a_shape.begin(), batch);
    b_shape.insert(b_shape.begin(), batch);
    c_shape.insert(c_shape.begin(), batch);
  }
  bool dense = t.kind == TaskKind::Dense;
  bool constant_b = dense || (batched && t.get("constant_b") == 1);
  auto vars = make_vars(batched ? std::vector<std::string>{"j", "i", "bt"}
                                : std::vector<std::string>{"j", "i"});
  RDom r(0, static_cast<int>(k), "rk");
  std::vector<Expr> a_args = {r.x, vars[1]}, b_args = {vars[0], r.x}, acc_args;
  if (batched) a_args.push_back(vars[2]), b_args.push_back(vars[2]);
  for (auto& v : vars) acc_args.push_back(v);
  Expr a_value = batched ? batched_operand(b, "A", batch, m, k, t.get("a_heads"), a_args)
                         : b.dense_input(dense ? "X" : "A", a_shape)(a_args);
  // A constant right-hand side (a dense layer's weight, a Winograd product's filters) may
  // be packed in column strips [N/b, K, b] ([N/b, B, K, b] batched), each read in address
  // order, and is prefetched.
  Expr b_value;
  if (constant_b)
    b_value = b.packable_weight(dense ? "W" : "B", b_shape, batched ? 2 : 1)(b_args);
  else if (batched)
    b_value = batched_operand(b, "B", batch, k, n, t.get("b_heads"), b_args);
  else
    b_value = b.dense_input("B", b_shape)(b_args);
  if (constant_b) b.prefetch_packable_weight();
  if (constant_b && batched) b.keep_vectors_in_weight_blocks(0);  // j: the packed columns
  Func acc("acc");
  acc(vars) = 0.0f;
  acc(acc_args) += a_value * b_value;
  b.add_stage(StageKind::Anchor, acc, vars, reversed(c_shape), identity_dims(vars.size()), r, {k});
  // A dense layer of fewer columns than its weight writes only those: its loops are tiled
  // as for all n, its stores past cols guarded.
  std::vector<int64_t> written = c_shape;
  if (dense) written.back() = t.get("cols");
  b.add_output(acc(acc_args), vars, written, c_shape);
  b.finish(2.0 * batch * m * n * k, k);
}

void validate_dense(const TaskSpec& t) {
  if (t.get("cols") > t.get("n"))
    throw Error("task spec: dense cols=" + t.params.at("cols") +
                " is more than n=" + t.params.at("n"));
}

void validate_batch_matmul(const TaskSpec& t) {
  if (t.get("constant_b") > 1)
    throw Error("task spec: batch_matmul constant_b=" + t.params.at("constant_b") +
                " is not 0 or 1");
  for (const char* heads : {"a_heads", "b_heads"}) {
    int64_t h = t.get(heads);
    if (h > 0 && t.get("b") % h != 0)
      throw Error("task spec: batch_matmul " + std::string(heads) + "=" + t.params.at(heads) +
                  " does not divide b=" + t.params.at("b"));
  }
  if (t.get("constant_b") == 1 && t.get("b_heads") > 0)
    throw Error("task spec: batch_matmul constant_b=1 and b_heads are exclusive");
}

void build_matmul(PipelineBuilder& b) {
  build_product(b, false);
}
void build_batch_matmul(PipelineBuilder& b) {
  build_product(b, true);
}

std::string format3(const char* op, int64_t m, int64_t n, int64_t k) {
  return std::string(op) + ":" + param_text("m", m) + "," + param_text("n", n) + "," +
         param_text("k", k);
}

std::vector<std::string> matmul_corpus() {
  std::vector<std::string> tasks;
  const std::vector<int> sizes = {64, 128, 256, 512, 768, 1024};
  for (int m : sizes)
    for (int n : sizes)
      for (int k : {64, 256, 768, 1024}) tasks.push_back(format3("matmul", m, n, k));
  return tasks;
}

std::vector<std::string> dense_corpus() {
  std::vector<std::string> tasks;
  for (int m : {1, 16, 64, 128, 256})
    for (int n : {256, 768, 1024, 3072, 4096})
      for (int k : {256, 768, 1024, 3072})
        for (const char* e : {"", "+bias", "+bias+gelu", "+bias+relu"})
          tasks.push_back(format3("dense", m, n, k) + e);
  return tasks;
}

std::vector<std::string> batch_matmul_corpus() {
  std::vector<std::string> tasks;
  for (int b : {4, 12, 16})
    for (int mn : {64, 128, 256})
      for (int k : {32, 64, 128})
        tasks.push_back("batch_matmul:" + param_text("b", b) + "," + param_text("m", mn) + "," +
                        param_text("n", mn) + "," + param_text("k", k));
  return tasks;
}

// ---- ONNX ----

// Gemm: Y = alpha * A' B' + beta * C. A constant B' becomes a dense layer's weight with
// alpha folded in, a C along the columns its bias; anything else is spelled out.
void onnx_gemm(OnnxNode& node) {
  int a = node.input(0), b = node.input(1);
  if (node.shape(a).size() != 2 || node.shape(b).size() != 2) node.fail("A and B must be 2-D");
  auto transposed = [&](int v) { return node.emit(OpKind::Transpose, {v}, {{"perm", {1, 0}}}); };
  if (node.int_attr("transA", 0)) a = transposed(a);
  if (node.int_attr("transB", 0)) b = transposed(b);
  double alpha = node.float_attr("alpha", 1.0), beta = node.float_attr("beta", 1.0);
  auto scalar = [&](double v) { return node.constant({DType::F32, {1}, {v}}); };
  int y;
  if (node.known(b)) {
    if (alpha != 1.0) b = node.emit(OpKind::Mul, {b, scalar(alpha)});
    y = node.emit(OpKind::Dense, {a, b});
  } else {
    y = node.emit(OpKind::MatMul, {a, b});
    if (alpha != 1.0) y = node.emit(OpKind::Mul, {y, scalar(alpha)});
  }
  if (node.has_input(2)) {  // a C along the columns fuses as the dense layer's bias
    int c = node.input(2);
    if (beta != 1.0) c = node.emit(OpKind::Mul, {c, scalar(beta)});
    y = node.emit(OpKind::Add, {y, c});
  }
  node.set_output(0, y);
}

// numpy's matmul: a vector is a matrix of one row (on the left) or one column (on the
// right) whose dim is dropped from the result; batch dims broadcast. A product whose
// batches the tasks cannot read as they are (a broadcast left operand, or batches that
// both broadcast) has its operands expanded to the common batch first.
void onnx_matmul(OnnxNode& node) {
  int a = node.input(0), b = node.input(1);
  Shape as = node.shape(a), bs = node.shape(b);
  if (as.empty() || bs.empty()) node.fail("scalar operands");
  auto reshaped = [&](int v, const Shape& shape) {
    return node.emit(OpKind::Reshape, {v}, {{"shape", shape}});
  };
  if (as.size() == 1) a = reshaped(a, {1, as[0]});
  if (bs.size() == 1) b = reshaped(b, {bs[0], 1});
  int y;
  if (node.known(b) && node.shape(b).size() == 2 && !node.known(a)) {
    y = node.emit(OpKind::Dense, {a, b});
  } else {
    Shape ab = node.shape(a), bb = node.shape(b);
    Shape a_batch(ab.begin(), ab.end() - 2), b_batch(bb.begin(), bb.end() - 2), batch;
    try {
      batch = broadcast_shapes(a_batch, b_batch);
    } catch (const Error& e) {
      node.fail(e.what());
    }
    auto expanded = [&](int v, const Shape& have, const Shape& shape) {
      if (element_count(have) == element_count(batch)) return v;
      Shape full = batch;
      full.insert(full.end(), shape.end() - 2, shape.end());
      return node.emit(OpKind::Expand, {v}, {{"shape", full}});
    };
    if (element_count(b_batch) > 1) a = expanded(a, a_batch, ab), b = expanded(b, b_batch, bb);
    y = node.emit(OpKind::MatMul, {a, b});
  }
  if (as.size() == 1 || bs.size() == 1) {
    Shape out = node.shape(y);
    if (bs.size() == 1) out.pop_back();
    if (as.size() == 1) out.erase(out.end() - (bs.size() == 1 ? 1 : 2));
    y = reshaped(y, out);
  }
  node.set_output(0, y);
}

// Einsum: the equations that are a (batched) matrix product, possibly with one operand
// transposed, e.g. "bhid,bhjd->bhij" (attention scores) or "bij,bjk->bik".
void onnx_einsum(OnnxNode& node) {
  std::string eq = node.string_attr("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t comma = eq.find(','), arrow = eq.find("->");
  if (node.input_count() != 2 || comma == std::string::npos || arrow == std::string::npos)
    node.fail("equation '" + eq + "' is not a product of two operands");
  std::string x = eq.substr(0, comma), y = eq.substr(comma + 1, arrow - comma - 1),
              z = eq.substr(arrow + 2);
  size_t rank = z.size();
  if (x.size() != rank || y.size() != rank || rank < 2 ||
      x.substr(0, rank - 2) != z.substr(0, rank - 2) ||
      y.substr(0, rank - 2) != z.substr(0, rank - 2))
    node.fail("equation '" + eq + "' is not a batched matrix product");
  char i = z[rank - 2], j = z[rank - 1];
  std::string xm = x.substr(rank - 2), ym = y.substr(rank - 2);
  char k = xm[0] == i ? xm[1] : xm[0];
  auto oriented = [&](int v, const std::string& have, char first, char second) {
    if (have == std::string{first, second}) return v;
    if (have != std::string{second, first}) node.fail("equation '" + eq + "' is not supported");
    std::vector<int64_t> perm;
    for (size_t d = 0; d < rank; ++d) perm.push_back(int64_t(d));
    std::swap(perm[rank - 1], perm[rank - 2]);
    return node.emit(OpKind::Transpose, {v}, {{"perm", perm}});
  };
  int a = oriented(node.input(0), xm, i, k), b = oriented(node.input(1), ym, k, j);
  node.set_output(0, node.emit(OpKind::MatMul, {a, b}));
}

}  // namespace

void register_matmul_family(OpRegistry& r) {
  OpDef dense;
  dense.kind = OpKind::Dense;
  dense.min_inputs = 2, dense.max_inputs = 3;
  dense.infer = infer_dense;
  dense.reference = reference_dense;
  dense.task = dense_task;
  r.ops.push_back(dense);
  OpDef matmul = dense;
  matmul.kind = OpKind::MatMul;
  matmul.max_inputs = 2;
  matmul.infer = infer_matmul;
  matmul.reference = reference_matmul;
  matmul.task = matmul_task;
  r.ops.push_back(matmul);

  std::vector<ParamSchema> mnk = {{"m", ""}, {"n", ""}, {"k", ""}};
  ParamSchema cols{"cols", "", {}, ParamSchema::Kind::Int, true};
  cols.same_as = "n", cols.in_prompt = false;  // the same loops, some stores guarded
  // 1: B is a constant the compiler may pack (layout.weight_block); the same loops and work
  ParamSchema constant_b{"constant_b", "0", {}, ParamSchema::Kind::Int, true, true};
  constant_b.in_prompt = false;
  // > 0: that operand is stored head-split, [b / heads, rows, heads, cols]; the same loops
  // and work, other addresses (a transpose read in place)
  ParamSchema a_heads{"a_heads", "0", {}, ParamSchema::Kind::Int, true, true};
  a_heads.in_prompt = false;
  ParamSchema b_heads = a_heads;
  b_heads.name = "b_heads";
  r.tasks.push_back({TaskKind::Matmul,
                     mnk,
                     2,
                     1,
                     nullptr,
                     build_matmul,
                     matmul_corpus,
                     {"matmul:m=24,n=36,k=20", "matmul:m=17,n=37,k=13+relu"}});
  r.tasks.push_back({TaskKind::Dense,
                     {mnk[0], mnk[1], mnk[2], cols},
                     2,
                     1,
                     validate_dense,
                     build_matmul,
                     dense_corpus,
                     {"dense:m=8,n=48,k=30+bias+gelu", "dense:m=5,n=96,k=24,cols=83+bias+gelu"}});
  r.tasks.push_back(
      {TaskKind::BatchMatmul,
       {{"b", ""}, {"m", ""}, {"n", ""}, {"k", ""}, constant_b, a_heads, b_heads},
       3,
       2,
       validate_batch_matmul,
       build_batch_matmul,
       batch_matmul_corpus,
       {"batch_matmul:b=3,m=12,n=16,k=10", "batch_matmul:b=2,m=7,n=32,k=12,constant_b=1",
        "batch_matmul:b=6,m=7,n=16,k=12,a_heads=3,b_heads=6"}});

  r.onnx.push_back({"Gemm", onnx_gemm});
  r.onnx.push_back({"MatMul", onnx_matmul});
  r.onnx.push_back({"Einsum", onnx_einsum});
}

}  // namespace tlm
