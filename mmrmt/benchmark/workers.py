"""The benchmark's workers, one fresh process a contender, and the parent that interleaves their iterations.

A worker builds its model (a compiled one also runs one untimed iteration,
which compiles it), reports 'ready' (a compiled one: torch.compile's line
instead), times one iteration per 'step' message and, on 'done', sends the
peak memory its iterations added, its process's peak resident set and its
last outputs. A worker whose build or
iteration raises sends a :class:`WorkerFailure` instead, which the parent
turns into one line naming the contender and the error.
"""
import argparse
import multiprocessing as mp
import statistics
import time
from contextlib import nullcontext
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import torch

from mmrmt.amp import float32_cpu_kernels
from mmrmt.amp.bf32 import bf32_gemms
from mmrmt.checkpoint import one_line_reason
from mmrmt.deployment.export import TensorModeModel, float32_roi_pooling
from mmrmt.deployment.runtime import open_graph, run_session
from mmrmt.utils import PreflightError
from mmrmt.utils.compiled_inference import compile_features
from .contenders import UPSTREAM_IMPL, Contender, contenders
from .memory import peak_baseline, peak_now, proc_status_kb
from .models import build_backbone, build_whole_model, synthetic_samples, tensor_mode_inputs
from .upstream_rest import build_upstream, upstream_features

#: A contender's median seconds, peak bytes added, process peak bytes and last outputs.
Result = Tuple[float, int, int, Optional[list]]


class WorkerFailure(NamedTuple):
    """What a worker sends when building or running its contender raised.

    Args:
        reason (str): The error, in one line (its type and message).
    """
    reason: str


def guarded_worker(args: argparse.Namespace, contender: Contender, mode: str, conn) -> None:
    """:func:`worker`, sending a :class:`WorkerFailure` if it raises (e.g. BatchNorm given one
    value per channel in training) rather than dying with a traceback."""
    try:
        worker(args, contender, mode, conn)
    except Exception as error:  # any error of the contender ends the benchmark in one line
        conn.send(WorkerFailure(one_line_reason(error)))


def graph_worker(args: argparse.Namespace, path: str, runtime: str, precision: str, conn) -> None:
    """Open ``path`` in ``runtime`` at ``precision``, then run it once per 'step' message."""
    if args.threads:
        torch.set_num_threads(args.threads)
    session = open_graph(path, runtime, precision, args.threads)
    inputs = tensor_mode_inputs(args, two_stage=len(session.get_inputs()) == 2)
    serve(conn, lambda: run_session(session, inputs), 'cpu')


def tensor_mode_worker(args: argparse.Namespace, impl: Optional[str], precision: str, conn) -> None:
    """Run the tensor-mode forward the --onnx files hold, in torch at ``precision``, once per 'step'."""
    model = TensorModeModel(build_whole_model(args.config, impl)[0], backbone_only=args.config_backbone
                            ) if args.config else TensorModeModel(build_backbone(args.backbone, impl))
    model.eval()
    inputs = tensor_mode_inputs(args, model.kind == 'two_stage')
    autocast = torch.autocast('cpu', dtype=torch.bfloat16) if precision == 'bf16' else nullcontext()

    def tensor_mode() -> List[torch.Tensor]:
        with torch.no_grad(), autocast:
            return list(model(*inputs))

    # bf16 autocast on the CPU: mmcv's RoIAlign has no bf16 kernel
    with float32_roi_pooling(model):
        serve(conn, tensor_mode, 'cpu')


def worker(args: argparse.Namespace, contender: Contender, mode: str, conn) -> None:
    """Build one model, then run one iteration per 'step' message."""
    _, impl, precision, runtime, path, compiled = contender
    if runtime is not None:
        return graph_worker(args, path, runtime, precision, conn)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.onnx:
        return tensor_mode_worker(args, impl, precision, conn)
    if impl == UPSTREAM_IMPL:
        model = build_upstream(args.upstream_repo, args.backbone.partition('-')[2], args.weights)
        samples = None

        def forward(images: torch.Tensor) -> List[torch.Tensor]:
            return upstream_features(model, images)
    else:
        if args.config:
            model, scope = build_whole_model(args.config, impl)
            samples = synthetic_samples(scope, args.batch, tuple(args.shape), args.device)
        else:
            model, samples = build_backbone(args.backbone, impl, args.weights), None
        forward = model
    model = model.to(args.device).train(mode == 'train')
    inputs = torch.randn(args.batch, 3, *args.shape, device=args.device)
    amp = (torch.autocast(args.device, dtype={'bf16': torch.bfloat16, 'fp16': torch.float16}[precision])
           if precision in ('bf16', 'fp16') else nullcontext())

    def iteration() -> Optional[List[torch.Tensor]]:
        """One iteration; a backbone's inference returns its features (compared with the baseline's)."""
        outputs = None
        if mode == 'infer':
            with torch.no_grad(), amp:
                if samples:
                    model(inputs, samples, mode='predict')
                else:
                    outputs = list(forward(inputs))
        else:
            with amp:
                if samples:
                    loss = model.parse_losses(model(inputs, samples, mode='loss'))[0]
                else:
                    loss = sum(out.float().square().mean() for out in forward(inputs))
            loss.backward()
            model.zero_grad(set_to_none=True)
        if args.device == 'cuda':
            torch.cuda.synchronize()
        return outputs

    # under CPU autocast mmcv's RoIAlign and NMS take float32 only; bf32 holds for the worker's process
    with float32_cpu_kernels(model), bf32_gemms() if precision == 'bf32' else nullcontext():
        ready = 'ready'
        if compiled:
            record = compile_features(model, args.inductor_options, training=mode == 'train')
            iteration()
            ready = record.summary()
        serve(conn, iteration, args.device, ready)


def serve(conn, iteration: Callable[[], Optional[list]], device: str, ready: str = 'ready') -> None:
    """Report ``ready``, time one ``iteration()`` per 'step', then send the peak memory added, the
    process's peak resident set and the last iteration's outputs (float32 numpy arrays, converted here,
    outside the timed iterations; None for iterations that return none)."""
    build_peak = proc_status_kb('VmHWM') * 1024  # imports and the build (a runtime's graph optimisation, a compile)
    baseline = peak_baseline(device)
    conn.send(ready)
    outputs = None
    while conn.recv() == 'step':
        start = time.perf_counter()
        outputs = iteration()
        conn.send(time.perf_counter() - start)
    peak = peak_now(device) - baseline
    process_peak = max(build_peak, proc_status_kb('VmHWM') * 1024)
    arrays = None if outputs is None else [output.float().numpy() if isinstance(output, torch.Tensor) else output
                                           for output in outputs]
    conn.send((peak, process_peak, arrays))


def time_contenders(args: argparse.Namespace, mode: str) -> Dict[str, Result]:
    """Median seconds, peak bytes added, process peak bytes and last outputs of each contender, by label,
    their iterations interleaved."""
    context = mp.get_context('spawn')
    workers = {}
    for contender in contenders(args):
        parent_end, child_end = context.Pipe()
        process = context.Process(target=guarded_worker, args=(args, contender, mode, child_end), daemon=True)
        process.start()
        workers[contender[0]] = (process, parent_end)
    try:
        for impl, (process, conn) in workers.items():
            ready = receive(conn, process, impl)  # once the model is built (and compiled: torch.compile's line)
            if ready != 'ready':
                print(f'# {impl} ({mode}): {ready}', flush=True)
        times = {impl: [] for impl in workers}
        for step in range(args.warmup + args.repeats):
            for impl, (_, conn) in workers.items():
                conn.send('step')
                elapsed = receive(conn, workers[impl][0], impl)
                if step >= args.warmup:
                    times[impl].append(elapsed)
        results = {}
        for impl, (_, conn) in workers.items():
            conn.send('done')
            results[impl] = (statistics.median(times[impl]), *receive(conn, workers[impl][0], impl))
        return results
    finally:
        for process, _ in workers.values():
            process.join(timeout=60)
            if process.is_alive():
                process.terminate()


def receive(conn, process, label: str):
    """The worker's next message.

    Raises:
        PreflightError: One line naming the contender and its error, if it sent a
            :class:`WorkerFailure`.
        RuntimeError: The worker died without a word (killed, e.g. out of memory).
    """
    while not conn.poll(1):
        if not process.is_alive():
            raise RuntimeError(f'the worker of {label} died (exit code {process.exitcode}: '
                               '-9 means killed, e.g. out of memory).')
    message = conn.recv()
    if isinstance(message, WorkerFailure):
        raise PreflightError(f'{label} failed: {message.reason}')
    return message
