"""The largest input a tool runs a model on: the attention's memory grows with the square of the pixels."""
from .preflight import PreflightError

#: Largest input: 4096 pixels a side, 4096x1024 pixels in all (four times the papers' test sizes,
#: 1280x800 and 2048x512). The memory of full-attention stages grows with the square of the pixel
#: count: past this, a run exhausts a machine's memory.
MAX_SIDE, MAX_PIXELS = 4096, 4096 * 1024


def check_input_size(height: int, width: int, purpose: str) -> None:
    """Fail unless ``--shape height width`` is at least one pixel a side and within :data:`MAX_SIDE` and
    :data:`MAX_PIXELS`, before anything is allocated.

    Args:
        height (int): The input's height (``--shape H W``).
        width (int): The input's width.
        purpose (str): What the tool does with the model, for the message ('count', 'time').

    Raises:
        PreflightError: One line naming the shape and the bounds.
    """
    if min(height, width) < 1:
        raise PreflightError(f'--shape {height} {width}: each side must be >= 1 pixel')
    if max(height, width) > MAX_SIDE or height * width > MAX_PIXELS:
        raise PreflightError(f'--shape {height} {width} is too large to {purpose}: at most {MAX_SIDE} pixels a '
                             f'side and {MAX_PIXELS:,} pixels in all (the model\'s attention memory grows with '
                             'the square of the pixels)')
