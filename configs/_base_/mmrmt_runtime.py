# What every mmrmt config needs, whichever tools/train.py or tools/test.py runs
# it (ours, mmdet's or mmseg's): importing mmrmt registers the backbones and
# lets torch's weights-only loading read mmengine checkpoints (for --resume);
# importing mmrmt.engine registers the hook and the runner below and keeps
# every checkpoint loader from handing mmengine's resume code to run;
# ResumeRNGHook saves torch's random state in each checkpoint and restores it
# on resume, so a resumed run ends with the weights of an uninterrupted one;
# OwnWorkDirRunner lets one run at a time use a work dir (a second one stops
# with a line naming the first), resumes only from the work dir's own
# checkpoints (also after `cp -r`) and registers ResumeRNGHook itself when a
# config replaces this custom_hooks list.
custom_imports = dict(imports=['mmrmt', 'mmrmt.engine'], allow_failed_imports=False)
custom_hooks = [dict(type='ResumeRNGHook')]
runner_type = 'OwnWorkDirRunner'
