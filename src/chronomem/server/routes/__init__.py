"""The service's routes, by concern; each module's ``register`` adds its routes."""
