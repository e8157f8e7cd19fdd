"""A/B of two builds (twentieth session): greedy_select of the schur family with pseudo, random and
optimal, m = 4,000, k = 200, alternating processes. `python docs/bench/s20_ab_pseudo.py OTHER_PKG ROUNDS`
with OTHER_PKG an unpacked wheel of the other build (see benches/compare_builds.py). Output:
fit_pseudo_ab_s20.md."""
import json, subprocess, sys, os
WORKER = r'''
import json, sys, time, numpy as np
from gkfda import _core
m, k = 4000, 200
rng = np.random.default_rng(0)
X = rng.normal(size=(m, 20)); y = X[:, 0] + np.sin(X[:, 1]) > 0
order = np.argsort(~y, kind="stable"); X, y = X[order], y[order]
K = _core.kernel_matrix(X, kernel="rbf", gamma=1/20, n_threads=2)
out = {}
for crit, defl, S in json.loads(sys.argv[1]):
    times = []
    for _ in range(3):
        t = time.perf_counter(); idx, _, passes = _core.greedy_select(K, y, k, criterion=crit, deflation=defl, stages=S, seed=1, n_threads=2); times.append(time.perf_counter() - t)
    out[f"{crit} {defl} {S}"] = (sorted(times)[1], passes, int(np.asarray(idx, dtype=np.int64) @ np.arange(1, len(idx) + 1)))
print(json.dumps(out))
'''
cases = [("pseudo", "schur", 1), ("pseudo", "ortho-schur", 1), ("random", "schur", 1), ("pseudo", "schur", 10), ("optimal", "schur", 1)]
def run(path):
    env = dict(os.environ)
    if path: env["PYTHONPATH"] = path
    r = subprocess.run([sys.executable, "-c", WORKER, json.dumps(cases)], capture_output=True, text=True, env=env, cwd="/tmp")
    return json.loads(r.stdout)
other = sys.argv[1]; rounds = int(sys.argv[2])
res = {c: [] for c in (f"{a} {b} {s}" for a, b, s in cases)}
for r in range(rounds):
    if r % 2 == 0:  # the order alternates from round to round
        a = run(other); b = run(None)
    else:
        b = run(None); a = run(other)
    for c in res:
        res[c].append((a[c], b[c]))
import statistics
print("| case | before (ms) | after (ms) | speed-up | passes before / after | same picks |")
print("|---|---|---|---|---|---|")
for c, pairs in res.items():
    ratios = [x[0] / y[0] for x, y in pairs]
    print(f"| {c} | {statistics.median(x[0] for x, _ in pairs)*1e3:.0f} | {statistics.median(y[0] for _, y in pairs)*1e3:.0f} | "
          f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) | {pairs[0][0][1]} / {pairs[0][1][1]} | "
          f"{all(x[2] == y[2] for x, y in pairs)} |")
