"""The ResMLP authors' ImageNet files (their deit repository) to timm's keys,
which the :class:`~mmrmt.models.backbones.ResMLP` backbone has."""
from ..reading import StateDict

#: Authors' name -> timm's name, replaced in every key.
DEIT_TO_TIMM_RENAMES = (('patch_embed.', 'stem.'), ('.attn.', '.linear_tokens.'),
                        ('.mlp.', '.mlp_channels.'), ('.gamma_', '.ls'))


def resmlp_deit_to_timm(state_dict: StateDict) -> StateDict:
    """Rename an authors' ResMLP file to timm's keys; a timm file is returned as it is.

    The affine layers' ``alpha`` / ``beta`` become (1, 1, C), timm's shape.
    """
    if 'patch_embed.proj.weight' not in state_dict:
        return state_dict
    converted = {}
    for key, value in state_dict.items():
        for old, new in DEIT_TO_TIMM_RENAMES:
            key = key.replace(old, new)
        if key.endswith(('.alpha', '.beta')):
            value = value.reshape(1, 1, -1)
        converted[key] = value
    return converted
