"""The event helpers of the blind format (the independent set's own, one copy), plus `TX`, which
also records each training trajectory's shape so build.py can count them (shapes are not written
to families.json)."""
import importlib.util
import os

_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "independent", "src", "dsl.py")
_spec = importlib.util.spec_from_file_location("independent_dsl", _PATH)
_dsl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_dsl)
globals().update({k: v for k, v in vars(_dsl).items() if not k.startswith("_")})

SHAPES = []


def TX(shape, goal, outcome, *events):
    """A trajectory whose shape (one or more of build.SHAPE_NAMES joined by '+') is recorded."""
    SHAPES.append((shape, outcome))
    return _dsl.T(goal, outcome, *events)
