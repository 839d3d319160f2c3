// One small task of every operator kind and variant, shared by tests that sweep them all.
#pragma once

#define TLM_EVERY_OP_KIND                                                                          \
  "matmul:m=24,n=36,k=20", "dense:m=8,n=48,k=30+bias+gelu", "batch_matmul:b=3,m=12,n=16,k=10",     \
      "conv2d:n=1,c=6,h=10,w=9,k=8,r=3,s=3,stride=1,pad=1+bias+relu",                              \
      "conv2d:n=2,c=4,h=9,w=9,k=6,r=3,s=3,stride=2,pad=1,dilation=2,groups=2+add",                 \
      "dwconv2d:n=1,c=8,h=10,w=10,r=3,s=3,stride=2,pad=1+bias+relu6",                              \
      "pool2d:kind=max,n=1,c=4,h=12,w=12,r=3,s=3,stride=2,pad=1",                                  \
      "pool2d:kind=avg,n=1,c=4,h=8,w=8,r=2,s=2,stride=2", "global_pool:kind=avg,n=2,c=12,h=7,w=7", \
      "softmax:rows=24,cols=40", "layernorm:rows=12,cols=48", "rmsnorm:rows=12,cols=40+mul",       \
      "reduce:kind=max,rows=20,cols=30", "elementwise:rows=16,cols=24+sigmoid+silu+tanh",          \
      "channel_scale:n=2,c=6,h=5,w=7+relu"
