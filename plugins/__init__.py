"""Built-in plugins: ordinary solarserv plugins, registered like third-party ones.

Installed as the package ``solarserv.plugins`` (pyproject.toml maps this folder into solarserv).
"""
