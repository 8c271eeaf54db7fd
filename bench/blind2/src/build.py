"""Writes ../families.json from the hand-written parts (run: python src/build.py)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import part1, part2, part3, part4  # noqa: E402

families = part1.FAMILIES + part2.FAMILIES + part3.FAMILIES + part4.FAMILIES
out = os.path.join(os.path.dirname(HERE), "families.json")
with open(out, "w", encoding="utf-8") as fh:
    json.dump({"version": 1, "families": families}, fh, ensure_ascii=False, indent=1)
    fh.write("\n")
print(f"wrote {len(families)} families to {out}")
