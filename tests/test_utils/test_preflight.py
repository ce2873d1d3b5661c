"""Checks the tools run before anything is written: outputs, and the data a config reads."""
import pytest
from mmengine.config import Config

from mmrmt.utils import PreflightError, check_data_paths, check_new_file, check_writable


def test_writable_paths_pass_without_being_created(tmp_path):
    check_writable(str(tmp_path / 'new' / 'deeper'), '--work-dir', is_dir=True)
    check_writable(str(tmp_path / 'new' / 'preds.pkl'), '--out', is_dir=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize('relative,is_dir,expected', [
    ('a_file', True, '--x {path} exists and is not a folder'),
    ('a_folder', False, '--x {path} is a folder; name a file'),
    ('a_file/inside', True, '--x {path} cannot be created: {root}/a_file is a file, not a folder'),
])
def test_unwritable_paths(relative, is_dir, expected, tmp_path):
    (tmp_path / 'a_file').write_text('')
    (tmp_path / 'a_folder').mkdir()
    path = tmp_path / relative
    with pytest.raises(PreflightError) as error:
        check_writable(str(path), '--x', is_dir)
    assert str(error.value) == expected.format(path=path, root=tmp_path)


def test_a_read_only_folder_is_refused_even_where_the_file_is_writable(read_only_folder):
    """A file is replaced by a new file beside it (atomically), so ``--force`` over a writable file needs a
    writable folder, checked before anything is read."""
    folder = read_only_folder
    (folder / 'out.pth').write_text('the user\'s file')
    folder.chmod(0o555)
    for path, is_dir in ((folder / 'out.pth', False), (folder / 'new.pth', False), (folder / 'new', True),
                         (folder, True)):
        with pytest.raises(PreflightError) as error:
            check_writable(str(path), '--x', is_dir)
        assert str(error.value) == (f'--x {path} cannot be written: no new file can be made in {folder}; make '
                                    'it writable or choose another --x')
    with pytest.raises(PreflightError, match=f'no new file can be made in {folder}; '):
        check_new_file(str(folder / 'out.pth'), 'destination', force=True)
    assert (folder / 'out.pth').read_text() == 'the user\'s file'


def test_new_file_refuses_to_replace_without_force(tmp_path):
    source, existing = tmp_path / 'src.pth', tmp_path / 'dst.pth'
    source.write_text('s')
    existing.write_text('d')
    inputs = [('the source', str(source))]
    with pytest.raises(PreflightError, match='exists; choose another path, or add --force'):
        check_new_file(str(existing), 'destination', force=False, inputs=inputs)
    check_new_file(str(existing), 'destination', force=True, inputs=inputs)
    check_new_file(str(tmp_path / 'new.pth'), 'destination', force=False, inputs=inputs)


@pytest.mark.parametrize('force', [False, True])
def test_new_file_is_never_an_input(force, tmp_path):
    source, images = tmp_path / 'src.pth', tmp_path / 'images'
    source.write_text('s')
    images.mkdir()
    (tmp_path / 'link.pth').symlink_to(source)
    (tmp_path / 'linked_images').symlink_to(images)
    inputs = [('the source', str(source)), ('the image folder', str(images)), ('unset', None)]
    cases = {'link.pth': 'is the source', 'src.pth': 'is the source', 'images/a.png': 'lies inside the image folder',
             'linked_images/deeper/a.png': 'lies inside the image folder'}
    for relative, relation in cases.items():
        with pytest.raises(PreflightError) as error:
            check_new_file(str(tmp_path / relative), 'destination', force=force, inputs=inputs)
        assert str(error.value).startswith(f'destination {tmp_path / relative} {relation} ')
        assert str(error.value).endswith('a tool never writes over its inputs (not even with --force): choose '
                                         'another destination')
    check_new_file(str(tmp_path / 'images_b.png'), 'destination', force=force, inputs=inputs)
    assert source.read_text() == 's' and list(images.iterdir()) == []


def test_missing_data_is_named_with_its_loader_and_the_demo_data(tmp_path):
    coco = tmp_path / 'coco'
    (coco / 'val').mkdir(parents=True)
    loader = dict(dataset=dict(type='ConcatDataset', datasets=[dict(data_root=f'{coco}/', ann_file='missing.json',
                                                                    data_prefix=dict(img='val/'))]))
    cfg = Config(dict(train_dataloader=dict(dataset=dict(data_root=str(tmp_path / 'no_data'))), test_dataloader=loader,
                      test_evaluator=dict(type='CocoMetric', ann_file=str(coco / 'missing.json'))))
    for check, names, what in ((check_data_paths, ['train_dataloader'], f'data root of train_dataloader not '
                                f'found: {tmp_path}/no_data'),
                               (check_data_paths, ['val_dataloader', 'test_dataloader'], 'annotation file of '
                                f'test_dataloader not found: {coco}/missing.json'),
                               (check_data_paths, ['test_evaluator'], 'annotation file of test_evaluator not '
                                f'found: {coco}/missing.json')):
        with pytest.raises(PreflightError) as error:
            check(cfg, names)
        assert str(error.value).startswith(f'{what} (set it with --cfg-options, or ')
        assert 'make_demo_data.py' in str(error.value)
    (coco / 'missing.json').write_text('{}')
    check_data_paths(cfg, ['test_dataloader', 'test_evaluator'])
