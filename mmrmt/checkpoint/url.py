"""Checkpoints given as an http(s) URL: fetched into torch's hub cache, or one line saying why not.

Offline, or for a wrong address, urllib's errors would otherwise surface as
chained tracebacks after the tool has already started its run.
"""
import os
import os.path as osp
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


def fetch_checkpoint(url: str) -> str:
    """The local copy of the checkpoint at ``url``: ``<torch hub dir>/checkpoints/<file name>``,
    downloaded unless there (where mmengine's loaders look for it too).

    A failed download leaves nothing behind: torch downloads to a temporary
    file and moves it into place, and a cache folder made for it is removed.

    Raises:
        ValueError: One line: the URL could not be fetched (offline, unknown
            host, HTTP error), and what to do instead.
    """
    folder = osp.join(torch.hub.get_dir(), 'checkpoints')
    local = osp.join(folder, osp.basename(urlparse(url).path) or 'checkpoint.pth')
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
