"""CPU seconds per thread group of the JVMs on this machine (the Spark JVM, the Kafka
broker) during a contender's job: samples /proc/<pid>/task/*/stat every 0.5 s while the
command runs, and reports the span between job_start_epoch and job_end_epoch of each
BENCH_RESULT line it prints.

    python bench/thread_cpu.py python bench/contenders/kplex_insert.py --bootstrap B \\
        --source S --target T --records N --v 9
"""
from __future__ import annotations

import json, os, re, subprocess, sys, time, collections
HZ = os.sysconf('SC_CLK_TCK')
def jvms():
    out = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit(): continue
        try:
            cmd = open(f'/proc/{pid}/cmdline','rb').read().split(b'\0')
        except OSError: continue
        if cmd and cmd[0].endswith(b'java'):
            role = 'broker' if b'kafka.Kafka' in cmd else 'spark'
            out[int(pid)] = role
    return out
def group(name):
    name = re.sub(r'[#\-]?\d+$', '', name.strip())
    for p, g in [('Executor task', 'task'), ('kafka-producer', 'producer-io'), ('GC Thread', 'gc'), ('G1', 'gc'),
                 ('C2 Compiler', 'jit'), ('C1 Compiler', 'jit'), ('shuffle', 'shuffle'), ('data-plane', 'b-net'),
                 ('kafka-request', 'b-handler'), ('kafka-network', 'b-net')]:
        if name.startswith(p): return g
    return name
def sample():
    tot = collections.Counter()
    for pid, role in jvms().items():
        try:
            for tid in os.listdir(f'/proc/{pid}/task'):
                try:
                    st = open(f'/proc/{pid}/task/{tid}/stat').read()
                    comm = st[st.index('(')+1:st.rindex(')')]
                    f = st[st.rindex(')')+2:].split()
                    tot[(role, group(comm))] += (int(f[11]) + int(f[12])) / HZ
                except (OSError, ValueError): pass
        except OSError: pass
    return tot
def report(res):
    a, b = res['job_start_epoch'], res['job_end_epoch']
    s0 = max((s for s in samples if s[0] <= a), key=lambda s: s[0], default=samples[0])
    s1 = min((s for s in samples if s[0] >= b), key=lambda s: s[0], default=samples[-1])
    # threads that died are lost from later samples: use max of seen per key between
    acc = collections.Counter()
    prev = s0[1]
    for ts, s in samples:
        if ts < s0[0] or ts > s1[0]: continue
        for k in set(prev) | set(s):
            d = s.get(k, 0) - prev.get(k, 0)
            if d > 0: acc[k] += d
        prev = s
    job = res['job_s']
    print(f"job {job:.1f}s  {res['records']/job:,.0f} rec/s  spill {res.get('spill_disk_mib',0):.0f} MiB")
    total = sum(acc.values())
    for k, v in acc.most_common(14): print(f"  {k[0]:7s} {k[1]:22s} {v:6.1f} cpu-s  {v/job:4.2f} cores")
    print(f"  total {total:.1f} cpu-s = {total/job:.2f} cores")

proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, text=True)
samples = []
import threading
out = []
def reader():
    for line in proc.stdout: out.append(line)
t = threading.Thread(target=reader); t.start()
while proc.poll() is None:
    samples.append((time.time(), sample())); time.sleep(0.5)
t.join()
results=[json.loads(l[13:]) for l in out if l.startswith('BENCH_RESULT ')]
if not results: print(''.join(out[-20:])); sys.exit(1)
for res in results:
  report(res)
