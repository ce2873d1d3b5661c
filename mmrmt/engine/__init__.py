"""Runner extensions, registered in mmengine's ``HOOKS`` for any launcher's configs."""
from .resume_rng_hook import ResumeRNGHook

__all__ = ['ResumeRNGHook']
