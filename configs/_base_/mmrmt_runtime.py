# What every mmrmt config needs, whichever tools/train.py or tools/test.py runs
# it (ours, mmdet's or mmseg's): importing mmrmt registers the backbones and
# keeps every checkpoint loader of mmengine from running a checkpoint's code;
# the `mmrmt.` names below are found in mmrmt's registry scope, which imports
# mmrmt.engine on their first lookup (a config inheriting this one may set its
# own custom_imports = dict(imports=['mmrmt'])).
# ResumeRNGHook saves torch's random state in each checkpoint and restores it
# on resume, so a resumed run ends with the weights of an uninterrupted one;
# OwnWorkDirRunner lets one run at a time use a work dir (a second one stops
# with a line naming the first), resumes only from the work dir's own
# checkpoints (also after `cp -r`) and registers ResumeRNGHook itself when a
# config replaces this custom_hooks list.
custom_imports = dict(imports=['mmrmt'], allow_failed_imports=False)
custom_hooks = [dict(type='mmrmt.ResumeRNGHook')]
runner_type = 'mmrmt.OwnWorkDirRunner'
