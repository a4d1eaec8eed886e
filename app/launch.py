"""DefSent Studio's launcher: `python app.py` or `defsent-studio` serves the web app on
http://127.0.0.1:7860 (offline).

The server answers at once; the model loads in the background (requests wait for it), then the
reference sentences are embedded and UMAP is warmed up (maps use PCA until then).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no telemetry calls from an offline server
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
AUTH_ENV = "DEFSENT_AUTH"
TRUSTED_PROXIES_ENV = "DEFSENT_TRUSTED_PROXIES"  # app.server.gate reads no variable: the launcher hands it the value


def parse_auth(value: str | None) -> tuple[str, str] | None:
    """USER:PASSWORD as (user, password) for Gradio's login page; None for no value. ValueError for
    anything else (the password may hold ':', the user may not; neither may be empty or blank)."""
    if value is None or not value.strip():
        return None
    user, colon, password = value.strip().partition(":")
    if not colon or not user.strip() or not password.strip():
        raise ValueError("expected USER:PASSWORD, both non-empty (e.g. alice:a-long-passphrase)")
    return user.strip(), password


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The launcher's flags, checked (a bad value stops with a message: SystemExit)."""
    parser = build_parser()
    return checked_args(parser, parser.parse_args(argv))


def address_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`parser` with the flags of the address the app listens on."""
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", 7860)))
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The launcher's flags, unchecked."""
    from app.settings import DEVICE_ENV, QUEUE_SIZE  # imports torch (core's package): seconds
    parser = address_flags(argparse.ArgumentParser(description=__doc__,
                                                   formatter_class=argparse.RawDescriptionHelpFormatter))
    parser.add_argument("--share", action="store_true", help="also open a public gradio.live link")
    parser.add_argument("--public", action="store_true",
                        help="public mode (on by itself when $SPACE_ID is set): each visitor's model choice and saved "
                             "models are their own, fine-tuning has a quota and one slot, disk use is capped, "
                             "Evaluate reads only the bundled data")
    parser.add_argument("--auth", default=os.environ.get(AUTH_ENV), metavar="USER:PASSWORD",
                        help=f"ask for this user name and password before the app opens (or ${AUTH_ENV}; the "
                             "variable keeps the password out of the process list)")
    parser.add_argument("--trusted-proxies", default=os.environ.get(TRUSTED_PROXIES_ENV), metavar="ADDRESSES",
                        help="comma-separated addresses or networks of the proxies in front of the app whose "
                             "X-Forwarded-For / Forwarded headers name the client (or $" + TRUSTED_PROXIES_ENV +
                             "); anyone else's headers are ignored and the connecting address counts (default: "
                             "none; on a Hugging Face Space its own proxy, private and loopback addresses)")
    parser.add_argument("--queue-size", type=int, default=QUEUE_SIZE,
                        help=f"requests that may wait; past this users are told the app is busy (default {QUEUE_SIZE})")
    parser.add_argument("--model", type=Path, default=None,
                        help="checkpoint folder to serve (default: defsent-minilm in --checkpoints, else the "
                             "shipped checkpoints/defsent-minilm)")
    parser.add_argument("--checkpoints", type=Path, default=None,
                        help="folder of checkpoints to list and save into (default: checkpoints/)")
    parser.add_argument("--threads", type=int, default=int(os.environ.get("DEFSENT_THREADS", 1)),
                        help="threads for torch, BLAS and numba (default 1, or $DEFSENT_THREADS)")
    parser.add_argument("--no-umap-warmup", action="store_true", help="do not warm UMAP up in the background")
    parser.add_argument("--single-token-words", action="store_true",
                        help="answer with the word head's single-token words only (skips embedding the 147k "
                             "WordNet words and phrases in the background, minutes once per model)")
    parser.add_argument("--warm-up-delay", type=float, default=10.0,
                        help="seconds after the model loads before background warm-up starts (default 10)")
    parser.add_argument("--device", default=os.environ.get(DEVICE_ENV, "auto"),
                        help="where models compute and fine-tunes train: auto (a CUDA GPU, else Apple's MPS, else "
                             f"the CPU), cpu, cuda, cuda:N or mps (or ${DEVICE_ENV})")
    return parser


def checked_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """`args` with their values checked and parsed (the login, the trusted proxies, the device)."""
    try:
        args.auth = parse_auth(args.auth)
    except ValueError as err:
        parser.error(f"--auth (or ${AUTH_ENV}): {err}")
    from app.server.public import public_mode
    from app.server.gate import trusted_proxies
    try:
        args.trusted_proxies = trusted_proxies(args.trusted_proxies, on_space=public_mode())  # $SPACE_ID
    except ValueError as err:
        parser.error(f"--trusted-proxies (or ${TRUSTED_PROXIES_ENV}): {err}")
    from app.settings import DEVICE_ENV
    from core.runtime import DeviceError, resolve_device
    try:
        args.device = str(resolve_device(args.device))
    except DeviceError as err:
        parser.error(f"--device (or ${DEVICE_ENV}): {err}")
    return args


def exposure_warnings(host: str, share: bool, public: bool = False) -> list[str]:
    """Warnings for a server reachable from other machines (anything but loopback, or a share link)."""
    warnings = []
    if share:
        warnings.append("WARNING: --share publishes this app on a public gradio.live address: anyone with the "
                        "link can use it, upload files" + ("." if public else " and switch the shared model "
                                                            "(--public keeps each visitor's choice to themselves)."))
    if host not in LOOPBACK:
        warnings.append(f"WARNING: binding {host}: the app is reachable from other machines.")
    return warnings


def serve(demo, args: argparse.Namespace, public=None) -> None:
    """Start serving `demo` as `args` say, without blocking; returns once the server listens. With `public` (an
    app.server.public.PublicLimits) the routes are those of public mode (app.server.gate.middleware).

    Gradio's launch then asks for its own page once (HEAD / with a 3 s timeout) and, if that fails, stops
    with "When localhost is not accessible, a shareable link must be created": on a busy machine, or while
    the model loads beside it, a first page can take longer, and the app died at start. The server listens
    on the address we bound by then, so that check is skipped (`_frontend=False` skips nothing else).
    """
    from app.server.gate import middleware, trust_proxies
    from app.settings import MAX_UPLOAD_BYTES
    trust_proxies(args.trusted_proxies)
    from app.ui import CSS, theme
    demo.launch(server_name=args.host, server_port=args.port, share=args.share, auth=args.auth, theme=theme(),
                css=CSS, prevent_thread_lock=True, footer_links=["api"], max_file_size=MAX_UPLOAD_BYTES,
                # Gradio's own lines ("set `share=True` in `launch()`", its URL) only where they say something: the
                # app prints its address itself, and a share link is Gradio's to print
                quiet=not args.share,
                # any body over ~21 MB: 413; a login gate with --auth; uploads within the disk budget; cancels
                app_kwargs={"middleware": middleware(demo, login=args.auth is not None, public=public)},
                _frontend=False)


STARTING_PAGE = (b"<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=2><title>DefSent Studio</title>"
                 b"<p>DefSent Studio is starting; this page reloads by itself in a moment.</p>")


class StartingPage:
    """While the app starts (imports, building the page: 14-45 s on a busy 2-core machine, issue 61) its port
    answers every request 503 with a page that reloads itself every 2 s (Retry-After: 2), instead of refusing
    connections; `close` hands the port over to the app's server. Standard library only, so it listens within
    the first seconds of a launch."""

    def __init__(self, host: str, port: int):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Starting(BaseHTTPRequestHandler):
            def answer(self) -> None:
                self.send_response(503)
                for name, value in (("Content-Type", "text/html; charset=utf-8"), ("Retry-After", "2"),
                                    ("Content-Length", str(len(STARTING_PAGE)))):
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(STARTING_PAGE)
            do_GET = do_POST = do_HEAD = answer

            def log_message(self, *args) -> None:  # not the app's log
                pass

        self.server = ThreadingHTTPServer((host, port), Starting)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, name="starting-page", daemon=True).start()

    @classmethod
    def open(cls, host: str, port: int) -> "StartingPage | None":
        """The page on `host:port`; None when the port cannot be had (the app's own start then says why)."""
        try:
            return cls(host, port)
        except OSError:
            return None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    address = address_flags(argparse.ArgumentParser(add_help=False)).parse_known_args(argv)[0]
    starting = StartingPage.open(address.host, address.port)  # before anything heavy is imported
    try:
        parser = build_parser()
        return _start(checked_args(parser, parser.parse_args(argv)), started, starting)
    finally:
        if starting is not None:
            starting.close()  # once more, harmless: the start may have failed before handing the port over


def _start(args: argparse.Namespace, started: float, starting: StartingPage | None) -> int:
    """Load, build and serve the app as `args` say (the port held by `starting` until the server takes it)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from app.settings import DEVICE_ENV, configure_numba_cache, limit_threads
    limit_threads(max(1, args.threads))
    os.environ[DEVICE_ENV] = args.device  # read where models load, training processes included (app/settings.py)
    configure_numba_cache()
    from app.handlers import start_studio
    from app.shared.models import ModelSpec, default_spec
    from app.server.public import PublicLimits, own_temp_folder, public_mode
    from core.checkpoint import CHECKPOINTS_DIR

    checkpoints = args.checkpoints or CHECKPOINTS_DIR
    spec = ModelSpec(args.model.name, args.model) if args.model else default_spec(checkpoints)
    public = PublicLimits() if public_mode(args.public) else None
    if public is not None:
        own_temp_folder(args.port)  # a killed server's uploads are not counted in this one's disk budget
    studio = start_studio(spec, checkpoints, not args.no_umap_warmup, args.warm_up_delay,
                          open_vocabulary=not args.single_token_words, public=public)
    from app.server.gate import PUBLIC_SHARES, QueueShares
    from app.ui import build_app
    from app.wiring import enable_queue
    demo = enable_queue(build_app(studio), max_size=args.queue_size,
                        shares=PUBLIC_SHARES if public else QueueShares())
    for warning in exposure_warnings(args.host, args.share, public is not None):
        print(warning, file=sys.stderr)
    if starting is not None:
        starting.close()
    serve(demo, args, public)
    print(f"DefSent Studio listening on http://{args.host}:{args.port} "
          f"({time.perf_counter() - started:.1f} s after start; serving {spec.name} on {args.device}"
          f"{'; public mode' if public else ''}{'; login required' if args.auth else ''})", flush=True)
    demo.block_thread()
    return 0

