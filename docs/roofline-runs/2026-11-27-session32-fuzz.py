# Issue 6, session 32: mutation fuzzing of rmaop-roofline's JSON inputs through the command line, under
# AddressSanitizer + UBSan (SANITIZE=1 scripts/test.sh builds build-sanitize/ and its tests' files first).
#   python3 2026-11-27-session32-fuzz.py [CASES_PER_TARGET [SEED]]
import os, random, subprocess, sys, tempfile
W = tempfile.mkdtemp(prefix='rmaop-fuzz-')
B = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'build-sanitize'); T = f'{B}/tests/roofline'; tool = f'{B}/roofline/rmaop-roofline'
env = dict(os.environ, ASAN_OPTIONS='detect_leaks=0', UBSAN_OPTIONS='print_stacktrace=1:halt_on_error=1',
           OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1', OMPI_MCA_rmaps_base_oversubscribe='1')
rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 32)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
tok = [b'{', b'}', b'[', b']', b',', b':', b'"', b'-1', b'1e308', b'-1e308', b'0', b'null', b'true', b'nan', b'\\u0000',
       b'99999999999999999999', b'1e-320', b'""', b'[]', b'{}', b'"x"', b'\\', b'\x00', b'\xff']
def mutate(d):
    d = bytearray(d)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5); i = rng.randrange(len(d) + 1)
        if op == 0 and d: d[min(i, len(d) - 1)] = rng.randrange(256)
        elif op == 1: d[i:i + rng.randint(1, 40)] = b''
        elif op == 2: d[i:i] = rng.choice(tok)
        elif op == 3: d = d[:i]
        else:  # replace a number with an extreme
            j = d.find(b':', i)
            if j >= 0: d[j + 1:j + 1 + rng.randint(1, 12)] = rng.choice(tok)
    return bytes(d)
targets = {
  'profile': (f'{T}/profile.json', lambda f: ['run', '--trace', f'{T}/report-rma.lock.shm.trace.json', '--niter', '60', '--profile', f, '--out', f'{W}/fo', '--no-save-traces']),
  'trace': (f'{T}/report-rma.lock.shm.trace.json', lambda f: ['run', '--trace', f, '--niter', '60', '--profile', f'{T}/profile.json', '--out', f'{W}/fo']),
  'report': (f'{T}/report.json', lambda f: ['check', '--report', f, '--bench', f'{T}/bench.json']),
  'bench': (f'{T}/bench.json', lambda f: ['check', '--report', f'{T}/report.json', '--bench', f]),
  'refit': (f'{T}/profile.json', lambda f: ['refit', '--profile', f, '--out', f'{W}/refit.json']),
}
bad = 0
for name, (src, args) in targets.items():
    data = open(src, 'rb').read(); counts = {}
    for k in range(N):
        m = mutate(data); f = f'{W}/in-{name}.json'; open(f, 'wb').write(m)
        try:
            p = subprocess.run([tool] + args(f), env=env, capture_output=True, timeout=30)
            rc, out = p.returncode, (p.stdout + p.stderr).decode('utf-8', 'replace')
        except subprocess.TimeoutExpired:
            rc, out = 'timeout', ''
        counts[rc] = counts.get(rc, 0) + 1
        if rc == 'timeout' or (isinstance(rc, int) and (rc < 0 or rc >= 3)) or 'Sanitizer' in out or 'runtime error' in out \
           or (rc != 0 and 'rmaop-roofline' not in out and 'error' not in out.lower()):
            bad += 1; keep = f'{W}/bad-{name}-{k}.json'; open(keep, 'wb').write(m)
            print(f'BAD {name} case {k}: rc {rc}; kept {keep}\n' + '\n'.join(out.splitlines()[-6:]))
    print(name, 'exit codes:', counts, flush=True)
print('bad cases:', bad)
