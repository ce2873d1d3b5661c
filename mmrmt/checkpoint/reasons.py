"""A load's error as one line of reason, for messages that name the file and the fix."""
import re

ANSI_ESCAPE = re.compile(r'\x1b\[[0-9;]*m')

#: torch's weights-only unpickler puts the actual reason after this marker,
#: below its general advice ...
WEIGHTS_ONLY_REASON = 'WeightsUnpickler error:'
#: ... or, for a blocked module, in the lines after the one this advice opens.
WEIGHTS_ONLY_ADVICE = 'Weights only load failed.'


def one_line_reason(error: BaseException) -> str:
    """``error`` as ``'Type: reason'`` on one line, for a message that adds context.

    The reason is the first non-empty line of the message, taken after torch's
    weights-only advice (to turn the safety off) when there is some; terminal
    colour codes are removed.
    """
    text = ANSI_ESCAPE.sub('', str(error))
    if WEIGHTS_ONLY_REASON in text:
        text = text.split(WEIGHTS_ONLY_REASON, 1)[1]
    elif text.startswith(WEIGHTS_ONLY_ADVICE):
        text = text.partition('\n')[2]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f'{type(error).__name__}: {lines[0]}' if lines else type(error).__name__
