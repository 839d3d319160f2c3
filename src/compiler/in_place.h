// In place: a kernel whose epilogue adds an activation read at the very element it
// stores (a residual add) writes its output over that activation when nothing reads the
// activation afterwards, as ONNX Runtime's Conv+Sum fusion does. The output becomes a
// view of the operand (runtime/artifact.h): one buffer instead of two, and each element
// is read and stored at one address already in the cache, instead of a second buffer
// whose lines must first be fetched to be written.
//
// It is safe only when the kernel stores each output element once, after reading that
// element's operand: a schedule whose cache tiles all divide their loops
// (space/schedule_space.h, stores_each_output_once); a shifted last tile would read
// elements already overwritten. The compiler names, per kernel, the operand the kernel
// may store over (in_place_operand); this pass checks the tensors.
#pragma once
#include <map>
#include <string>

#include "runtime/artifact.h"

namespace tlm {

// The pipeline input the task's kernel may store its output over: an epilogue operand as
// large as the output, when the task's schedule stores each output element once; -1
// when there is none (or the task's kernel is not from the space).
int in_place_operand(const PlanTask& task);

// For each kernel step whose function `operands` names (function -> input index), makes
// the output a view of that input when the input is an activation of its own that no later
// step and no model output reads, of the output's size and slicing, read once by the step,
// and the output is neither a model output nor a view already. Returns how many.
int write_in_place(Plan& plan, const std::map<std::string, int>& operands);

}  // namespace tlm
