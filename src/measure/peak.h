// Peak: the machine's fp32 multiply-add throughput, measured rather than looked up (the
// hosts are virtual machines whose clock and datapath width differ: a Zen 4 host runs
// 512-bit FMAs on a 256-bit datapath, a Zen 5 host on a full 512-bit one). Independent
// vector FMA chains, enough to hide their latency, run on `threads` threads in the widest
// ISA the CPU has; the best of ten rounds counts. It is the ceiling a kernel's achieved
// GFLOP/s is read against (`tlm run --report`, `tlm bench model`).
#pragma once

namespace tlm {

double measure_peak_gflops(int threads);

}  // namespace tlm
