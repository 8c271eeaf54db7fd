"""Put the retail environment of tau-bench (sierra-research/tau-bench, MIT) into ``.taubench/``.

    .venv/bin/python -m bench.realruns.fetch [--source URL_OR_GIT_DIR] [--dest DIR]

Only ``tau_bench/envs/retail/`` (its tools, data, policy and task lists), the ``Tool`` base class
its tools import, and the licence are copied; nothing of the environment is committed: the folder is
ignored by git, and the harness imports the tools from it at run time. ``--source`` is the
repository's URL (cloned shallow into a temporary folder) or a local clone or bare mirror of it.
"""
from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DEST = ROOT / ".taubench"
DEFAULT_SOURCE = "https://github.com/sierra-research/tau-bench.git"
# what the harness needs; nothing of the other domain of the repository is read
PATHS = ("LICENSE", "tau_bench/envs/tool.py", "tau_bench/envs/retail")


def _git_dir(source: str, tmp: Path) -> Path:
    path = Path(source)
    if path.exists():
        return path
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--filter=blob:none", "--no-checkout", source, str(clone)],
                   check=True)
    return clone


def fetch(source: str = DEFAULT_SOURCE, dest: Path = DEFAULT_DEST) -> Path:
    """Copies the retail environment into ``dest`` (replacing what was there); returns ``dest``."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = _git_dir(source, Path(tmp))
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                                text=True).stdout.strip()
        archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", "HEAD", *PATHS], check=True,
                                 capture_output=True).stdout
    staging = dest.with_name(dest.name + ".part")
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(staging, filter="data")
    (staging / "SOURCE").write_text(f"sierra-research/tau-bench {commit} (MIT, see LICENSE): {', '.join(PATHS)}\n")
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.realruns.fetch", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", default=DEFAULT_SOURCE, help="the repository's URL, or a local clone or bare mirror")
    p.add_argument("--dest", default=str(DEFAULT_DEST))
    args = p.parse_args(argv)
    dest = fetch(args.source, Path(args.dest))
    print(f"tau-bench retail environment in {dest} ({(dest / 'SOURCE').read_text().split()[1][:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
