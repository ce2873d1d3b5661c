#!/usr/bin/env bash
# The numbers of docs/deployment.md in one run, for the CPU at hand: its flags (AVX2, AVX-512F, VNNI,
# BF16, AMX), speed, peak memory and output error of torch eager (float32, and bf16 autocast where the CPU
# has native bf16), onnxruntime float32 / int8 and OpenVINO f32 / bf16 / int8 in one table per model, and
# the demo model's accuracy (tools/test.py vs test_onnx.py in each runtime and precision, float and int8).
#
#   bash tools/deployment/measure_deployment.sh DEMO_CHECKPOINT [OUT_DIR] [THREADS]
#
# DEMO_CHECKPOINT: the demo model (`make demo` writes work_dirs/demo/iter_300.pth).
# OUT_DIR: new folder for the files and logs (default work_dirs/deployment_<date>).
# THREADS: CPU threads of torch and onnxruntime (default 2). Run it on an otherwise idle machine.
set -euo pipefail
PYTHON=${PYTHON:-python}
CHECKPOINT=${1:?usage: measure_deployment.sh DEMO_CHECKPOINT [OUT_DIR] [THREADS]}
OUT=${2:-work_dirs/deployment_$(date +%Y%m%d_%H%M%S)}
THREADS=${3:-2}
[ -f "$CHECKPOINT" ] || { echo "error: demo checkpoint not found: $CHECKPOINT (make demo writes one)" >&2; exit 1; }
[ -e "$OUT" ] && { echo "error: $OUT exists; give a new OUT_DIR" >&2; exit 1; }
mkdir -p "$OUT" 2>/dev/null || { echo "error: cannot create $OUT (its folder is not writable); give another OUT_DIR" >&2; exit 1; }
trap 'rmdir "$OUT" 2>/dev/null || true' EXIT  # a check below that fails leaves no empty OUT_DIR behind
export OMP_NUM_THREADS=$THREADS
CPU=(-c 'from mmrmt.deployment.runtime import cpu_features; import sys; f = cpu_features()
print(f"# CPU {f.summary()}" if sys.argv[1:] == ["flags"] else "bf16" * f.bf16)')
"$PYTHON" "${CPU[@]}" flags
BF16=$("$PYTHON" "${CPU[@]}")  # "bf16" where the CPU has AVX-512 BF16 or AMX, else empty
RUNTIMES=(--runtime onnxruntime openvino --precision f32 $BF16)
DEMO=configs/demo/mask-rcnn_rmt-t_fpn_demo.py
MASK=configs/rmt/mask-rcnn_rmt-t_fpn_1x_coco.py
RETINA=configs/rmt/retinanet_rmt-t_fpn_1x_coco.py
BENCH=(tools/analysis_tools/benchmark.py --impl fast --mode infer --threads "$THREADS" --repeats 3 --warmup 1)
export_graph() { "$PYTHON" tools/deployment/pytorch2onnx.py "$@" | tail -1; }

# the checkpoint before any timing: an unreadable file or another model's weights end here, in one line
export_graph $DEMO --weights "$CHECKPOINT" --shape 128 128 --out "$OUT/demo.onnx" --verify

echo "## speed (threads $THREADS; load: $(cut -d' ' -f1-3 /proc/loadavg))"
export_graph $MASK --backbone-only --batch 16 --shape 224 224 --out "$OUT/rmt-t_b16.onnx"
export_graph $MASK --backbone-only --dynamic --shape 224 224 --out "$OUT/rmt-t_dynamic.onnx"  # run in image chunks
export_graph $MASK --backbone-only --batch 16 --images-per-run 2 --shape 224 224 --out "$OUT/rmt-t_b16_scan2.onnx"
"$PYTHON" tools/deployment/quantize_onnx.py "$OUT/rmt-t_b16.onnx" --config $MASK --images data/demo/coco/val \
    --count 16 --out "$OUT/rmt-t_b16_int8.onnx" | tail -3
"$PYTHON" "${BENCH[@]}" $MASK --batch 16 --shape 224 224 "${RUNTIMES[@]}" \
    --onnx "$OUT/rmt-t_b16.onnx" "$OUT/rmt-t_b16_int8.onnx" | tee "$OUT/speed_backbone.md"
# the batch's memory-bounded forms in their own table: two images at a time, in the graph (Scan) or in chunks
"$PYTHON" "${BENCH[@]}" $MASK --batch 16 --shape 224 224 --runtime onnxruntime openvino \
    --onnx "$OUT/rmt-t_b16_scan2.onnx" "$OUT/rmt-t_dynamic.onnx" | tee "$OUT/speed_backbone_two_at_a_time.md"
PROFILE=(tools/deployment/profile_onnx.py --threads "$THREADS" --runs 1)
for graph in rmt-t_b16 rmt-t_b16_int8; do
    "$PYTHON" "${PROFILE[@]}" "$OUT/$graph.onnx" | tee "$OUT/profile_$graph.md"
done
export_graph $RETINA --shape 800 1216 --out "$OUT/retinanet.onnx"
"$PYTHON" "${BENCH[@]}" $RETINA --batch 1 --shape 800 1216 "${RUNTIMES[@]}" --onnx "$OUT/retinanet.onnx" \
    | tee "$OUT/speed_retinanet.md"
"$PYTHON" "${PROFILE[@]}" "$OUT/retinanet.onnx" | tee "$OUT/profile_retinanet.md"
export_graph $MASK --shape 800 1216 --out "$OUT/mask-rcnn.onnx"
"$PYTHON" "${BENCH[@]}" $MASK --batch 1 --shape 800 1216 "${RUNTIMES[@]}" --onnx "$OUT/mask-rcnn.onnx" \
    | tee "$OUT/speed_mask-rcnn.md"
"$PYTHON" "${PROFILE[@]}" "$OUT/mask-rcnn.onnx" | tee "$OUT/profile_mask-rcnn.md"

echo "## accuracy of the demo model ($CHECKPOINT)"
"$PYTHON" tools/test.py $DEMO "$CHECKPOINT" --work-dir "$OUT/test_torch" > "$OUT/test_torch.log" 2>&1
grep -o 'coco/bbox_mAP: [0-9.]*.*coco/segm_mAP: [0-9.]*' "$OUT/test_torch.log" | tail -1 | sed 's/^/torch eager: /'
"$PYTHON" tools/deployment/quantize_onnx.py "$OUT/demo.onnx" --config $DEMO --out "$OUT/demo_int8.onnx" | tail -3
for runtime in onnxruntime openvino; do
    for precision in f32 $([ $runtime = openvino ] && echo $BF16); do
        for graph in demo demo_int8; do
            "$PYTHON" tools/deployment/test_onnx.py $DEMO "$OUT/$graph.onnx" --runtime $runtime --precision $precision \
                --work-dir "$OUT/test_${graph}_${runtime}_$precision" 2>&1 | tail -1
        done
    done
done
