"""The acceptance table of `bench/accept_models.sh` from its JSON: per model tlm's median,
tlm's median timed alone right after in the same process, the faster peer's (interleaved
and alone), the ratios by median and minimum, the ratio of the two alone medians, peak
memory over the peer's, the ceiling (the peer's median over tlm's plan at the machine's
measured peak: the most tlm_speed that plan can reach; from --report), and the batch-1
geomeans.

    python3 bench/accept_table.py "HEADER LINE" bench/results/accept_models_tlm0.json
"""
import json, math, sys
header, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
print(header)
print(f"{'model':22} {'compile_s':>9} {'tlm_med_ms':>11} {'alone_ms':>9} {'peer':>9} {'peer_med_ms':>12} {'tlm_speed(med)':>15} {'tlm_speed(min)':>15} {'peer_alone':>10} {'alone_speed':>11} {'tlm_mem':>8} {'ceiling':>8}")
b1 = []
for m in d:
    p = m['peers'][m['fastest_peer']]
    alone = f"{m['compiled_alone']['median_ms']:.2f}" if 'compiled_alone' in m else '-'
    peer_alone = f"{p['alone']['median_ms']:.2f}" if 'alone' in p else '-'
    alone_speed = f"{m['speedup_vs_fastest_peer_alone']:.2f}x" if 'alone' in p else '-'
    ceiling = f"{m['ceiling_vs_fastest_peer']:.2f}x" if 'ceiling_vs_fastest_peer' in m else '-'
    print(f"{m['model']:22} {m['compile_seconds']:9.1f} {m['compiled']['median_ms']:11.2f} {alone:>9} {m['fastest_peer']:>9} {p['median_ms']:12.2f} {m['speedup_vs_fastest_peer_median']:14.2f}x {m['speedup_vs_fastest_peer_min']:14.2f}x {peer_alone:>10} {alone_speed:>11} {m['memory_vs_fastest_peer']:7.2f}x {ceiling:>8}")
    if '_b8' not in m['model']: b1.append(m)
g = lambda k: math.exp(sum(math.log(m[k]) for m in b1) / len(b1))
line = f"geomean (batch 1): {g('speedup_vs_fastest_peer_median'):.2f}x by median, {g('speedup_vs_fastest_peer_min'):.2f}x by minimum"
if all('speedup_vs_fastest_peer_alone' in m for m in b1):
    line += f", {g('speedup_vs_fastest_peer_alone'):.2f}x timed alone"
if all('ceiling_vs_fastest_peer' in m for m in b1):
    line += f"; ceiling {g('ceiling_vs_fastest_peer'):.2f}x"
print(line)
