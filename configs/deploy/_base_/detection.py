# mmdeploy's end-to-end detector: boxes decoded and NMS in the graph, with
# the thresholds of mmdet's RetinaNet / Mask R-CNN test_cfg (score 0.05, IoU
# 0.5, 100 detections per image).
_base_ = ['./onnxruntime.py']

onnx_config = dict(output_names=['dets', 'labels'])
codebase_config = dict(
    type='mmdet',
    task='ObjectDetection',
    model_type='end2end',
    post_processing=dict(
        score_threshold=0.05,
        confidence_threshold=0.005,
        iou_threshold=0.5,
        max_output_boxes_per_class=200,
        pre_top_k=5000,
        keep_top_k=100,
        background_label_id=-1))
