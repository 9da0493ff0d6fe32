"""The CLI's commands about serving: ``serve``, API ``keys`` (managed on the store) and the stdio
MCP server."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from chronomem.cli.render import print_json, short_time
from chronomem.cli.settings import Settings, embedder_for, engine_class, llm_client, open_memory
from chronomem.clock import SystemClock
from chronomem.errors import ConfigError

if TYPE_CHECKING:
    from chronomem.stores.base import MemoryStore

__all__: list[str] = []


def serve_command(args: argparse.Namespace, cfg: Settings) -> int:
    from chronomem.server.run import ServeSettings, serve

    if cfg.now is not None:
        raise ConfigError(
            "serve: each space keeps its own clock (PUT /v1/spaces/{space}/clock); --now "
            "(CHRONOMEM_NOW) is for commands run on a store"
        )
    embedder = embedder_for(cfg)
    llm = llm_client(cfg) if cfg.llm_url and cfg.llm_model else None
    return serve(
        ServeSettings(
            db=cfg.db,
            host=args.host,
            port=args.port,
            embedder=embedder,
            preset=args.preset,
            llm=llm,
            max_body_bytes=int(args.max_body_mb * (1 << 20)),
            readers=args.readers,
            log_format=args.log_format,
            webhook_lease=args.webhook_lease,
            # As many model runs at once as the cores hold at CHRONOMEM_TORCH_THREADS each.
            embedder_runs=max(1, (os.cpu_count() or 1) // cfg.torch_threads)
            if cfg.torch_threads
            else 1,
        )
    )


def _key_store(cfg: Settings) -> MemoryStore:
    from chronomem.stores import open_store

    if cfg.server:
        raise ConfigError("keys are managed on the store (--db), not through --server")
    return open_store(cfg.db)


def keys_create_command(args: argparse.Namespace, cfg: Settings) -> int:
    from chronomem.server.keys import create_key

    store = _key_store(cfg)
    try:
        space = None if args.all_spaces else cfg.space
        key, token = create_key(
            store,
            space=space,
            scope=args.scope,
            label=args.label,
            now=cfg.now or SystemClock().now(),
        )
    finally:
        store.close()
    if args.json:
        print_json({**key.to_dict(), "key": token})
    else:
        where = "every space" if key.space is None else f"space {key.space!r}"
        print(token)
        print(f"(key {key.id}: {key.scope.value} on {where}; shown once, store it now)",
              file=sys.stderr)  # fmt: skip
    return 0


def keys_list_command(args: argparse.Namespace, cfg: Settings) -> int:
    store = _key_store(cfg)
    try:
        found = store.api_keys()
    finally:
        store.close()
    if args.json:
        print_json([k.to_dict() for k in found])
        return 0
    for k in found:
        state = "active" if k.is_active else f"revoked {short_time(k.revoked_at)}"  # type: ignore[arg-type]
        where = "*" if k.space is None else k.space
        print(f"{k.id}  {k.scope.value:<5}  {where:<16}  {state:<22}  {k.label or ''}")
    if not found:
        print("no keys: a server on 127.0.0.1 is open to the local user until one is created")
    return 0


def keys_revoke_command(args: argparse.Namespace, cfg: Settings) -> int:
    from chronomem.server.keys import revoke_key

    store = _key_store(cfg)
    try:
        key = revoke_key(store, args.id, now=cfg.now or SystemClock().now())
    finally:
        store.close()
    if args.json:
        print_json(key.to_dict())
    else:
        print(f"{key.id} revoked")
    return 0


def mcp_command(args: argparse.Namespace, cfg: Settings) -> int:
    """Serve the MCP tools over stdio until the client disconnects (stdout is the protocol:
    nothing else is printed there)."""
    try:
        import anyio

        from chronomem.server.mcp_server import build_server, stdio_binding
    except ImportError as exc:
        raise ConfigError(
            f"chronomem mcp needs the mcp extra: pip install 'chronomem[mcp]' ({exc})"
        ) from exc
    if cfg.server:
        raise ConfigError(
            "chronomem mcp works on the store (--db); a service has its own MCP endpoint at "
            "/v1/spaces/{space}/agents/{agent}/mcp"
        )
    memory = open_memory(
        cfg, create=True, writes=True
    )  # the agent writes to it: like remember, it creates
    assert isinstance(memory, engine_class())
    with memory:
        server = build_server(stdio_binding(memory, args.agent))
        anyio.run(server.run_stdio_async)
    return 0
