import json, sys, math
for f in sys.argv[1:]:
    d = json.load(open(f))
    out = []; logs = []
    for t in d['tasks']:
        m = t['methods']; base = [k for k in m if k != 'tlm-1'][0]
        r = m[base]['median_ms'] / m['tlm-1']['median_ms']; logs.append(math.log(r))
        out.append('%s %.2f' % (t['task'].split(':')[0][:7], r))
    print(f.split('/')[-1], 'geomean %.3f |' % math.exp(sum(logs)/len(logs)), ', '.join(out))
