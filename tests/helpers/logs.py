"""Reading what mmrmt logs through mmengine's logger."""
import logging
from typing import List

from mmengine.logging import MMLogger


class LogCapture(logging.Handler):
    """Collects the messages of mmengine's current logger while inside ``with``."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def __enter__(self) -> 'LogCapture':
        MMLogger.get_current_instance().addHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        MMLogger.get_current_instance().removeHandler(self)

    def containing(self, text: str) -> List[str]:
        """The messages that contain ``text``."""
        return [message for message in self.messages if text in message]
