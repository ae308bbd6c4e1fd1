"""The report command: an HTML page for a finished run, or a comparison of several.

    python -m evaluator.report RUN_DIR            -> RUN_DIR/report.html
    python -m evaluator.report RUN_A RUN_B ...  -> compare.html (or --out), and on the console
                                                    each run paired with RUN_A (evaluator.report.paired)
"""
from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from evaluator.report.html import build_comparison, build_report, load_comparison
from evaluator.report.terminal import print_paired


def main(argv: list[str] | None = None) -> None:
    """Build report.html for one run folder, or compare.html for several."""
    parser = argparse.ArgumentParser(prog="python -m evaluator.report",
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
            out = Path(args.out or "compare.html")
            runs, pairs = load_comparison([Path(r) for r in args.runs], out)
            console = Console()
            for pair in pairs:
                print_paired(console, pair)
            path = build_comparison([Path(r) for r in args.runs], out, loaded=(runs, pairs))
    except FileNotFoundError as exc:
        raise SystemExit(str(exc)) from None
    print(path.resolve())


if __name__ == "__main__":
    main()
