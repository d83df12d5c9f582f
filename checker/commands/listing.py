"""``kmc list``: what a model family offers (presets, parameters, flags, properties,
actions) and the registered model families, as tables wrapped to the terminal.
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from checker.cmdline import (EXIT_CODES, EXIT_OK, GROUP, MODEL_HELP, family_properties, load_family, para,
                             registered_models, show, width, wrap)

ORDER = 2


def register(sub: Any, fmt: Any) -> None:
    lst = sub.add_parser("list", help="list models, presets, parameters, flags, properties, actions",
                         allow_abbrev=False, formatter_class=fmt, epilog=EXIT_CODES,
                         description=wrap("Describe what a model family offers. With no argument, "
                                           "list everything; 'flags' also lists every parameter."))
    lst.add_argument("what", nargs="?",
                     choices=["presets", "properties", "actions", "flags", "parameters", "models"],
                     help="what to list (default: everything)")
    lst.add_argument("--model", metavar="NAME|module:attr", help=MODEL_HELP)
    lst.set_defaults(func=cmd_list)


def _table(rows: Sequence[tuple[str, ...]], indent: str = "  ") -> list[str]:
    """Rows of columns; every column but the last is padded, the last is wrapped
    under itself (or under the indent + 4 when the columns leave too little room)."""
    if not rows:
        return []
    ncols = len(rows[0])
    # A cell wider than 32 overflows its row rather than widening the whole column.
    widths = [min(max(len(r[i]) for r in rows), 32) for i in range(ncols - 1)]
    head_w = len(indent) + sum(w + 2 for w in widths)
    cont = head_w if width() - head_w >= 30 else len(indent) + 4
    out = []
    for r in rows:
        head = indent + "".join(f"{c:<{w}}  " for c, w in zip(r, widths))
        if not r[-1]:
            out.append(head.rstrip())
        elif len(head) + 20 <= width() and cont == head_w:
            out.append(para(head, r[-1], cont))
        else:  # too little room beside the columns: the text goes below them
            out.append(head.rstrip())
            out.append(para(" " * cont, r[-1]))
    return out


def cmd_list(args: argparse.Namespace, command: str) -> int:
    what = args.what or "all"
    family = ref = None
    if what != "models":
        family, ref = load_family(args.model)  # a bad --model fails before anything is printed
    if what in ("models", "all"):
        models = registered_models()
        print(f"models (entry-point group {GROUP}; or --model module:attribute):")
        if models:
            print("\n".join(_table([(name, ep.value) for name, ep in models.items()])))
        else:
            print("  (none registered; is kmc installed? pip install -e .)")
        if what == "models":
            return EXIT_OK
        print()
    print(f"model family {family.name} {family.version} ({ref})")
    params = family.parameters
    if what in ("presets", "all"):
        print()
        print(f"presets (default: {family.default_preset}; pick one with --preset NAME):")
        rows = []
        for name, p in family.presets.items():
            over = " ".join(f"{k}={show(v)}" for k, v in p.overrides.items())
            rows.append((name, p.doc + (f"  [{over}]" if over else "")))
        print("\n".join(_table(rows)))
    if what in ("parameters", "flags", "all"):
        print()
        print("parameters (change with --set key=value):")
        print("\n".join(_table([(name, _param_range(p), f"default {show(p.default)}", p.doc)
                                for name, p in params.items()])))
    if what in ("flags", "all"):
        print()
        print("flags (boolean parameters; --set name=true|false):")
        flags = [p for p in params.values() if isinstance(p.default, bool)]
        print("\n".join(_table([(p.name, f"default {show(p.default)}", p.doc) for p in flags])))
        if not flags:
            print("  (none)")
    if what in ("properties", "all"):
        print()
        print("properties (check some with --property NAME):")
        rows = []
        for p, where in family_properties(family):
            kind = p.kind + (" (step)" if p.step else "")
            note = ""
            if where is not None:
                note = (f" [declared in presets: {', '.join(where)}]" if where
                        else " [declared by no preset: needs other settings]")
            rows.append((p.name, kind, p.rationale + note))
        rows.append(("Deadlock", "(built in)", "a non-terminal state with no enabled action (off with --no-deadlock)"))
        print("\n".join(_table(rows)))
    if what in ("actions", "all"):
        print()
        print("actions:")
        docs = dict(family.action_docs())
        print("\n".join(_table(list(docs.items()))))
        if not docs:
            print("  (not documented by the family)")
    return EXIT_OK


def _param_range(p: Any) -> str:
    t = type(p.default).__name__
    if p.choices is not None:
        return f"{t} in {{{', '.join(show(c) for c in p.choices)}}}"
    if p.minimum is not None or p.maximum is not None:
        lo = "" if p.minimum is None else str(p.minimum)
        hi = "" if p.maximum is None else str(p.maximum)
        return f"{t} {lo}..{hi}"
    return t
