"""check_input_size: the largest input a tool runs a model on, each side and all the pixels bounded, in one line
naming what the tool would do with it (get_flops counts, benchmark times, compile_report compiles)."""
import pytest

from mmrmt.utils import PreflightError, check_input_size

TOO_LARGE = ("--shape {} {} is too large to {}: at most 4096 pixels a side and 4,194,304 pixels in all (the model's "
             'attention memory grows with the square of the pixels)')


@pytest.mark.parametrize('shape, purpose', [((20000, 20000), 'count'), ((4097, 64), 'count'), ((2100, 2100), 'count'),
                                            ((30000, 30000), 'compile'), ((64, 4097), 'time')])
def test_an_input_too_large_is_one_line(shape, purpose):
    with pytest.raises(PreflightError) as error:
        check_input_size(*shape, purpose)
    assert str(error.value) == TOO_LARGE.format(*shape, purpose)


def test_the_bounds_themselves_are_taken_and_an_empty_side_is_not():
    check_input_size(4096, 1024, 'count')
    check_input_size(1, 4096, 'count')
    with pytest.raises(PreflightError, match=r'^--shape 0 64: each side must be >= 1 pixel$'):
        check_input_size(0, 64, 'count')
