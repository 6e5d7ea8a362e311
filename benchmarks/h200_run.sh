#!/usr/bin/env bash
# The GPU run: tests with the hardware required, the probe table and the benchmarks, on an NVIDIA machine
# reached through the device tool (no network there: wheels in .whl, the Vulkan loader and GL libraries
# as Debian packages in .gl). Results go to $OUT (at most 8 files come back).
#   usage: bash benchmarks/h200_run.sh [tests | tests-a | tests-b | tests-c | tests-files] [probe] [decode] [import] [transcode] [copier]
#                                       [streams] [streams-exp] [wall] [batch] [colour] [followup] [ahead] [preroll] [procs]
#                                       [ml] [tensors] [tensors1] [tensor-ab] [tensor-switch] [tensor-toggles] [shared-submit] [shared-threaded] [nv12-merged] [cuda-tensor] [tensor-spy] [segments] [segtrans10] [cuvid] [hwaccel-tests]
#   (default: tests probe decode import transcode copier; the last four are asked for by name)
#   The suite takes about 950 s there (2026-12-05): its thirds 'tests-a', 'tests-b' and 'tests-c' in
#   three calls ('tests', the whole, no longer fits a call's 600 s).
set -u
OUT=${OUT:-/tmp/alpha2-out}; mkdir -p "$OUT" /tmp/clips
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1 XDG_RUNTIME_DIR=/tmp
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
# The runtime dependencies (pyproject.toml) the machine lacks are said first: pycountry was missing from
# .whl in the run of 2026-12-05 and one test failed for it (pip download pycountry into .whl, 8 MB).
missing=$(python3 -c 'import importlib.util as u
print(" ".join(m for m in ("av", "wgpu", "wgpudawn", "vulkan", "cffi", "rich", "PIL", "rendercanvas", "glfw",
    "sounddevice", "pycountry", "charset_normalizer", "numpy") if u.find_spec(m) is None))')
[ -n "$missing" ] && echo "h200_run.sh: not installed here (carry their wheels in .whl): $missing" | tee -a "$OUT/missing.txt" >&2
# A test that hangs on this machine ends the run there with every thread's stack, not silently at the
# call's limit: pytest-timeout (carried in .whl) after PYTEST_TIMEOUT seconds, the 'thread' method (a call
# stuck in Dawn or the driver never returns to Python for a signal's handler). A hang in test_api.py took a
# whole call's 560 s on 2026-12-05 (tenth session) with no word of where.
timeout_args=""
python3 -c 'import pytest_timeout' 2>/dev/null && timeout_args="--timeout ${PYTEST_TIMEOUT:-240} --timeout-method thread"
steps=${*:-tests probe decode import transcode copier}
log=$OUT/bench.log
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; } > "$OUT/machine.txt" 2>&1
for step in $steps; do
  start=$(date +%s)
  case $step in
    tests)
      # The whole suite took about 450 s on the H200 (2026-12-04): a command may run 600 s, so run
      # 'tests' alone. -v names every test as it ends, so that a run cut short still says what failed.
      ALPHA2_REQUIRE=vulkan,cuda,dawn,nvidia timeout 560 python3 -m pytest -v -rfE -p no:cacheprovider \
        --durations=15 $timeout_args > "$OUT/tests.log" 2>&1; echo "tests rc=$?" >> "$log"
      grep -E " (FAILED|ERROR)" "$OUT/tests.log" | head -40;;
    tests-a|tests-b|tests-c)
      # The suite in thirds, a call each (three calls, about 300 s each with a machine's start): its
      # second half took 552 s of the 560 s limit on 2026-12-05 (eighth session) and the suite still
      # grows. tests-a, tests-b, tests-c: the first, second and last third of tests/test_*.py by name.
      files=$(ls tests/test_*.py | sort); count=$(echo "$files" | wc -l); third=$(( (count + 2) / 3 ))
      case $step in
        tests-a) part=$(echo "$files" | head -n "$third");;
        tests-b) part=$(echo "$files" | tail -n +"$(( third + 1 ))" | head -n "$third");;
        *) part=$(echo "$files" | tail -n +"$(( 2 * third + 1 ))");;
      esac
      ALPHA2_REQUIRE=vulkan,cuda,dawn,nvidia timeout 560 python3 -m pytest -v -rfE -p no:cacheprovider \
        --durations=15 $timeout_args $part > "$OUT/$step.log" 2>&1; echo "$step rc=$?" >> "$log"
      grep -E " (FAILED|ERROR)" "$OUT/$step.log" | head -40;;
    tests-files)  # the test files named in TEST_FILES (a call short of device time for both halves)
      ALPHA2_REQUIRE=vulkan,cuda,dawn,nvidia timeout 560 python3 -m pytest -v -rfE -p no:cacheprovider \
        --durations=15 $timeout_args $TEST_FILES > "$OUT/tests-files.log" 2>&1; echo "tests-files rc=$?" >> "$log"
      grep -E " (FAILED|ERROR)" "$OUT/tests-files.log" | head -40; tail -3 "$OUT/tests-files.log";;
    probe)
      { echo '$ python3 tools/probe_adapters.py'; timeout 60 python3 tools/probe_adapters.py;
        echo "rc=$?"; } > "$OUT/probe.txt" 2>&1
      timeout 60 python3 tools/probe_adapters.py --json > "$OUT/probe.json" 2>&1;;
    decode)
      { echo '$ python3 benchmarks/bench_decode.py --frames 600'; timeout 150 python3 benchmarks/bench_decode.py --frames 600; } >> "$log" 2>&1;;
    import)
      for args in "--hwaccel cuda --backend wgpudawn --frames 600 --repeat 3" \
                  "--hwaccel cuda --backend wgpudawn --frames 600 --sample --modes decode,import --repeat 3" \
                  "--hwaccel none --backend wgpu --frames 600 --modes decode,import" \
                  "--hwaccel cuda --backend wgpudawn --frames 300 --sessions 1 --modes decode,import --repeat 2" \
                  "--hwaccel cuda --backend wgpudawn --frames 300 --sessions 2 --modes decode,import --repeat 2" \
                  "--hwaccel cuda --backend wgpudawn --frames 300 --sessions 4 --modes decode,import --repeat 2" \
                  "--hwaccel cuda --backend wgpudawn --frames 300 --sessions 7 --modes decode,import --repeat 2"; do
        echo "\$ python3 benchmarks/bench_import.py $args" >> "$log"
        timeout 150 python3 benchmarks/bench_import.py $args >> "$log" 2>&1
      done;;
    transcode)
      { echo '$ python3 benchmarks/bench_transcode.py --hwaccel cuda --frames 240 --repeat 2';
        timeout 300 python3 benchmarks/bench_transcode.py --hwaccel cuda --frames 240 --repeat 2; } >> "$log" 2>&1;;
    copier)
      { echo '$ python3 benchmarks/bench_encode_copier.py'; timeout 60 python3 benchmarks/bench_encode_copier.py; } >> "$log" 2>&1;;
    streams)  # one process, N streams, against decoders in processes
      { echo '$ python3 benchmarks/bench_streams.py --codecs h264 --streams 1,4,14 --modes decode-threads,decode-procs,import';
        timeout 240 python3 benchmarks/bench_streams.py --codecs h264 --streams 1,4,14 \
          --modes decode-threads,decode-procs,import; } >> "$log" 2>&1;;
    streams-exp)  # what limits one process: imports on threads, decoders on own CUDA contexts, the GIL
      for args in "--modes decode-threads,import,import-threads" \
                  "--modes decode-threads-own-ctx,import-own-ctx" "--modes import --switch-interval 0.0005"; do
        echo "\$ python3 benchmarks/bench_streams.py --codecs h264 --streams 4,14 $args" >> "$log"
        timeout 150 python3 benchmarks/bench_streams.py --codecs h264 --streams 4,14 $args >> "$log" 2>&1
      done;;
    wall)  # the 16-stream 1080p30 HEVC wall
      { echo '$ python3 benchmarks/bench_streams.py --codecs hevc --streams 16 --modes decode-threads --wall-check 16';
        timeout 120 python3 benchmarks/bench_streams.py --codecs hevc --streams 16 \
          --modes decode-threads --wall-check 16; } >> "$log" 2>&1;;
    batch)
      { echo '$ python3 benchmarks/bench_batch.py --files 8 --frames 300 --args "--preset veryfast --size 1280x720 --hwaccel cuda" --shared';
        timeout 400 python3 benchmarks/bench_batch.py --files 8 --frames 300 \
          --args "--preset veryfast --size 1280x720 --hwaccel cuda" --shared; } >> "$log" 2>&1;;
    followup)  # what the session of 2026-12-02 left to measure (its closing note, "Next device session")
      for args in "--hwaccel cuda --backend wgpudawn --frames 600 --sample --modes decode,import --repeat 3" \
                  "--hwaccel cuda --backend wgpudawn --frames 600 --modes decode,import --repeat 3"; do
        echo "\$ python3 benchmarks/bench_import.py $args" >> "$log"
        timeout 120 python3 benchmarks/bench_import.py $args >> "$log" 2>&1
      done
      echo '$ python3 benchmarks/profile_streams.py --streams 4' >> "$log"
      timeout 90 python3 benchmarks/profile_streams.py --streams 4 >> "$log" 2>&1
      echo '$ python3 benchmarks/bench_streams.py --codecs h264,hevc --streams 28 --modes decode-threads,decode-procs,import' >> "$log"
      timeout 240 python3 benchmarks/bench_streams.py --codecs h264,hevc --streams 28 \
        --modes decode-threads,decode-procs,import >> "$log" 2>&1;;
    ahead)  # the GPU copy on the decoders' threads (copy_ahead, the default) against at import
      for args in "--hwaccel cuda --backend wgpudawn --frames 600 --modes decode,import,import-inline --repeat 3" \
                  "--hwaccel cuda --backend wgpudawn --frames 600 --sample --modes decode,import,import-inline --repeat 3"; do
        echo "\$ python3 benchmarks/bench_import.py $args" >> "$log"
        timeout 100 python3 benchmarks/bench_import.py $args >> "$log" 2>&1
      done
      echo '$ python3 benchmarks/profile_streams.py --streams 4' >> "$log"
      timeout 60 python3 benchmarks/profile_streams.py --streams 4 >> "$log" 2>&1
      echo '$ python3 benchmarks/bench_streams.py --codecs h264 --streams 4,14,28 --modes decode-threads,import,import-inline' >> "$log"
      timeout 240 python3 benchmarks/bench_streams.py --codecs h264 --streams 4,14,28 \
        --modes decode-threads,import,import-inline >> "$log" 2>&1
      echo '$ python3 benchmarks/bench_streams.py --codecs hevc --streams 16 --modes decode-threads,import --wall-check 16' >> "$log"
      timeout 150 python3 benchmarks/bench_streams.py --codecs hevc --streams 16 \
        --modes decode-threads,import --wall-check 16 >> "$log" 2>&1;;
    preroll)  # the 16-stream HEVC wall after StreamGroup.preroll, against a shorter switch interval; its tests
      ALPHA2_REQUIRE=vulkan,cuda,dawn,nvidia timeout 120 python3 -m pytest -q -p no:cacheprovider \
        tests/test_streams.py tests/test_wall_window.py tests/test_importer.py \
        > "$OUT/tests-preroll.log" 2>&1; echo "tests (streams, wall, importer) rc=$?" >> "$log"
      for flags in "" "--switch-interval 0.001"; do
        echo "\$ python3 benchmarks/bench_streams.py --codecs hevc --streams 16 --modes decode-threads --wall-check 16 $flags" >> "$log"
        timeout 100 python3 benchmarks/bench_streams.py --codecs hevc --streams 16 \
          --modes decode-threads --wall-check 16 $flags >> "$log" 2>&1
      done;;
    procs)  # the decoders in processes of their own (DecodeProcess): tests, N streams, the HEVC wall
      ALPHA2_REQUIRE=vulkan,cuda,dawn,nvidia timeout 120 python3 -m pytest -q -p no:cacheprovider \
        tests/test_decode_process.py tests/test_streams.py > "$OUT/tests_procs.log" 2>&1; echo "procs tests rc=$?" >> "$log"
      echo '$ python3 benchmarks/bench_streams.py --codecs h264,hevc --streams 1,14,28 --modes decode-threads,decode-procs,import,import-procs' >> "$log"
      timeout 330 python3 benchmarks/bench_streams.py --codecs h264,hevc --streams 1,14,28 \
        --modes decode-threads,decode-procs,import,import-procs >> "$log" 2>&1
      echo '$ python3 benchmarks/bench_streams.py --codecs hevc --streams 1 --modes decode-threads --wall-check 16 --wall-decoders processes,threads' >> "$log"
      timeout 120 python3 benchmarks/bench_streams.py --codecs hevc --streams 1 --modes decode-threads \
        --wall-check 16 --wall-decoders processes,threads >> "$log" 2>&1;;
    ml)  # issue 27's rows; PyNvVideoCodec installed into /tmp/site by a call before (its wheel is 27 MB)
      { echo '$ python3 benchmarks/bench_ml.py --frames 900 --gop 250 --processes 7,14 --clip-dir /tmp/clips';
        timeout 300 python3 benchmarks/bench_ml.py --frames 900 --gop 250 --processes 7,14 \
          --clip-dir /tmp/clips; } 2>&1 | grep -v -e 'INVALID INDEX' -e '^$' >> "$log";;
    tensors1)  # issue 27's RGB tensor rows once (a call short of device time)
      { echo "\$ python3 benchmarks/bench_ml.py --frames 600 --gop 250 --rows tensors --tensor-batch 8 --clip-dir /tmp/clips";
        timeout 200 python3 benchmarks/bench_ml.py --frames 600 --gop 250 --rows tensors --tensor-batch 8 \
          --clip-dir /tmp/clips; } 2>&1 | grep -v -e 'INVALID INDEX' -e '^$' >> "$log";;
    tensors)  # issue 27's RGB tensor rows, twice (0.89 and 0.88 of decode alone at 224x224 f16 before)
      for round in 1 2; do
        { echo "\$ python3 benchmarks/bench_ml.py --frames 600 --gop 250 --rows tensors --tensor-batch 8 --clip-dir /tmp/clips  # round $round";
          timeout 240 python3 benchmarks/bench_ml.py --frames 600 --gop 250 --rows tensors --tensor-batch 8 \
            --clip-dir /tmp/clips; } 2>&1 | grep -v -e 'INVALID INDEX' -e '^$' >> "$log"
      done
      { echo '$ python3 benchmarks/bench_tensor_antialias.py --size 1920x1080 --factors 2,4,8 --batch 8';
        timeout 120 python3 benchmarks/bench_tensor_antialias.py --size 1920x1080 --factors 2,4,8 --batch 8; } >> "$log" 2>&1;;
    tensor-ab)  # issue 27: main's 224x224 float16 row against the alpha2 trees in exp_tree*/ (a branch or
      # commit put there by 'git archive BRANCH alpha2 | tar -x -C exp_tree_NAME'), alternating. The clip first, on its own
      # (about 60 s to make): in the third session of 2026-12-05 a timeout that counted its making killed
      # every timed run before it printed.
      timeout 240 python3 benchmarks/profile_tensor_threads.py --clip-frames 1800 --frames 10 --rows decode \
        > /dev/null 2>&1
      for round in 1 2 3; do
        for tree in main exp_tree*/; do
          tree=${tree%/}
          if [ "$tree" != main ]; then [ -d "$tree/alpha2" ] || continue; path=/tmp/site:$PWD/$tree; else path=$PYTHONPATH; fi
          { echo "\$ python3 benchmarks/profile_tensor_threads.py --clip-frames 1800 --frames 1800  # $tree, round $round";
            PYTHONPATH=$path timeout 60 python3 benchmarks/profile_tensor_threads.py --clip-frames 1800 --frames 1800; } 2>&1 \
            | grep -v -e 'INVALID INDEX' -e '^$' >> "$log"
        done
      done;;
    tensor-switch)  # issue 27: the 224x224 float16 row (and decode alone) at CPython's GIL switch interval
      # (0.005 s) against 0.001 and 0.0005 s, alternating; the decoder's thread and the caller's share the GIL
      timeout 240 python3 benchmarks/profile_tensor_threads.py --clip-frames 1800 --frames 10 --rows decode \
        > /dev/null 2>&1
      for round in 1 2 3; do
        for interval in 0.005 0.001 0.0005; do
          { echo "\$ python3 benchmarks/profile_tensor_threads.py --clip-frames 1800 --frames 1800 --switch-interval $interval  # round $round";
            timeout 60 python3 benchmarks/profile_tensor_threads.py --clip-frames 1800 --frames 1800 \
              --switch-interval "$interval"; } 2>&1 | grep -v -e 'INVALID INDEX' -e '^$' >> "$log"
        done
      done;;
    shared-submit)  # issue 27: the CPU's time a Dawn submission with 0-3 shared textures (their accesses, fences)
      { echo '$ python3 benchmarks/probe_shared_submit.py --iterations 600 --rounds 2';
        timeout 120 python3 benchmarks/probe_shared_submit.py --iterations 600 --rounds 2; } 2>&1 \
        | grep -v -e 'INVALID INDEX' -e '^$' >> "$log";;
    nv12-merged)  # issue 27: one multi-planar shared texture for a frame's NV12 planes (CUDA NV12 array) against two
      { echo '$ python3 benchmarks/probe_nv12_merged.py --iterations 600 --rounds 2';
        timeout 120 python3 benchmarks/probe_nv12_merged.py --iterations 600 --rounds 2; } >> "$log" 2>&1;;
    cuda-tensor)  # issue 27: NVDEC frames into 224x224 tensors by one CUDA kernel (cupy, no Dawn): exactness
      # against to_tensor's and fps against decoding alone and to_tensor, alternating
      { echo '$ python3 benchmarks/probe_cuda_tensor.py --clip-frames 600 --frames 600 --rounds 3';
        timeout 300 python3 benchmarks/probe_cuda_tensor.py --clip-frames 600 --frames 600 --rounds 3; } >> "$log" 2>&1;;
    tensor-spy)  # issue 27: py-spy (carried in .whl-tools) on the 224x224 float16 loop, native frames, every thread
      python3 -m pip install -q --no-index --no-deps --target /tmp/spy .whl-tools/py_spy*.whl
      { echo '$ py-spy record --threads --native --nonblocking --rate 100 --format raw -o $OUT/spy-native.txt -- python3 benchmarks/profile_tensor_threads.py --clip-frames 900 --frames 900 --rows tensors';
        # At 500 samples a second with --native py-spy fell 40 s behind and was killed before writing (2026-12-05).
        timeout 300 /tmp/spy/bin/py-spy record --threads --native --nonblocking --rate 100 --format raw \
          -o "$OUT/spy-native.txt" -- \
          python3 benchmarks/profile_tensor_threads.py --clip-frames 900 --frames 900 --rows tensors; } >> "$log" 2>&1;;
    shared-threaded)  # issue 27's lever: the planes' shared textures on a second thread (implicit device sync)
      { echo '$ python3 benchmarks/probe_shared_submit.py --threaded --iterations 600 --rounds 2';
        timeout 120 python3 benchmarks/probe_shared_submit.py --threaded --iterations 600 --rounds 2; } 2>&1 \
        | grep -v -e 'INVALID INDEX' -e '^$' >> "$log";;
    tensor-toggles)  # issue 27: the 224x224 float16 row with Dawn's toggles that cut the CPU cost of a
      # submission (no validation; dynamic rendering: no VkFramebuffer a render pass), alternating
      timeout 240 python3 benchmarks/profile_tensor_threads.py --clip-frames 1800 --frames 10 --rows decode \
        > /dev/null 2>&1
      python3 -c 'import alpha2; from wgpudawn.backends.dawn import extras
with alpha2.open("/tmp/clips/ml-1800-gop250.mp4", hwaccel="cuda") as s:
    d = s.device.webgpu_device; print(s.device.adapter_name, type(d).__module__, "toggles on:", sorted(extras.get_toggles(d)))' 2>&1 | tail -1 >> "$log"
      for round in 1 2 3; do
        for toggles in "" skip_validation vulkan_use_dynamic_rendering skip_validation,vulkan_use_dynamic_rendering; do
          { echo "\$ python3 benchmarks/profile_tensor_threads.py --clip-frames 1800 --frames 1800 --dawn-toggles '$toggles'  # round $round";
            timeout 60 python3 benchmarks/profile_tensor_threads.py --clip-frames 1800 --frames 1800 \
              --dawn-toggles "$toggles"; } 2>&1 | grep -v -e 'INVALID INDEX' -e '^$' >> "$log"
        done
      done;;
    segments)  # issue 29's rows: one file on all the decoders, threads and processes, HEVC and H.264
      { echo '$ python3 benchmarks/bench_segments.py --decoders threads,processes --clip-dir /tmp/clips';
        timeout 300 python3 benchmarks/bench_segments.py --decoders threads,processes \
          --clip-dir /tmp/clips; } 2>&1 | grep -v -e 'INVALID INDEX' -e '^$' >> "$log";;
    segtrans10)  # issue 29's 10-minute transcode: one pipeline against 8 segments (a call of its own)
      { echo '$ python3 benchmarks/bench_segmented_transcode.py --seconds 600 --tile 30 --segments 8';
        timeout 560 python3 benchmarks/bench_segmented_transcode.py --seconds 600 --tile 30 \
          --segments 8; } >> "$log" 2>&1;;
    cuvid)  # issue 29: FFmpeg's cuvid decoder against its NVDEC hwaccel, one HEVC session; issue 27:
      # the 224x224 tensor rows antialiased and bilinear in one run
      { echo '$ python3 benchmarks/bench_cuvid.py --codecs hevc --frames 1800 --gop 60 --clip-dir /tmp/clips';
        timeout 200 python3 benchmarks/bench_cuvid.py --codecs hevc --frames 1800 --gop 60 \
          --clip-dir /tmp/clips; } 2>&1 | grep -v -e 'INVALID INDEX' -e '^$' >> "$log"
      { echo '$ ALPHA2_NVDEC_DECODER=hwaccel python3 benchmarks/bench_cuvid.py --codecs hevc --frames 1800 --gop 60 --clip-dir /tmp/clips --repeat 1';
        ALPHA2_NVDEC_DECODER=hwaccel timeout 100 python3 benchmarks/bench_cuvid.py --codecs hevc --frames 1800 \
          --gop 60 --clip-dir /tmp/clips --repeat 1; } 2>&1 | grep -v -e 'INVALID INDEX' -e '^$' >> "$log"
      for round in 1 2; do
        { echo "\$ python3 benchmarks/bench_ml.py --frames 600 --gop 250 --rows tensors --tensor-batch 8 --bilinear --clip-dir /tmp/clips  # round $round";
          timeout 150 python3 benchmarks/bench_ml.py --frames 600 --gop 250 --rows tensors --tensor-batch 8 \
            --bilinear --clip-dir /tmp/clips; } 2>&1 | grep -v -e 'INVALID INDEX' -e '^$' >> "$log"
      done;;
    hwaccel-tests)  # the NVDEC tests with ALPHA2_NVDEC_DECODER=hwaccel (the cuvid decoder, default for HEVC
      # since the third session of 2026-12-05, left out: the hwaccel for every stream stays tested)
      ALPHA2_REQUIRE=vulkan,cuda,dawn,nvidia ALPHA2_NVDEC_DECODER=hwaccel timeout 300 python3 -m pytest -q -rfE \
        -p no:cacheprovider tests/test_cuvid.py tests/test_decode.py tests/test_segments.py \
        tests/test_decode_process.py tests/test_segment_procs.py tests/test_importer.py tests/test_apps_transcode.py \
        > "$OUT/hwaccel-tests.log" 2>&1; echo "hwaccel-tests rc=$?" >> "$log"; tail -20 "$OUT/hwaccel-tests.log";;
    colour)
      { echo '$ python3 benchmarks/bench_colour.py --width 3840 --height 2160 --frames 600';
        timeout 60 python3 benchmarks/bench_colour.py --width 3840 --height 2160 --frames 600; } >> "$log" 2>&1;;
  esac
  echo "[step $step: $(( $(date +%s) - start )) s]" >> "$log"
done
