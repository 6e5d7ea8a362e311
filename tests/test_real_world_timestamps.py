"""TimestampFixer: strictly increasing output with the smallest change, counted by kind."""

from __future__ import annotations

import itertools
import random

from alpha2.ffmpeg_bridge.timestamps import TimestampAdjustments, TimestampFixer, TimestampKind


def _run(values: list[int | None], **kwargs: bool) -> tuple[list[int | None], TimestampAdjustments]:
    fixer = TimestampFixer(**kwargs)
    return [fixer.fix(v) for v in values], fixer.adjustments


def test_increasing_timestamps_pass_unchanged() -> None:
    out, counts = _run([0, 3, 7, 100])
    assert out == [0, 3, 7, 100]
    assert counts.total == 0 and counts.as_dict() == {} and counts.summary() == "none"


def test_a_duplicate_is_nudged_one_tick_and_later_ones_do_not_move() -> None:
    out, counts = _run([0, 33, 33, 67, 67, 100])
    assert out == [0, 33, 34, 67, 68, 100]
    assert counts.duplicate == 2 and counts.total == 2


def test_a_slightly_late_frame_is_nudged_after_the_last() -> None:
    out, counts = _run([0, 10, 30, 20, 40])
    assert out == [0, 10, 30, 31, 40]
    assert counts.reordered == 1 and counts.total == 1


def test_a_reset_rebases_the_rest_of_the_timeline() -> None:
    values = [900 + 10 * i for i in range(5)] + [900 + 10 * i for i in range(5)]
    out, counts = _run(values)
    assert out == [900 + 10 * i for i in range(10)]
    assert counts.reset == 1 and counts.total == 1


def test_a_backward_jump_to_the_middle_is_rebased_as_backward() -> None:
    out, counts = _run([0, 10, 20, 30, 40, 50, 60, 15, 25])
    assert out == [0, 10, 20, 30, 40, 50, 60, 70, 80]
    assert counts.backward == 1 and counts.reset == 0


def test_the_step_after_a_forward_gap_stays_the_frame_step() -> None:
    # swapped blocks: 0..30, then 80..110, then 40..70
    values = [0, 10, 20, 30, 80, 90, 100, 110, 40, 50]
    out, _ = _run(values)
    assert out[-2:] == [120, 130]


def test_missing_timestamps_follow_by_one_step() -> None:
    fixer = TimestampFixer()
    assert fixer.fix(None) == 0
    assert fixer.fix(None, duration=5) == 5
    assert fixer.classify(20)[1] is TimestampKind.KEPT
    assert fixer.adjustments.missing == 2


def test_drop_behind_drops_instead_of_nudging_but_still_rebases_resets() -> None:
    out, counts = _run([0, 20, 20, 10, 40, 60, 80, 0, 20], drop_behind=True)
    assert out == [0, 20, None, None, 40, 60, 80, 100, 120]
    assert counts.dropped == 2 and counts.reset == 1
    assert counts.summary() == "3 (1 reset, 2 dropped)"


def test_random_sequences_come_out_strictly_increasing() -> None:
    rng = random.Random(7)
    for _ in range(200):
        values: list[int | None] = [rng.choice([None, *range(-50, 200)]) for _ in range(rng.randrange(1, 40))]
        fixer = TimestampFixer()
        out: list[int | None] = []
        changed = 0
        for v in values:
            fixed, kind = fixer.classify(v, duration=rng.choice([None, 0, 3]))
            if kind is TimestampKind.KEPT:
                assert v is not None and fixed == v + fixer.offset
            else:
                changed += 1
            out.append(fixed)
        assert all(b is not None and a is not None and b > a for a, b in itertools.pairwise(out))
        assert fixer.adjustments.total == changed


def test_a_run_of_equal_timestamps_counts_as_duplicates() -> None:
    out, counts = _run([0, 0, 0, 0])
    assert out == [0, 1, 2, 3]
    assert counts.as_dict() == {"duplicate": 3}


def test_a_forward_jump_beyond_the_limit_is_rebased_one_step_on() -> None:
    fixer = TimestampFixer(jump_limit=1000)
    out = [fixer.fix(v) for v in [0, 10, 20, 10**12, 10**12 + 10, 10**12 + 20]]
    assert out == [0, 10, 20, 30, 40, 50]
    assert fixer.adjustments.as_dict() == {"jump": 1}
    assert fixer.adjustments.summary() == "1 (1 jump)"


def test_gaps_under_the_limit_or_a_hundred_steps_are_kept() -> None:
    fixer = TimestampFixer(jump_limit=100)
    assert [fixer.fix(v) for v in [0, 10, 20, 520, 530]] == [0, 10, 20, 520, 530]  # 50 steps: a pause
    assert fixer.adjustments.total == 0
    assert [TimestampFixer().fix(v) for v in [0, 10**15]] == [0, 10**15]  # no limit: kept


def test_a_shift_starts_the_output_at_zero_and_counts_as_no_change() -> None:
    fixer = TimestampFixer(shift=3_240_000_000)
    assert [fixer.fix(3_240_000_000 + 3000 * i) for i in range(3)] == [0, 3000, 6000]
    assert fixer.adjustments.total == 0 and fixer.offset == -3_240_000_000


def test_adjustments_add_up() -> None:
    total = TimestampAdjustments(duplicate=1, jump=2) + TimestampAdjustments(jump=1, dropped=4)
    assert total.as_dict() == {"duplicate": 1, "dropped": 4, "jump": 3}
