/* Classifies an image with a compiled ResNet-50: classify ARTIFACT IMAGE (1x3x224x224 float32) */
#include <stdio.h>
#include <tlm_runtime.h>
int main(int argc, char** argv) {
  static float image[3 * 224 * 224], scores[1000];
  FILE* file = argc == 3 ? fopen(argv[2], "rb") : NULL;
  if (!file || fread(image, sizeof image, 1, file) != 1) return 2;
  tlm_model* model = tlm_open(argv[1]);
  const void* inputs[] = {image};
  float* outputs[] = {scores};
  if (!model || tlm_run(model, inputs, outputs) != 0) return puts(tlm_last_error()), 1;
  int best = 0;
  for (int c = 1; c < 1000; ++c) best = scores[c] > scores[best] ? c : best;
  printf("class %d score %.9g\n", best, scores[best]);
  tlm_close(model);
  return 0;
}
