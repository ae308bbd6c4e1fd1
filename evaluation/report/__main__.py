"""The report command: an HTML page for a finished run, or a comparison of several.

    python -m evaluation.report RUN_DIR            -> RUN_DIR/report.html
    python -m evaluation.report RUN_A RUN_B ...  -> compare.html (or --out)
"""
from __future__ import annotations

import argparse
from pathlib import Path

from evaluation.report.html import build_comparison, build_report


def main(argv: list[str] | None = None) -> None:
    """Build report.html for one run folder, or compare.html for several."""
    parser = argparse.ArgumentParser(prog="python -m evaluation.report",
                                     description="Build report.html for one run folder, or compare.html for several.")
    parser.add_argument("runs", nargs="+", help="evaluation output folders")
    parser.add_argument("--out", default=None,
                        help="where to write (default: RUN_DIR/report.html for one run, compare.html for several)")
    parser.add_argument("--no-images", action="store_true", help="leave the image thumbnails out")
    args = parser.parse_args(argv)
    try:
        if len(args.runs) == 1:
            path = build_report(Path(args.runs[0]), Path(args.out) if args.out else None, images=not args.no_images)
        else:
            path = build_comparison([Path(r) for r in args.runs], Path(args.out or "compare.html"))
    except FileNotFoundError as exc:
        raise SystemExit(str(exc)) from None
    print(path.resolve())


if __name__ == "__main__":
    main()
