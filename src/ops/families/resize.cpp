// The resize family: images scaled to another height and width.
//   graph op: resize(x [N,C,H,W]), attributes oh, ow, mode (0 nearest, 1 linear), coord
//             (how an output pixel maps into the input: 0 half_pixel, 1 asymmetric,
//             2 align_corners, 3 pytorch_half_pixel, 4 tf_half_pixel_for_nn) and round
//             (nearest's rounding: 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor,
//             3 ceil), ONNX's semantics
//   task:     resize (the same parameters, as words)
//   ONNX:     Resize (opset 11+: scales or sizes of the spatial dims), Upsample
#include <cmath>

#include "ops/family.h"
#include "ops/pipeline_builder.h"
#include "util/error.h"

namespace tlm {
namespace {

const std::vector<std::string> kModes = {"nearest", "linear"};
const std::vector<std::string> kCoords = {"half_pixel", "asymmetric", "align_corners",
                                          "pytorch_half_pixel", "tf_half_pixel_for_nn"};
const std::vector<std::string> kRounds = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};

// Where output index `o` of an axis of `in` -> `out` falls in the input.
double source_coordinate(int coord, double o, int64_t in, int64_t out) {
  double scale = double(out) / double(in);
  switch (coord) {
    case 1:
      return o / scale;
    case 2:
      return out > 1 ? o * double(in - 1) / double(out - 1) : 0.0;
    case 3:
      return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    case 4:
      return (o + 0.5) / scale;
    default:
      return (o + 0.5) / scale - 0.5;
  }
}

// Output index o's source coordinate as an exact fraction num / den (den > 0), so that
// nearest rounding at exact halves is the same in every implementation.
template <class T>
std::pair<T, T> source_fraction(int coord, const T& o, int64_t in, int64_t out) {
  switch (coord) {
    case 1:
      return {o * T(int(in)), T(int(out))};
    case 2:
      return {out > 1 ? o * T(int(in - 1)) : o * T(0), T(int(out > 1 ? out - 1 : 1))};
    case 3:
      return {out > 1 ? (2 * o + 1) * T(int(in)) - T(int(out)) : o * T(0), T(int(2 * out))};
    case 4:
      return {(2 * o + 1) * T(int(in)), T(int(2 * out))};
    default:
      return {(2 * o + 1) * T(int(in)) - T(int(out)), T(int(2 * out))};
  }
}

// floor(a / b) for b > 0, on integers or Halide ints (whose division already floors).
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
Halide::Expr floor_div(const Halide::Expr& a, const Halide::Expr& b) {
  return a / b;
}

int64_t clamp_index(int64_t i, int64_t in) {
  return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1);
}
Halide::Expr clamp_index(const Halide::Expr& i, int64_t in) {
  return Halide::clamp(i, 0, int(in - 1));
}

// The nearest source index of output index o, clamped into the input.
template <class T>
T nearest_source(int round, int coord, const T& o, int64_t in, int64_t out) {
  auto [num, den] = source_fraction(coord, o, in, out);
  T index = round == 2   ? floor_div(num, den)
            : round == 3 ? T(0) - floor_div(T(0) - num, den)
            : round == 1 ? floor_div(2 * num + den, 2 * den)          // floor(v + 1/2)
                         : T(0) - floor_div(den - 2 * num, 2 * den);  // ceil(v - 1/2)
  return clamp_index(index, in);
}

struct ResizeAttrs {
  int64_t oh, ow, mode, coord, round;
};

ResizeAttrs resize_attrs(const OpCall& c) {
  ResizeAttrs a{c.attr("oh", 0), c.attr("ow", 0), c.attr("mode", 0), c.attr("coord", 0),
                c.attr("round", 0)};
  if (a.oh < 1 || a.ow < 1) c.fail("output size must be >= 1");
  if (a.mode < 0 || a.mode > 1 || a.coord < 0 || a.coord > 4 || a.round < 0 || a.round > 3)
    c.fail("unknown mode, coordinate transform or rounding");
  return a;
}

Shape infer_resize(const OpCall& c) {
  const Shape& x = c.inputs[0];
  if (x.size() != 4) c.fail("wants [N,C,H,W]");
  ResizeAttrs a = resize_attrs(c);
  return {x[0], x[1], a.oh, a.ow};
}

TensorValue reference_resize(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const Shape& x = c.inputs[0];
  ResizeAttrs a = resize_attrs(c);
  TensorValue out = TensorValue::filled(in[0]->dtype, infer_resize(c), 0.0);
  int64_t h = x[2], w = x[3];
  for (int64_t plane = 0; plane < x[0] * x[1]; ++plane)
    for (int64_t y = 0; y < a.oh; ++y)
      for (int64_t z = 0; z < a.ow; ++z) {
        double sy = source_coordinate(int(a.coord), double(y), h, a.oh);
        double sz = source_coordinate(int(a.coord), double(z), w, a.ow);
        const double* p = in[0]->data.data() + plane * h * w;
        double v;
        if (a.mode == 0) {
          v = p[nearest_source<int64_t>(int(a.round), int(a.coord), y, h, a.oh) * w +
                nearest_source<int64_t>(int(a.round), int(a.coord), z, w, a.ow)];
        } else {
          sy = std::min(std::max(sy, 0.0), double(h - 1)),
          sz = std::min(std::max(sz, 0.0), double(w - 1));
          int64_t y0 = int64_t(sy), z0 = int64_t(sz), y1 = std::min(y0 + 1, h - 1),
                  z1 = std::min(z0 + 1, w - 1);
          double fy = sy - y0, fz = sz - z0;
          v = (p[y0 * w + z0] * (1 - fz) + p[y0 * w + z1] * fz) * (1 - fy) +
              (p[y1 * w + z0] * (1 - fz) + p[y1 * w + z1] * fz) * fy;
        }
        out.data[size_t((plane * a.oh + y) * a.ow + z)] = v;
      }
  return out;
}

AnchorTask resize_task(const OpCall& c) {
  const Shape& x = c.inputs[0];
  ResizeAttrs a = resize_attrs(c);
  std::string spec =
      "resize:mode=" + kModes[size_t(a.mode)] + ",coord=" + kCoords[size_t(a.coord)] +
      ",n=" + std::to_string(x[0]) + ",c=" + std::to_string(x[1]) + ",h=" + std::to_string(x[2]) +
      ",w=" + std::to_string(x[3]) + ",oh=" + std::to_string(a.oh) + ",ow=" + std::to_string(a.ow);
  if (a.mode == 0) spec += ",round=" + kRounds[size_t(a.round)];
  return {spec, {0}, -1, {x[0], x[1], a.oh, a.ow}};
}

// ---- task ----

int word_index(const std::vector<std::string>& words, const std::string& w) {
  return int(std::find(words.begin(), words.end(), w) - words.begin());
}

// source_coordinate as a Halide expression of the output index.
Halide::Expr source_expr(int coord, Halide::Expr o, int64_t in, int64_t out) {
  Halide::Expr x = Halide::cast<float>(o);
  float scale = float(out) / float(in);
  switch (coord) {
    case 1:
      return x / scale;
    case 2:
      return out > 1 ? x * (float(in - 1) / float(out - 1)) : Halide::Expr(0.0f);
    case 3:
      return out > 1 ? (x + 0.5f) / scale - 0.5f : Halide::Expr(0.0f);
    case 4:
      return (x + 0.5f) / scale;
    default:
      return (x + 0.5f) / scale - 0.5f;
  }
}

void build_resize(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t n = t.get("n"), c = t.get("c"), h = t.get("h"), w = t.get("w"), oh = t.get("oh"),
          ow = t.get("ow");
  int coord = word_index(kCoords, t.word("coord"));
  Halide::ImageParam X = b.input("X", {n, c, h, w});
  auto vars = make_vars({"x", "y", "c", "n"});
  Halide::Expr sx = source_expr(coord, vars[0], w, ow), sy = source_expr(coord, vars[1], h, oh);
  Halide::Expr value;
  if (t.word("mode") == "nearest") {
    int round = word_index(kRounds, t.word("round"));
    Halide::Expr x = vars[0], y = vars[1];
    value = X(nearest_source(round, coord, x, w, ow), nearest_source(round, coord, y, h, oh),
              vars[2], vars[3]);
  } else {
    sx = Halide::clamp(sx, 0.0f, float(w - 1)), sy = Halide::clamp(sy, 0.0f, float(h - 1));
    Halide::Expr x0 = Halide::cast<int>(sx), y0 = Halide::cast<int>(sy);
    Halide::Expr x1 = Halide::min(x0 + 1, int(w - 1)), y1 = Halide::min(y0 + 1, int(h - 1));
    Halide::Expr fx = sx - Halide::cast<float>(x0), fy = sy - Halide::cast<float>(y0);
    auto at = [&](Halide::Expr xi, Halide::Expr yi) { return X(xi, yi, vars[2], vars[3]); };
    value = (at(x0, y0) * (1.0f - fx) + at(x1, y0) * fx) * (1.0f - fy) +
            (at(x0, y1) * (1.0f - fx) + at(x1, y1) * fx) * fy;
  }
  b.add_output(value, vars, {n, c, oh, ow});
  b.finish(double(n) * c * oh * ow * (t.word("mode") == "nearest" ? 1 : 8), 1);
}

void validate_resize(const TaskSpec& t) {
  if (t.word("mode") == "linear" && t.word("round") != "round_prefer_floor")
    throw Error("task spec: resize's round applies to nearest mode only");
}

std::vector<std::string> resize_corpus() {
  std::vector<std::string> tasks;
  for (int c : {32, 64, 128})
    for (int hw : {14, 28, 56}) {
      std::string dims = ",n=1,c=" + std::to_string(c) + ",h=" + std::to_string(hw) +
                         ",w=" + std::to_string(hw) + ",oh=" + std::to_string(2 * hw) +
                         ",ow=" + std::to_string(2 * hw);
      tasks.push_back("resize:mode=nearest,coord=asymmetric" + dims + ",round=floor");
      tasks.push_back("resize:mode=linear,coord=half_pixel" + dims);
    }
  return tasks;
}

// ---- ONNX ----

int word_code(OnnxNode& node, const std::string& attr, const std::string& fallback,
              const std::vector<std::string>& words) {
  std::string w = node.string_attr(attr, fallback);
  int i = word_index(words, w);
  if (i == int(words.size())) node.fail(attr + " " + w + " (not supported)");
  return i;
}

// Resize and Upsample: scales or sizes of the spatial dims of an NCHW input.
void onnx_resize(OnnxNode& node) {
  int x = node.input(0);
  Shape xs = node.shape(x);
  if (xs.size() != 4) node.fail("only NCHW inputs");
  std::string mode = node.string_attr("mode", "nearest");
  if (mode != "nearest" && mode != "linear") node.fail("mode " + mode + " (not supported)");
  Shape out;
  bool upsample = node.op_type() == "Upsample";
  int scales_input = upsample ? 1 : 2;
  if (!upsample && node.has_input(3) && node.known_input(3).size() > 0) {
    out = node.known_ints(3);
  } else if (node.has_input(scales_input) && node.known_input(scales_input).size() > 0) {
    const TensorValue& scales = node.known_input(scales_input);
    if (scales.size() != 4) node.fail("scales must have 4 values");
    for (size_t d = 0; d < 4; ++d) out.push_back(int64_t(std::floor(xs[d] * scales.data[d])));
  } else {
    node.fail("neither scales nor sizes are given");
  }
  if (out.size() != 4 || out[0] != xs[0] || out[1] != xs[1])
    node.fail("resizing the batch or channel dims (not supported)");
  if (node.int_attr("exclude_outside", 0) ||
      node.string_attr("keep_aspect_ratio_policy", "stretch") != "stretch")
    node.fail("exclude_outside or keep_aspect_ratio_policy (not supported)");
  int coord =
      upsample ? 1 : word_code(node, "coordinate_transformation_mode", "half_pixel", kCoords);
  int round =
      mode == "nearest" ? word_code(node, "nearest_mode", "round_prefer_floor", kRounds) : 0;
  if (upsample && mode == "nearest") round = 2;  // Upsample's nearest is floor(x / scale)
  node.set_output(0, node.emit(OpKind::Resize, {x},
                               {{"oh", {out[2]}},
                                {"ow", {out[3]}},
                                {"mode", {mode == "linear"}},
                                {"coord", {coord}},
                                {"round", {round}}}));
}

}  // namespace

void register_resize_family(OpRegistry& r) {
  OpDef resize;
  resize.kind = OpKind::Resize;
  resize.infer = infer_resize;
  resize.reference = reference_resize;
  resize.task = resize_task;
  r.ops.push_back(resize);
  using K = ParamSchema::Kind;
  r.tasks.push_back({TaskKind::Resize,
                     {{"mode", "", kModes, K::Word},
                      {"coord", "half_pixel", kCoords, K::Word},
                      {"n", "1"},
                      {"c", ""},
                      {"h", ""},
                      {"w", ""},
                      {"oh", ""},
                      {"ow", ""},
                      {"round", "round_prefer_floor", kRounds, K::Word, true}},
                     4,
                     1,
                     validate_resize,
                     build_resize,
                     resize_corpus,
                     {"resize:mode=nearest,coord=asymmetric,c=3,h=5,w=6,oh=10,ow=12,round=floor",
                      "resize:mode=linear,c=2,h=7,w=5,oh=11,ow=13+relu",
                      "resize:mode=linear,coord=align_corners,c=2,h=4,w=4,oh=9,ow=7",
                      "resize:mode=nearest,coord=half_pixel,c=2,h=6,w=6,oh=4,ow=9"}});
  r.onnx.push_back({"Resize", onnx_resize});
  r.onnx.push_back({"Upsample", onnx_resize});
}

}  // namespace tlm
