#!/usr/bin/env bash
# The numbers of docs/deployment.md in one run: speed (torch eager vs onnxruntime float32 and int8)
# and the demo model's accuracy (tools/test.py vs test_onnx.py float32 and int8).
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
mkdir -p "$OUT"
export OMP_NUM_THREADS=$THREADS
DEMO=configs/demo/mask-rcnn_rmt-t_fpn_demo.py
MASK=configs/rmt/mask-rcnn_rmt-t_fpn_1x_coco.py
RETINA=configs/rmt/retinanet_rmt-t_fpn_1x_coco.py
BENCH=(tools/analysis_tools/benchmark.py --impl fast --mode infer --threads "$THREADS" --repeats 3 --warmup 1)
export_graph() { "$PYTHON" tools/deployment/pytorch2onnx.py "$@" | tail -1; }

echo "## speed (threads $THREADS; load: $(cut -d' ' -f1-3 /proc/loadavg))"
export_graph $MASK --backbone-only --batch 16 --shape 224 224 --out "$OUT/rmt-t_b16.onnx"
"$PYTHON" tools/deployment/quantize_onnx.py "$OUT/rmt-t_b16.onnx" --config $MASK --images data/demo/coco/val \
    --count 16 --out "$OUT/rmt-t_b16_int8.onnx" | tail -3
"$PYTHON" "${BENCH[@]}" --backbone rmt-t --batch 16 --shape 224 224 \
    --onnx "$OUT/rmt-t_b16.onnx" "$OUT/rmt-t_b16_int8.onnx" | tee "$OUT/speed_backbone.md"
PROFILE=(tools/deployment/profile_onnx.py --threads "$THREADS" --runs 1)
for graph in rmt-t_b16 rmt-t_b16_int8; do "$PYTHON" "${PROFILE[@]}" "$OUT/$graph.onnx" | tee "$OUT/profile_$graph.md"; done
export_graph $RETINA --shape 800 1216 --out "$OUT/retinanet.onnx"
"$PYTHON" "${BENCH[@]}" $RETINA --batch 1 --shape 800 1216 --onnx "$OUT/retinanet.onnx" | tee "$OUT/speed_retinanet.md"
"$PYTHON" "${PROFILE[@]}" "$OUT/retinanet.onnx" | tee "$OUT/profile_retinanet.md"
export_graph $MASK --shape 800 1216 --out "$OUT/mask-rcnn.onnx"
"$PYTHON" "${BENCH[@]}" $MASK --batch 1 --shape 800 1216 --onnx "$OUT/mask-rcnn.onnx" | tee "$OUT/speed_mask-rcnn.md"
"$PYTHON" "${PROFILE[@]}" "$OUT/mask-rcnn.onnx" | tee "$OUT/profile_mask-rcnn.md"

echo "## accuracy of the demo model ($CHECKPOINT)"
"$PYTHON" tools/test.py $DEMO "$CHECKPOINT" --work-dir "$OUT/test_torch" > "$OUT/test_torch.log" 2>&1
grep -o 'coco/bbox_mAP: [0-9.]*.*coco/segm_mAP: [0-9.]*' "$OUT/test_torch.log" | tail -1 | sed 's/^/torch eager: /'
export_graph $DEMO --weights "$CHECKPOINT" --shape 128 128 --out "$OUT/demo.onnx" --verify
"$PYTHON" tools/deployment/quantize_onnx.py "$OUT/demo.onnx" --config $DEMO --out "$OUT/demo_int8.onnx" | tail -3
for graph in demo demo_int8; do
    "$PYTHON" tools/deployment/test_onnx.py $DEMO "$OUT/$graph.onnx" --work-dir "$OUT/test_$graph" 2>&1 | tail -1
done
