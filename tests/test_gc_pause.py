import gc
import threading

from hopgraph.gc_pause import gc_paused


def test_nested_pauses_resume_once_at_the_outermost():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause ended, the outer goes on
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_on_two_threads():
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's pause still holds
    release.set()
    t.join(5)
    assert gc.isenabled()


def test_as_a_decorator_and_on_error():
    @gc_paused()
    def fails() -> None:
        assert not gc.isenabled()
        raise ValueError("x")

    try:
        fails()
    except ValueError:
        pass
    assert gc.isenabled()
