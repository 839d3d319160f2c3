#include "lang/vocabulary.h"

#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

// Every word of the language, in id order. APPEND ONLY: a word's id is its place here, and
// checkpoints and datasets hold ids, so words are only ever added at the end (a test
// checks that every word the operators, task kinds and the space can need is here, and
// that the first 218, the language of the first shipped models, never change).
// clang-format off
const char* const kWords[] = {
    // the language of the first models (218 words, hash ece5b0700eaa4864)
    "<pad>", "<bos>", "<eos>", ";", "#", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "~0",
    "~1", "~2", "~3", "~4", "~5", "~6", "~7", "~8", "~9", "~10", "~11", "~12", "~13", "~14",
    "~15", "~16", "~17", "~18", "~19", "~20", "~21", "~22", "~23", "~24", "~25", "~26", "~27",
    "~28", "~29", "~30", "~31", "~32", "~33", "~34", "~35", "~36", "~37", "~38", "~39", "~40",
    "~41", "~42", "~43", "~44", "~45", "~46", "~47", "~48", "~49", "~50", "~51", "~52", "~53",
    "~54", "~55", "~56", "~57", "~58", "~59", "~60", "~61", "~62", "~63", "isa", "vector_bits",
    "cores", "l1d_kb", "l2_kb", "l3_kb", "x86-64", "x86-64-avx2", "x86-64-avx512", "f32",
    "op:matmul", "op:dense", "op:batch_matmul", "op:conv2d", "op:dwconv2d", "op:pool2d",
    "op:global_pool", "op:softmax", "op:layernorm", "op:rmsnorm", "op:reduce", "op:elementwise",
    "op:channel_scale", "m", "n", "k", "b", "c", "h", "w", "r", "s", "stride", "pad", "dilation",
    "groups", "kind", "rows", "cols", "max", "avg", "sum", "mean", "+bias", "+relu", "+relu6",
    "+gelu", "+silu", "+sigmoid", "+tanh", "+add", "+mul", "stage:output", "stage:anchor",
    "stage:reduction", "stage:producer", "loops", "rloops", "speed:best", "speed:near",
    "speed:mid", "speed:slow", "layout.weight_block", "out.tile1.d0", "out.tile2.d0",
    "out.tile1.d1", "out.tile2.d1", "out.tile1.d2", "out.tile2.d2", "out.tile1.d3",
    "out.tile2.d3", "out.tile1.d4", "out.tile2.d4", "out.tile1.d5", "out.tile2.d5",
    "out.vector_dim", "out.vector_width", "out.unroll", "out.parallel", "acc.location",
    "acc.vector_width", "acc.reduction_order", "acc.unroll_reduction", "acc.rsplit.r0",
    "acc.rsplit.r1", "acc.rsplit.r2", "acc.rsplit.r3", "acc.rsplit.r4", "acc.rsplit.r5",
    "src.location", "src.vector_width", "src.reduction_order", "src.unroll_reduction",
    "src.rsplit.r0", "src.rsplit.r1", "src.rsplit.r2", "src.rsplit.r3", "src.rsplit.r4",
    "src.rsplit.r5", "rowmax.location", "rowmax.vector_width", "rowmax.reduction_order",
    "rowmax.unroll_reduction", "rowmax.rsplit.r0", "rowmax.rsplit.r1", "rowmax.rsplit.r2",
    "rowmax.rsplit.r3", "rowmax.rsplit.r4", "rowmax.rsplit.r5", "rowsum.location",
    "rowsum.vector_width", "rowsum.reduction_order", "rowsum.unroll_reduction",
    "rowsum.rsplit.r0", "rowsum.rsplit.r1", "rowsum.rsplit.r2", "rowsum.rsplit.r3",
    "rowsum.rsplit.r4", "rowsum.rsplit.r5", "rowvar.location", "rowvar.vector_width",
    "rowvar.reduction_order", "rowvar.unroll_reduction", "rowvar.rsplit.r0", "rowvar.rsplit.r1",
    "rowvar.rsplit.r2", "rowvar.rsplit.r3", "rowvar.rsplit.r4", "rowvar.rsplit.r5",
    "rowsq.location", "rowsq.vector_width", "rowsq.reduction_order", "rowsq.unroll_reduction",
    "rowsq.rsplit.r0", "rowsq.rsplit.r1", "rowsq.rsplit.r2", "rowsq.rsplit.r3",
    "rowsq.rsplit.r4", "rowsq.rsplit.r5",
    // operators added with the registry: epilogue masks, pooling and norm parameters,
    // reduction kinds, elementwise operators
    "@", "pad_w", "ceil", "count_pad", "eps", "min", "l2", "+gelu_erf", "+exp", "+log", "+sqrt",
    "+reciprocal", "+neg", "+abs", "+erf", "+softplus", "+hardswish", "+hardsigmoid", "+not",
    "+sub", "+rsub", "+div", "+rdiv", "+pow", "+rpow", "+min", "+max", "+mod", "+rmod",
    "+leakyrelu", "+rleakyrelu", "+equal", "+less", "+rless", "+greater", "+rgreater",
    // data-movement tasks: concat, slice, pad, gather
    "op:concat", "op:slice", "op:pad", "op:gather", "outer", "inner", "p0", "p1", "p2", "p3",
    "p4", "p5", "p6", "p7", "d0", "d1", "d2", "d3", "o0", "o1", "o2", "o3", "s0", "s1", "s2",
    "s3", "t0", "t1", "t2", "t3", "b0", "b1", "b2", "b3", "e0", "e1", "e2", "e3", "mode",
    "constant", "reflect", "edge", "value",
    // elementwise chains over rank-4 views
    "op:broadcast",
    // resize
    "op:resize", "oh", "ow", "coord", "round", "nearest", "linear",
    "half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn",
    "round_prefer_floor", "round_prefer_ceil", "floor",
    // transpose tasks
    "op:transpose",
    // where of activations, expand and tile of activations (broadcast reads)
    "+keep_where", "+rkeep_where", "+keep_unless", "+rkeep_unless", "x0", "x1", "x2", "x3",
    // channel-blocked activations of convolutions
    "in_block", "out_block", "block",
    // Winograd transforms (their schedule is fixed: the model never writes one)
    "op:winograd_in", "op:winograd_out",
    // a depthwise convolution computed inside the 1x1 convolution that reads it
    "dw_r", "dw_stride",
};
// clang-format on

}  // namespace

const Vocabulary& Vocabulary::get() {
  static const Vocabulary vocabulary;
  return vocabulary;
}

Vocabulary::Vocabulary() {
  for (const char* word : kWords) {
    if (ids_.count(word))
      throw Error("tensor language: word '" + std::string(word) + "' is listed twice");
    ids_[word] = static_cast<int>(tokens_.size());
    tokens_.push_back(word);
  }
  pad_ = id("<pad>"), bos_ = id("<bos>"), eos_ = id("<eos>");
  separator_ = id(";"), number_end_ = id("#");
  digit0_ = id("0");
  magnitude0_ = id("~0");
  speed0_ = id("speed:best");
  mask_ = id("@");
}

int Vocabulary::id(const std::string& token) const {
  auto it = ids_.find(token);
  if (it == ids_.end()) throw Error("tensor language: no token '" + token + "'");
  return it->second;
}

const std::string& Vocabulary::text(int id) const {
  if (id < 0 || id >= size())
    throw Error("tensor language: token id " + std::to_string(id) + " out of range");
  return tokens_[id];
}

int Vocabulary::magnitude(int64_t value) const {
  if (value < 0) throw Error("tensor language: negative number " + std::to_string(value));
  int bits = 0;
  for (uint64_t v = uint64_t(value); v; v >>= 1) ++bits;
  return magnitude0_ + bits;
}

void Vocabulary::append_number(int64_t value, std::vector<int>& out) const {
  out.push_back(magnitude(value));
  for (char c : std::to_string(value)) out.push_back(digit(c - '0'));
  out.push_back(number_end_);
}

std::string Vocabulary::hash() const {
  return prefix_hash(size());
}

std::string Vocabulary::prefix_hash(int words) const {
  return hash_hex(join(std::vector<std::string>(tokens_.begin(), tokens_.begin() + words), "\n"));
}

int Vocabulary::prefix_with_hash(const std::string& hash) const {
  for (int n = size(); n > 0; --n)
    if (prefix_hash(n) == hash) return n;
  return -1;
}

}  // namespace tlm
