from .loading import extract_state_dict, load_pretrained, read_checkpoint

__all__ = ['extract_state_dict', 'load_pretrained', 'read_checkpoint']
