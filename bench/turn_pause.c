// Does the pause before a turn slow the runs after it? `tlm bench model --peers` sleeps
// 200 ms before each system's turn (one untimed run, then timed runs) so that the peers'
// spinning threads go idle; this times a compiled model after four kinds of pause,
// interleaved in a shuffled order every round:
//   sleep      usleep: every thread idle, the vCPUs may halt
//   busy-main  the calling thread spins, the pool's workers sleep
//   busy-both  the calling thread and a helper thread spin (both vCPUs busy)
//   none       no pause
// Each turn: the pause, one untimed run, three timed runs. Prints min/p25/median/p75 ms.
//
//   gcc -O2 -I src/capi bench/turn_pause.c -o /tmp/turn_pause -L build/src/capi
//       -ltlm_runtime -lpthread -Wl,-rpath,$PWD/build/src/capi      (one line)
//   /tmp/turn_pause ARTIFACT [ROUNDS=60] [PAUSE_MS=200]
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tlm_runtime.h"

enum { kKinds = 4, kTimed = 3 };
static const char* const kNames[kKinds] = {"sleep", "busy-main", "busy-both", "none"};
static atomic_int helper_spins;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void spin_for(double ms) {
  double start = now_ms();
  while (now_ms() - start < ms) {
  }
}

static void* helper(void* unused) {
  (void)unused;
  for (;;) {
    while (!atomic_load(&helper_spins)) usleep(1000);
    while (atomic_load(&helper_spins)) {
    }
  }
  return NULL;
}

static void pause_before_turn(int kind, double ms) {
  if (kind == 0) usleep((useconds_t)(ms * 1000));
  if (kind == 1) spin_for(ms);
  if (kind == 2) {
    atomic_store(&helper_spins, 1);
    spin_for(ms);
    atomic_store(&helper_spins, 0);
  }
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc < 2) return fprintf(stderr, "usage: turn_pause ARTIFACT [ROUNDS] [PAUSE_MS]\n"), 2;
  int rounds = argc > 2 ? atoi(argv[2]) : 60;
  double pause_ms = argc > 3 ? atof(argv[3]) : 200;
  tlm_model* model = tlm_open(argv[1]);
  if (!model || rounds < 1 || tlm_num_inputs(model) > 16 || tlm_num_outputs(model) > 16)
    return fprintf(stderr, "turn_pause: %s\n", model ? "bad arguments" : tlm_last_error()), 1;
  void* inputs[16];
  float* outputs[16];
  tlm_tensor_info info;
  for (size_t i = 0; i < tlm_num_inputs(model); ++i) {
    tlm_input_info(model, i, &info);
    inputs[i] = calloc(info.elements, info.element_size);
  }
  for (size_t o = 0; o < tlm_num_outputs(model); ++o) {
    tlm_output_info(model, o, &info);
    outputs[o] = calloc(info.elements, sizeof(float));
  }
  pthread_t thread;
  pthread_create(&thread, NULL, helper, NULL);
  double* ms[kKinds];
  int count[kKinds] = {0};
  for (int k = 0; k < kKinds; ++k) ms[k] = malloc(sizeof(double) * (size_t)(rounds * kTimed));
  srand(1);
  for (int r = 0; r < rounds; ++r) {
    int order[kKinds] = {0, 1, 2, 3};
    for (int i = kKinds - 1; i > 0; --i) {
      int j = rand() % (i + 1), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    for (int k = 0; k < kKinds; ++k) {
      int kind = order[k];
      pause_before_turn(kind, pause_ms);
      if (tlm_run(model, (const void* const*)inputs, outputs) != 0)
        return fprintf(stderr, "turn_pause: %s\n", tlm_last_error()), 1;
      for (int t = 0; t < kTimed; ++t) {
        double start = now_ms();
        tlm_run(model, (const void* const*)inputs, outputs);
        ms[kind][count[kind]++] = now_ms() - start;
      }
    }
  }
  for (int k = 0; k < kKinds; ++k) {
    int n = count[k];
    qsort(ms[k], (size_t)n, sizeof(double), by_value);
    printf("%-10s min %7.2f p25 %7.2f median %7.2f p75 %7.2f ms (%d runs)\n", kNames[k], ms[k][0],
           ms[k][n / 4], ms[k][n / 2], ms[k][3 * n / 4], n);
  }
  return 0;
}
