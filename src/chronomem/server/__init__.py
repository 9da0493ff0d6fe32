"""The HTTP service (``chronomem serve``, the ``serve`` extra): every verb of the engine under
``/v1/spaces/{space}/…``, per-space API keys, simulated space clocks. ``app.create_app`` builds
the ASGI application; ``keys`` manages keys without importing the web framework."""
