"""Checkpoints given as an http(s) URL: fetched into torch's hub cache, or one line saying why not.

Offline, or for a wrong address, urllib's errors would otherwise surface as
chained tracebacks after the tool has already started its run. A copy
fetched for a file that is then refused (code in its pickle, another
model's weights) leaves the cache again (:func:`copy_dropped_if_refused`),
whoever fetched it (here, or timm for a ``url`` of ``file://`` or http(s)).
"""
import os
import os.path as osp
from contextlib import contextmanager
from typing import Iterator
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse

import torch

#: The schemes read here (other ``scheme://`` paths are left to mmengine's loaders).
URL_PREFIXES = ('http://', 'https://')


def is_remote(path: str) -> bool:
    """Whether ``path`` names something a loader fetches (``scheme://``: a URL, a model zoo, a
    storage backend's path)."""
    return '://' in path


def is_url(path: str) -> bool:
    """Whether ``path`` is an http(s) URL."""
    return path.startswith(URL_PREFIXES)


def hub_copy(url: str) -> str:
    """Where torch's hub cache keeps the file of ``url`` (timm's loaders too):
    ``<torch hub dir>/checkpoints/<file name>``."""
    return osp.join(torch.hub.get_dir(), 'checkpoints', osp.basename(urlparse(url).path) or 'checkpoint.pth')


@contextmanager
def copy_dropped_if_refused(url: str) -> Iterator[None]:
    """Within the block, a copy of ``url`` that the block puts into the hub cache (:func:`hub_copy`) is
    removed again if the block raises: the file was refused and no loader may find it there later. A
    copy that was there before is kept."""
    local = hub_copy(url)
    fetched_here = not osp.exists(local)
    try:
        yield
    except BaseException:
        if fetched_here and osp.isfile(local):
            os.remove(local)
        raise


def fetch_checkpoint(url: str) -> str:
    """The local copy of the checkpoint at ``url``: ``<torch hub dir>/checkpoints/<file name>``,
    downloaded unless there (where mmengine's loaders look for it too).

    A failed download leaves nothing behind: torch downloads to a temporary
    file and moves it into place, and a cache folder made for it is removed.

    Raises:
        ValueError: One line: the URL could not be fetched (offline, unknown
            host, HTTP error), and what to do instead.
    """
    local = hub_copy(url)
    folder = osp.dirname(local)
    if osp.isfile(local):
        return local
    made = not osp.isdir(folder)
    try:
        os.makedirs(folder, exist_ok=True)
        torch.hub.download_url_to_file(url, local, progress=False)
        return local
    except HTTPError as error:
        reason = f'HTTP {error.code} {error.reason}'
    except URLError as error:
        reason = str(error.reason)
    except OSError as error:  # e.g. a timeout, a connection reset, an unwritable cache
        reason = error.strerror or type(error).__name__
    if made and osp.isdir(folder) and not os.listdir(folder):
        os.rmdir(folder)
    raise ValueError(f'{url} could not be fetched ({reason}); mmrmt downloads a checkpoint only when the '
                     'network allows: download it yourself and give the file\'s path')
