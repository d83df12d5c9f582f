"""``kmc explore``: an interactive explorer of a model in the browser.

``kmc explore --preset zombie`` serves the explorer on http://127.0.0.1:8765/: start
from an initial state, click an enabled action to take it, see the state as the
model's ``describe()`` view with what the last action changed highlighted, go back,
and copy a link to the path.  ``kmc explore TRACE`` opens a saved trace (a check's
counterexample, for one) and steps through it; any step can branch off.  A model with
the timeline hook (:mod:`checker.timeline`) also gets its sequence diagram.

The server is the standard library's ``http.server`` (``ThreadingHTTPServer``): the
explorer is one user on the loopback interface asking for small JSON documents, which
needs no framework, no dependency and nothing to keep up to date beyond Python itself.
It binds to 127.0.0.1 unless ``--host`` says otherwise, serves only its own three
files and two read-only JSON routes, and keeps no state between requests (a path in
the URL names everything, :mod:`checker.explorer`).
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import json
import sys
import tempfile
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from checker.cmdline import (
    EXIT_CODES, EXIT_OK, build_model, config_family, model_properties, nonneg, one_line, path_arg, resolve_config,
    trace_family, user_properties, user_property_error, wrap,
)
from checker.config import load_config_file, parse_set, resolve
from checker.errors import ModelError, NoLongerFits, UsageError
from checker.errors import describe_exception as _exc
from checker.explorer import Explorer, format_path, parse_path
from checker.fingerprint import fingerprint, parse_fingerprint
from checker.model import Property
from checker.result import Step, Violation
from checker.replay import replay
from checker.trace import load_trace, write_trace
from checker.webpage import asset, served_page

DEFAULT_PORT = 8765
PATH_PROPERTY = "ExploredPath"
PATH_RATIONALE = "a path chosen in kmc explore, saved to replay or share: not a violation"


def register(sub: Any, fmt: Any) -> None:
    p = sub.add_parser(
        "explore", help="explore a model or a saved trace in the browser (a local web server)",
        allow_abbrev=False, formatter_class=fmt, epilog=EXIT_CODES,
        description=wrap("Serve an interactive explorer on the loopback interface: step from the initial "
                          "states by clicking enabled actions, see each state with what changed highlighted, "
                          "go back, copy a link to the path, download it as a trace. With TRACE, step "
                          "through a saved trace. Stop with Ctrl-C."))
    p.add_argument("trace", nargs="?", metavar="TRACE", type=path_arg, help="a saved trace to open (kmc check wrote it)")
    p.add_argument("--model", metavar="NAME|module:attr", help="model family (default: the registered model)")
    p.add_argument("--preset", metavar="P", help="configuration preset (default: the family's default preset)")
    p.add_argument("--config", metavar="FILE.toml", type=path_arg,
                   help="TOML file with preset, model and key = value lines")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="override one parameter (repeatable)")
    p.add_argument("--invariants", metavar="FILE.py", type=path_arg, action="append", default=[],
                   help="also show the properties defined in this Python file; a trace of one of them needs it "
                        "(repeatable; a file a trace records is never run)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1, this machine only, for requests that name it; "
                        "0.0.0.0: every interface, for any name, with no guard against DNS rebinding)")
    p.add_argument("--port", type=nonneg, default=DEFAULT_PORT,
                   help=f"port to listen on (default: {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    p.set_defaults(func=cmd_explore)


def explorer_for(args: argparse.Namespace) -> tuple[Explorer, list[int] | None, str]:
    """The explorer of ``args``, with a trace the trace's path, and the family's reference."""
    if args.trace:
        if args.preset or args.config or args.set:
            raise UsageError("a trace carries its own configuration: give TRACE alone, or --preset/--config/--set "
                             "without a trace")
        trace = load_trace(args.trace)
        family, ref = trace_family(trace, args.model)   # never a module the trace alone names

        @functools.cache
        def built() -> Any:
            return build_model(family, resolve(family, None, trace.config))

        @functools.cache
        def loader() -> list[Property]:
            # As kmc replay: only the files the command line names, never the ones the
            # trace records; run once, for the replay's re-check and the page alike.
            return user_properties(args.invariants, model_properties(built()))

        try:
            res = replay(trace, lambda _ref: family, property_loader=loader if args.invariants else None,
                         step_flag=None)
        except ModelError as e:
            raise user_property_error(e, args.invariants) or e
        if not res.fits:
            raise NoLongerFits(f"trace '{args.trace}' no longer fits the model: {res.reason}; "
                               f"kmc replay {args.trace} shows where")
        model = built()
        ex = Explorer(model, properties=model_properties(model) + loader(), config=trace.config, preset=trace.preset,
                      title=f"{model.name} {model.version}: {trace.property_name}")
        path = ex.path_of([s.action for s in trace.steps[1:]], parse_fingerprint(trace.steps[0].fingerprint))
        ex.trace_info = {"name": Path(args.trace).name, "property": trace.property_name, "path": path}
        return ex, path, ref
    file_cfg = load_config_file(args.config) if args.config else None
    parse_set(args.set)
    family, ref = config_family(args.model, file_cfg)
    preset, config = resolve_config(args, family, file_cfg)
    model = build_model(family, config)
    props = model_properties(model)
    ex = Explorer(model, properties=props + user_properties(args.invariants, props),
                  config=config, preset=preset, title=f"{model.name} {model.version}")
    ex.trace_info = None
    return ex, None, ref


def path_trace(ex: Explorer, path: list[int], family_ref: str) -> str:
    """The kmc-trace JSON of ``path`` (what ``kmc replay`` reads), as text."""
    w = ex.walk(path)
    if not w.states:
        raise UsageError("the empty path has no state to save: choose an initial state first")
    steps = [Step(a, s, fingerprint(ex.model, s)) for a, s in zip([None, *w.actions], w.states)]
    violation = Violation(PATH_PROPERTY, "always", steps, message=PATH_RATIONALE)
    with tempfile.TemporaryDirectory(prefix="kmc-explore-") as tmp:
        written = write_trace(tmp, family_ref=family_ref, model=ex.model, config=ex.config, preset=ex.preset,
                              violation=violation, command=f"kmc explore (path {format_path(path)})",
                              label=ex.preset or "explore")
        return written.read_text(encoding="utf-8")


LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    try:
        return host.lower() == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(host: str) -> str:
    """The name a Host header gives, without its port: ``[::1]:8765`` -> ``::1``,
    ``localhost:8765`` -> ``localhost``, ``127.0.0.1`` as it is."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def make_handler(ex: Explorer, start: str, family_ref: str, verbose: bool = False,
                 local_host: str | None = None) -> type:
    """``local_host``: the loopback address the server listens on.  A request must
    then name this machine in its Host header: a page on another site whose name
    was re-bound to 127.0.0.1 (DNS rebinding) names its own, and must not read the
    model, the trace and the rationales."""
    trace_path = ex.trace_info["path"] if ex.trace_info else None
    names = None if local_host is None else {*LOCAL_NAMES, local_host.lower().strip("[]")}

    class Handler(BaseHTTPRequestHandler):
        server_version = "kmc-explore"

        def log_message(self, fmt: str, *a: Any) -> None:
            if verbose:
                super().log_message(fmt, *a)

        def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, data: Any) -> None:
            self._send(status, json.dumps(data, ensure_ascii=False).encode(), "application/json; charset=utf-8")

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if names is not None:
                host = (self.headers.get("Host") or "").strip().lower()
                if host_name(host) not in names:
                    at = self.server.server_address[0]
                    self._json(421, {"error": f"this server answers requests for this machine only (Host "
                                              f"{host!r}): open it as http://{at}:{self.server.server_port}/"})
                    return
            url = urlparse(self.path)
            query = parse_qs(url.query)
            try:
                if url.path in ("/", "/index.html"):
                    self._send(200, served_page(start).encode(), "text/html; charset=utf-8")
                elif url.path == "/static/explorer.js":
                    self._send(200, asset("explorer.js").encode(), "text/javascript; charset=utf-8")
                elif url.path == "/static/explorer.css":
                    self._send(200, asset("explorer.css").encode(), "text/css; charset=utf-8")
                elif url.path == "/api/page":
                    page = ex.page(parse_path(query.get("path", [""])[0]), ahead=trace_path)
                    page["trace"] = ex.trace_info
                    self._json(200, page)
                elif url.path == "/api/trace":
                    path = parse_path(query.get("path", [""])[0])
                    body = path_trace(ex, path, family_ref).encode()
                    name = f"path-{format_path(path) or 'empty'}.json"
                    self._send(200, body, "application/json; charset=utf-8",
                               {"Content-Disposition": f'attachment; filename="{name}"'})
                else:
                    self._json(404, {"error": f"no such page: {url.path}"})
            except UsageError as e:
                self._json(400, {"error": str(e)})
            except ModelError as e:
                self._json(500, {"error": f"the model broke the checker's contract: {e}"})
            except Exception as e:  # noqa: BLE001 - one request fails, not the server, and no stack is shown
                print(one_line(f"kmc explore: internal error on {self.path[:200]}: {_exc(e)}"), file=sys.stderr)
                self._json(500, {"error": f"internal error of kmc: {type(e).__name__}"})

    return Handler


def serve(ex: Explorer, start: str, family_ref: str, host: str, port: int) -> ThreadingHTTPServer:
    try:
        server = ThreadingHTTPServer((host, port), make_handler(ex, start, family_ref,
                                                                local_host=host if is_loopback(host) else None))
    except OSError as e:
        hint = "choose another with --port N, or --port 0 for a free one" if port else "check --host"
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}; {hint}") from None
    server.daemon_threads = True
    return server


def cmd_explore(args: argparse.Namespace, command: str) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is out of range: give 0..65535 (0 picks a free port)")
    if not args.host.strip():
        # The socket layer takes an empty host as every interface: the opposite of
        # what leaving --host out means, so it must be said as 0.0.0.0.
        raise UsageError(f"--host {args.host!r} names no address; name one, e.g. --host 127.0.0.1 (this machine "
                         f"only, the default), or --host 0.0.0.0 to listen on every interface")
    ex, trace_path, family_ref = explorer_for(args)
    start = str(trace_path[0]) if trace_path else ("0" if len(ex.initial) == 1 else "")
    server = serve(ex, start, family_ref, args.host, args.port)
    host, port = server.server_address[:2]
    url = f"http://{host}:{port}/"
    what = f"trace {args.trace}" if args.trace else f"preset {ex.preset}" if ex.preset else "the configuration"
    # one_line: the title comes from the trace, whose escape sequences must not reach the terminal
    print(one_line(f"kmc explore: {ex.title}, {what}: serving on {url} (Ctrl-C to stop)"), flush=True)
    if args.open:
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("kmc explore: stopped", file=sys.stderr)
    finally:
        server.server_close()
    return EXIT_OK
