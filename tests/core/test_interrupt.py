"""The one interrupt helper: SIGINT / SIGTERM set a flag (or raise), the previous handlers come back, nothing
is installed off the main thread; ``Interrupted`` crosses process boundaries with its fields."""

from __future__ import annotations

import os
import pickle
import signal
import threading

import pytest

from deepcollapse._core.checks import Interrupted
from deepcollapse._core.interrupt import StopFlag, stop_on_signals
from deepcollapse.landscape.search import SearchInterrupted


def _previous_handler(signum, frame):  # a recognisable handler to restore
    raise AssertionError("the previous handler must not run inside the block")


def test_a_signal_sets_the_flag_and_the_previous_handlers_come_back():
    old = {s: signal.signal(s, _previous_handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with stop_on_signals() as flag:
            assert not flag.stopped
            os.kill(os.getpid(), signal.SIGTERM)  # delivered to the main thread before kill returns
            assert flag.signum == signal.SIGTERM and flag.name == "SIGTERM"
            exc = flag.interrupted("stopped; checkpoint written to x", resume="deepcollapse dufm resume x")
        assert signal.getsignal(signal.SIGINT) is _previous_handler
        assert signal.getsignal(signal.SIGTERM) is _previous_handler
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    assert isinstance(exc, KeyboardInterrupt) and exc.exit_code == 143
    assert exc.resume == "deepcollapse dufm resume x" and str(exc) == "stopped; checkpoint written to x"


def test_second_ctrl_c_gives_up_unless_told_otherwise():
    with stop_on_signals() as flag:
        os.kill(os.getpid(), signal.SIGINT)
        assert flag.signum == signal.SIGINT
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    seen = []
    patient = StopFlag(on_first=seen.append, give_up_on_second_sigint=False)
    with stop_on_signals(patient):
        for s in (signal.SIGINT, signal.SIGINT, signal.SIGTERM):
            os.kill(os.getpid(), s)
    assert seen == [signal.SIGINT]  # on_first ran once
    assert patient.signum == signal.SIGTERM  # the last signal received


def test_raise_now_raises_in_the_handler_and_keeps_the_signal():
    flag = StopFlag(raise_now=True)
    with pytest.raises(KeyboardInterrupt), stop_on_signals(flag):
        os.kill(os.getpid(), signal.SIGTERM)
    assert flag.signum == signal.SIGTERM
    assert flag.interrupted("x").signum == signal.SIGTERM
    assert StopFlag().interrupted("x").signum == signal.SIGINT  # a plain KeyboardInterrupt counts as Ctrl-C


def test_nothing_is_installed_off_the_main_thread():
    before = signal.getsignal(signal.SIGTERM)
    seen = {}

    def work():
        with stop_on_signals() as flag:
            seen["handler"] = signal.getsignal(signal.SIGTERM)
            seen["flag"] = flag

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen["handler"] is before and not seen["flag"].stopped


@pytest.mark.parametrize(
    "exc",
    [
        Interrupted(
            15, "stopped by SIGTERM at step 7; checkpoint written to out", "deepcollapse dufm resume out"
        ),
        SearchInterrupted("out", "deepcollapse dufm search --out out", signal.SIGTERM),
    ],
    ids=["Interrupted", "SearchInterrupted"],
)
def test_interrupted_survives_pickling(exc):
    """A worker process or a Ray task sends the exception back to the driver pickled."""
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert (back.signum, back.message, back.resume, str(back)) == (
        exc.signum,
        exc.message,
        exc.resume,
        str(exc),
    )
