"""Small variants of the three backbones, for tests that run them on CPU in seconds."""

#: Decomposed and full MaSA stages, with and without layer scale.
RMT_TINY = dict(embed_dims=[16, 32, 48, 64], depths=[1, 2, 1, 1], num_heads=[2, 2, 4, 4],
                mlp_ratios=[2, 2, 2, 2], init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6],
                decomposed=[True, True, False, False], layer_scales=[False, False, True, True])
#: One head (no head mixing) in stage 1, no key/value reduction in stage 4.
REST_TINY = dict(embed_dims=[16, 32, 48, 64], depths=[1, 1, 2, 1], num_heads=[1, 2, 2, 4],
                 mlp_ratios=[2, 2, 2, 2], sr_ratios=[8, 4, 2, 1])
#: 4 blocks of width 16, patch 16, 2x2-token windows: several windows at 64x64.
RESMLP_TINY = dict(embed_dims=16, depth=4, patch_size=16, mlp_ratio=2, window_size=2)
