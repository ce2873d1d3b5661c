"""Runner extensions that tools/train.py adds to every run."""
from .resume_rng_hook import ResumeRNGHook

__all__ = ['ResumeRNGHook']
