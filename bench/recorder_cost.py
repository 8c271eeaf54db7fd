"""What recording costs the agent's thread, per tool_call event, with a baseline from the same run.

The SDK's TrajectoryRecorder buffers events on the agent's thread and a sender thread posts them.
Three figures, interleaved round by round so machine noise hits them alike:
- `floor`: the same loop appending the same dicts to a list (what any recorder costs at least);
- `alone`: the recorder with its sender never started (the agent thread's own work);
- `live`: the recorder while its sender encodes and posts to a real embedded server (GIL contention).

    .venv/bin/python -m bench.recorder_cost [--events 2000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from devtools.net import free_port
from devtools.server_process import ServerProcess
from hindsight_xp import Hindsight, TrajectoryRecorder

PARAMS = {"city": "Lyon", "date": "tomorrow", "units": "metric"}


def per_event_us(record, n: int) -> float:
    started = time.perf_counter()
    for i in range(n):
        record("get_weather", PARAMS, {"forecast": "rain", "temp": i})
    return (time.perf_counter() - started) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.recorder_cost", description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    n = args.events
    figures: dict[str, list[float]] = {"floor": [], "alone": [], "live": []}
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(Path(tmp) / "data", {"HINDSIGHT_EMBEDDER": "hash"}) as srv:
        admin = Hindsight(srv.url, admin_key=srv.admin_key)
        key = admin.create_tenant("bench-recorder").api_key
        client = Hindsight(srv.url, key)
        for _ in range(args.rounds):
            sink: list = []
            figures["floor"].append(per_event_us(lambda t, p, r: sink.append({"tool": t, "params": dict(p), "result": r}), n))
            alone = TrajectoryRecorder(Hindsight(f"http://127.0.0.1:{free_port()}", "k"), agent_id="a", goal="g", max_buffer=n)
            figures["alone"].append(per_event_us(lambda t, p, r: alone.tool_call(t, p, result=r), n))
            with TrajectoryRecorder(client, agent_id="a", goal="g", max_buffer=n, close_timeout=60) as live:
                figures["live"].append(per_event_us(lambda t, p, r: live.tool_call(t, p, result=r), n))
            if live.stats.sent != n or live.stats.dropped:
                raise SystemExit(f"live recorder lost events: {live.stats}")
    floor = statistics.median(figures["floor"])
    print(f"recorder cost per tool_call event, {n} events x {args.rounds} rounds (median of rounds)")
    print(f"{'':8}{'us/event':>10}{'x floor':>9}")
    for name, values in figures.items():
        med = statistics.median(values)
        print(f"{name:8}{med:>10.1f}{med / floor:>9.1f}")


if __name__ == "__main__":
    main()
