"""Kernel.run's `given` values are checked against the input sizes on every call: also when the launch cache replays
the launch of an earlier plain call on the same layouts (it used to replay it unchecked, so a wrong value passed)."""

import numpy as np
import pytest

import autofuse

core = autofuse._core
pytestmark = pytest.mark.skipif(not hasattr(core, "Kernel"), reason="needs the native bindings (_core.Kernel)")

ADD_SUM = ("graph f(%x: f32[s0, s1], %y: f32[s1]) {\n %z = add(%x, %y)\n %s = sum(%z) {axes=[0], keepdim=false}\n"
           " return %z, %s\n}")


@pytest.mark.parametrize("given", [{"s0": 7}, {"s1": 3}, {"s0": 1000000}, {"s0": 4, "s1": 6}])
def test_wrong_given_value_raises_after_a_plain_run(given):
    k = core.Kernel.compile(autofuse.parse(ADD_SUM))
    x, y = np.ones((4, 5), np.float32), np.ones(5, np.float32)
    z, s = np.empty((4, 5), np.float32), np.empty(5, np.float32)
    with pytest.raises(core.IRError, match="but it is already"):
        k.run([x, y], [z, s], given)  # a fresh kernel checks
    k.run([x, y], [z, s])  # a plain run: its launch is cached for these layouts
    s[:] = 0
    with pytest.raises(core.IRError, match="but it is already"):
        k.run([x, y], [z, s], given)  # the replay checks too
    k.run([x, y], [z, s], {"s0": 4, "s1": 5, "unused": 1})  # right values: runs
    assert s.tolist() == [8.0] * 5
    with pytest.raises(core.IRError, match="but it is already"):
        k.run([x, y], [z, s], given)
