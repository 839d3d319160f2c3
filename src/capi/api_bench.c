/* tlm_api_bench ARTIFACT RUNS: times RUNS runs of a compiled model through the C API (after one
 * warm-up run) on inputs of ones, and prints "median MS min MS open MS" (runs as `tlm run --bench`
 * measures its own, with one untimed run first; tlm_open's time), for bench/api_overhead.py. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tlm_runtime.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Buffers for every input (each element 1: a valid float, token id and mask) and output. */
static int allocate(const tlm_model* model, void** inputs, float** outputs) {
  tlm_tensor_info info;
  for (size_t i = 0; i < tlm_num_inputs(model); ++i) {
    if (tlm_input_info(model, i, &info) != 0) return -1;
    void* data = inputs[i] = malloc(info.elements * info.element_size);
    for (size_t k = 0; data && k < info.elements; ++k) {
      if (info.dtype == TLM_FLOAT32) ((float*)data)[k] = 1.0f;
      if (info.dtype == TLM_INT64) ((int64_t*)data)[k] = 1;
      if (info.dtype == TLM_BOOL) ((unsigned char*)data)[k] = 1;
    }
  }
  for (size_t o = 0; o < tlm_num_outputs(model); ++o) {
    if (tlm_output_info(model, o, &info) != 0) return -1;
    outputs[o] = calloc(info.elements, sizeof(float));
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) return fprintf(stderr, "usage: tlm_api_bench ARTIFACT RUNS\n"), 2;
  int runs = atoi(argv[2]);
  double open_start = now_ms();
  tlm_model* model = tlm_open(argv[1]);
  double open_ms = now_ms() - open_start;
  void* inputs[64] = {0};
  float* outputs[64] = {0};
  if (!model || runs < 1 || tlm_num_inputs(model) > 64 || tlm_num_outputs(model) > 64 ||
      allocate(model, inputs, outputs) != 0)
    return fprintf(stderr, "tlm_api_bench: %s\n", model ? tlm_last_error() : "bad arguments"), 1;
  double* ms = malloc(sizeof(double) * (size_t)runs);
  for (int r = -1; r < runs; ++r) {
    double start = now_ms();
    if (tlm_run(model, (const void* const*)inputs, outputs) != 0)
      return fprintf(stderr, "tlm_api_bench: %s\n", tlm_last_error()), 1;
    if (r >= 0) ms[r] = now_ms() - start;
  }
  qsort(ms, (size_t)runs, sizeof(double), by_value);
  printf("median %.4f min %.4f open %.1f\n", ms[runs / 2], ms[0], open_ms);
  tlm_close(model);
  return 0;
}
