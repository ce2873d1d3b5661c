"""Output checks the tools run before anything is written."""
import pytest

from mmrmt.utils import PreflightError, check_new_file, check_writable


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
