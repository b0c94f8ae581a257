"""Command lines: `python -m retrieval.build` and `python -m retrieval.search`."""

import argparse
import json
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from retrieval.config import INDEX_DIR_ENV, LITERATURE_DIR, default_index_dir
from retrieval.index import build_index
from retrieval.manifest import ManifestError
from retrieval.query import MODES, open_index

_INDEX_DIR_HELP = f"index directory (default: ${INDEX_DIR_ENV}, else {default_index_dir()})"


def build_main(argv: list[str] | None = None) -> int:
    """Build or update the index; exit 1 when any file or path was skipped."""
    parser = argparse.ArgumentParser(
        prog="python -m retrieval.build",
        description="Index Markdown, text, HTML and PDF files for search; only changed files are re-embedded.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help=f"files or directories (default: {LITERATURE_DIR})")
    parser.add_argument("--index-dir", help=_INDEX_DIR_HELP)
    args = parser.parse_args(argv)

    stderr = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    try:
        with Progress(*columns, console=stderr, transient=True) as progress:
            task = progress.add_task("", total=None)

            def show(stage: str, done: int, total: int) -> None:
                unit = "files" if stage == "reading" else "chunks"
                progress.update(task, completed=done, total=total, description=f"{stage} {unit}")

            report = build_index(args.paths or None, args.index_dir, progress=show)
    except ManifestError as error:
        print(f"retrieval.build: {error}", file=sys.stderr)
        return 1
    for message in report.skipped:
        print(f"retrieval.build: skipped {message}", file=sys.stderr)
    print(report.summary())
    return 1 if report.skipped else 0


def search_main(argv: list[str] | None = None) -> int:
    """Search the index and print hits, as text or (with --json) as a JSON list."""
    parser = argparse.ArgumentParser(
        prog="python -m retrieval.search", description="Search the GPU literature index (hybrid BM25 + vectors)."
    )
    parser.add_argument("query", help="what to look for")
    parser.add_argument("-k", type=int, default=5, help="number of hits (default: 5)")
    parser.add_argument("--arch", action="append", help="keep only this architecture (e.g. cdna3, hopper); repeatable")
    parser.add_argument("--topic", action="append", help="keep only this topic; repeatable")
    parser.add_argument("--mode", choices=MODES, default="hybrid", help="ranking (default: hybrid)")
    parser.add_argument("--json", action="store_true", help="print a JSON list of hits (text, source, score, metadata)")
    parser.add_argument("--index-dir", help=_INDEX_DIR_HELP)
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error(f"-k must be at least 1, got {args.k}")

    filters = {key: value for key, value in (("arch", args.arch), ("topic", args.topic)) if value}
    try:
        index = open_index(args.index_dir, embed=args.mode != "lexical")
        passages = index.search(args.query, args.k, filters, args.mode)
    except (ValueError, ManifestError) as error:
        print(f"retrieval.search: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([passage.model_dump() for passage in passages], ensure_ascii=False, indent=2))
        return 0
    console = Console()
    if not passages:
        console.print("no matches")
    for rank, passage in enumerate(passages, start=1):
        console.print(f"[bold]{rank}. {passage.source}[/bold]  [dim]score {passage.score:.4f}[/dim]", highlight=False)
        console.print(passage.text, markup=False, highlight=False)
        console.print()
    return 0
