"""What ``kmc prove`` and ``kmc bmc`` share: the configuration options and loading a
family's symbolic encoding.

A model family exposes its encoding with an optional method
``symbolic(config) -> checker.symbolic.SymbolicModel``; it may raise ``ValueError``
for a configuration the encoding does not cover (a one-line error, exit 2).
"""

from __future__ import annotations

import argparse
from typing import Any

from checker.cmdline import (
    Z3_MAX_SECONDS, config_family, config_text, para, path_arg, positive, resolve_config, z3_seconds,
)
from checker.errors import ModelError, UsageError
from checker.errors import describe_exception as _exc


def add_config_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="NAME|module:attr",
                   help="model family (default: the registered model, 'kafka' if there are several)")
    p.add_argument("--preset", metavar="P", help="configuration preset (default: the family's default preset)")
    p.add_argument("--config", metavar="FILE.toml", type=path_arg,
                   help="TOML file with preset = \"...\" and key = value lines")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="override one parameter (repeatable; applied after the preset and --config)")
    p.add_argument("--brokers", metavar="N", type=positive, help="number of brokers (the same as --set brokers=N)")
    p.add_argument("--timeout", metavar="SECONDS", type=z3_seconds,
                   help=f"give z3 at most this long per query, up to {Z3_MAX_SECONDS} s (default: no limit)")
    p.add_argument("--quiet", action="store_true", help="no header and no progress lines")


def load(args: argparse.Namespace) -> tuple[Any, str, str, dict, bool, Any]:
    """``(family, family_ref, preset, config, custom, symbolic model)`` for the options."""
    from checker.config import load_config_file, parse_set, resolve

    file_cfg = load_config_file(args.config) if args.config else None
    sets = parse_set(args.set)
    if args.brokers is not None:
        if "brokers" in sets and sets["brokers"] != str(args.brokers):
            raise UsageError(f"--brokers {args.brokers} and --set brokers={sets['brokers']} disagree (--brokers N "
                             f"is --set brokers=N); give one of them")
        args.set = [*args.set, f"brokers={args.brokers}"]
    family, family_ref = config_family(args.model, file_cfg)
    symbolic = getattr(family, "symbolic", None)
    if symbolic is None:
        raise UsageError(f"model family {family.name!r} has no symbolic encoding (no symbolic(config) method); "
                         f"use kmc check for it")
    preset, config = resolve_config(args, family, file_cfg)
    custom = config != resolve(family, preset, {})
    try:
        sym = symbolic(config)
    except ValueError as e:
        msg = " ".join(str(e).split())
        raise UsageError(f"the symbolic encoding of model {family.name!r} does not cover this configuration: "
                         f"{msg}") from None
    except (UsageError, ModelError):
        raise
    except Exception as e:
        raise ModelError(f"{family.name}.symbolic(config) raised {_exc(e)}") from e
    return family, family_ref, preset, config, custom, sym


def header(cmd: str, sym: Any, family_ref: str, preset: str, custom: bool, config: dict, out: Any) -> None:
    print(f"kmc {cmd}: {sym.name} (family {family_ref}), preset {preset}{' with overrides' if custom else ''}",
          file=out)
    print(config_text("config: ", config), file=out)
    if sym.coverage():
        print(para("encodes: ", sym.coverage()), file=out)
    out.flush()
