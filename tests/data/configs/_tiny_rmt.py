# A four-stage RMT small enough for seconds-long tool tests (replacing the
# demo configs' arch='t', hence _delete_).
tiny_rmt = dict(
    _delete_=True,
    embed_dims=[16, 32, 64, 64], depths=[1, 1, 1, 1], num_heads=[2, 2, 4, 4],
    mlp_ratios=[2, 2, 2, 2], init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6],
    decomposed=[True, True, False, False], layer_scales=[False, False, False, False])
tiny_channels = [16, 32, 64, 64]
