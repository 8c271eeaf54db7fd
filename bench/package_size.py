"""Size of the Lambda deployment package (``chalice package``), zipped and unzipped, beside a baseline.

Usage: .venv/bin/python -m bench.package_size [--baseline openai==3.57.0 ...] [--baseline-finished]

Packages the project twice in temporary directories (devtools.lambda_package; pip downloads the
Lambda platform's wheels, so it needs the package index or pip's cache, never AWS): as it is
(finished as infra/ ships it: bytecode in, botocore's unused models out), and with the
``--baseline`` requirement lines put back, as Chalice alone zips it unless ``--baseline-finished``
(default: the package before the service dropped the openai SDK and the zip was finished).
Prints the sizes, their ratio, and the largest entries of each. Lambda's limit for a directly
uploaded zip: 50 MB.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from devtools import lambda_package as lp

MB = 1024 * 1024


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.package_size", description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", action="append", help="a requirement line of the baseline (repeatable)")
    ap.add_argument("--baseline-finished", action="store_true", help="finish the baseline's zip too")
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    baseline = args.baseline or ["openai==3.57.0"]
    with tempfile.TemporaryDirectory(prefix="hindsight-package-") as tmp:
        before = lp.build(Path(tmp) / "baseline", baseline, finish=args.baseline_finished)
        now = lp.build(Path(tmp) / "now")
    finished = "finished" if args.baseline_finished else "as chalice zips it"
    print(lp.describe(before, f"baseline (requirements.txt + {', '.join(baseline)}, {finished})", args.top))
    print(lp.describe(now, "requirements.txt", args.top))
    print(f"\n{'':<22}{'zipped MiB':>11}{'unzipped MiB':>14}{'files':>8}")
    for label, p in (("baseline", before), ("now", now)):
        print(f"{label:<22}{p.zipped / MB:>11.1f}{p.unzipped / MB:>14.1f}{p.files:>8}")
    print(f"{'now / baseline':<22}{now.zipped / before.zipped:>11.2f}{now.unzipped / before.unzipped:>14.2f}"
          f"{now.files / before.files:>8.2f}")
    print(f"target: zip <= {lp.MAX_ZIP_BYTES / MB:.0f} MiB: {'met' if now.zipped <= lp.MAX_ZIP_BYTES else 'NOT met'}; "
          f"forbidden modules in the package: {sorted(now.tops & set(lp.FORBIDDEN)) or 'none'}")


if __name__ == "__main__":
    main()
