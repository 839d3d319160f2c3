/* tlm runtime: the C API for running a model compiled by `tlm compile`.
 *
 * An artifact is a folder (model.so, plan.json, weights.bin). Open it once, ask what it
 * takes and gives, then run it as often as you like, from any number of threads at once:
 *
 *   tlm_model* m = tlm_open("out/resnet50");
 *   if (!m) { fprintf(stderr, "%s\n", tlm_last_error()); return 1; }
 *   const float* in[] = {image};   float* out[] = {scores};
 *   if (tlm_run(m, (const void* const*)in, out) != 0) fprintf(stderr, "%s\n", tlm_last_error());
 *   tlm_close(m);
 *
 * Buffers are the caller's: inputs are read in place, outputs are written in place. Every
 * failure returns NULL or -1 and leaves a one-line message in tlm_last_error(); nothing
 * aborts the process. Link with `pkg-config --libs tlm_runtime` (shared or static); the
 * library needs neither libtorch nor Halide, only what model.so itself needs (libc).
 *
 * Opening an artifact loads and runs its model.so: open only artifacts you trust. Its
 * files are checked against the sizes and hashes recorded at compile time, which catches
 * corruption, not a forger. An artifact runs the instructions of the CPU it was compiled
 * for (`tlm run` warns when the machine differs).
 */
#ifndef TLM_RUNTIME_H
#define TLM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TLM_RUNTIME_BUILD)
#define TLM_API __attribute__((visibility("default")))
#else
#define TLM_API
#endif

/* The element type of a tensor as the caller holds it. Outputs are always float32;
 * integer and bool inputs (token ids, masks) are given as such and converted on the way
 * in (exactly, for magnitudes below 2^24). */
typedef enum tlm_dtype { TLM_FLOAT32 = 0, TLM_INT64 = 1, TLM_BOOL = 2 } tlm_dtype;

/* One input or output. `name` and `shape` stay valid until the model is closed. */
typedef struct tlm_tensor_info {
  const char* name;
  tlm_dtype dtype;
  size_t element_size; /* bytes per element: 4, 8 or 1 */
  int rank;
  const int64_t* shape; /* `rank` extents, outermost first (row-major) */
  size_t elements;      /* product of the extents */
} tlm_tensor_info;

typedef struct tlm_model tlm_model;

/* Loads the artifact folder `dir`. Returns NULL when a file is missing, corrupt or
 * inconsistent (see tlm_last_error()). */
TLM_API tlm_model* tlm_open(const char* dir);

/* Frees the model. Call it once no run of it is in flight. NULL is ignored. */
TLM_API void tlm_close(tlm_model* model);

TLM_API size_t tlm_num_inputs(const tlm_model* model);
TLM_API size_t tlm_num_outputs(const tlm_model* model);

/* Fills `info` for input (or output) `index`; returns 0, or -1 for an index out of range. */
TLM_API int tlm_input_info(const tlm_model* model, size_t index, tlm_tensor_info* info);
TLM_API int tlm_output_info(const tlm_model* model, size_t index, tlm_tensor_info* info);

/* Runs the model once. `inputs[i]` points to input i's `elements` values of its dtype,
 * row-major; `outputs[o]` to room for output o's `elements` floats. Safe to call from
 * several threads at once on one model (each run gets activation memory of its own).
 * Returns 0, or -1 (see tlm_last_error()). */
TLM_API int tlm_run(const tlm_model* model, const void* const* inputs, float* const* outputs);

/* The message of this thread's last failed call, one line; "" when there was none. */
TLM_API const char* tlm_last_error(void);

/* The runtime's version, "major.minor.patch". */
TLM_API const char* tlm_version(void);

#ifdef __cplusplus
}
#endif

#endif /* TLM_RUNTIME_H */
