set -x
nvidia-smi -L > $OUT/device.txt 2>&1; which compute-sanitizer >> $OUT/device.txt 2>&1
python3 -c "import tqdm" >> $OUT/device.txt 2>&1
S=$(date +%s)
timeout 85 python3 -m pyoxide bench --reps 10 --warmup 2 --json > $OUT/bench.json 2> $OUT/bench.log
echo "bench done $(( $(date +%s) - S )) s"
timeout 42 python3 scripts/bench_kernels --log2n 26 --reps 10 --warmup 2 > $OUT/bench_kernels.txt 2>&1
echo "bench_kernels done $(( $(date +%s) - S )) s"
timeout 58 python3 -m pyoxide verify --backend cupy --json > $OUT/verify_cupy.json 2> $OUT/verify_cupy.log &
timeout 58 python3 -m pyoxide verify tests/fixtures/wrong_kernels/prebuilt/wrong_kernels.manifest.json --backend cupy --sanitize --sanitize-timeout 45 --cases 24 --json > $OUT/wrong_sanitize.json 2> $OUT/wrong_sanitize.log &
timeout 58 python3 -m pyoxide verify --backend cupy --sanitize --sanitize-timeout 45 --cases 6 --json > $OUT/bundled_sanitize.json 2> $OUT/bundled_sanitize.log &
wait
echo "all done $(( $(date +%s) - S )) s"
tail -5 $OUT/bench_kernels.txt; tail -3 $OUT/bench.log
python3 -c "
import json,sys
for f in ['verify_cupy','wrong_sanitize','bundled_sanitize']:
    try:
        r=json.load(open('$OUT/'+f+'.json')); print(f, r['ok'], [(k['kernel'],k['ok'],k['cases']) for k in r['kernels'] if not k['ok']], r['sanitizer'] and [(t['tool'],t['errors'],t['by_kernel']) for t in r['sanitizer']['tools']])
    except Exception as e: print(f, 'ERR', e)
"
