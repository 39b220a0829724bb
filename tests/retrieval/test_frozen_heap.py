"""frozen_heap: the heap alive at entry is frozen (the collector skips it) and unfrozen at the outermost exit."""

from __future__ import annotations

import gc

from ragrig.retrieval.frozen_heap import frozen_heap


class Chunk:
    pass


def test_frozen_heap_is_reentrant_and_unfreezes_only_at_the_outermost_exit():
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        outer = gc.get_freeze_count()
        assert outer > 0
        index = [Chunk() for _ in range(1000)]  # e.g. an index opened inside a sweep
        assert all(gc.is_tracked(c) for c in index)
        with frozen_heap():
            # the inner block froze what was new: none of it is in a collected generation any more (asked per
            # object: a freeze count also moves with other threads' objects, e.g. a Prefect client's workers)
            young = {id(o) for o in gc.get_objects()}
            assert not any(id(c) in young for c in index)
        assert gc.get_freeze_count() > 0  # the inner exit left the outer block's freeze in place
    assert gc.get_freeze_count() == 0


def test_frozen_heap_unfreezes_when_the_block_raises():
    gc.unfreeze()
    try:
        with frozen_heap():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert gc.get_freeze_count() == 0


def test_garbage_made_inside_the_block_is_still_collected():
    class Node:
        def __init__(self) -> None:
            self.me = self  # a reference cycle: only the cyclic collector frees it

    with frozen_heap():
        gc.collect()
        for _ in range(100):
            Node()
        assert gc.collect() >= 100
