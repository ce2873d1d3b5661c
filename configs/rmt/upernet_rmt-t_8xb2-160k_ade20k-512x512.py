# UperNet with RMT-T on ADE20K, 160k iterations, with the auxiliary FCN head
# on stage 3 (the RMT paper reports S/B/L, Table 5), as the authors' released
# RMT_Uper_s_2x.py (no T file): 2 images a GPU (batch 16 on 8 GPUs), no
# weight decay on parameters whose name contains 'norm' (their paramwise_cfg:
# RMT's LayerNorms and downsampling BN, not the stem's BN, layer scales or
# the heads' BN), fp16 with a static loss scale of 512 (tools/train.py --amp).
_base_ = '../_base_/upernet_4xb4-160k_ade20k-512x512.py'

model = dict(
    backbone=dict(
        _delete_=True,
        type='RMT',
        arch='t',
        drop_path_rate=0.1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rmt-t_in1k.pth')),
    decode_head=dict(in_channels=[64, 128, 256, 512]),
    auxiliary_head=dict(in_channels=256))

train_dataloader = dict(batch_size=2)
optim_wrapper = dict(paramwise_cfg=dict(_delete_=True, custom_keys={'norm': dict(decay_mult=0.)}))
amp_loss_scale = 512.
