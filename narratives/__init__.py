"""The built-in narrative templates (``*.j2`` beside this file), one per text block.

Installed as the package ``solarserv.narratives`` (pyproject.toml maps this folder into solarserv). The
filters they use are ``solarserv.formatting.FILTERS``, registered on the one Jinja environment
(``solarserv.narration``).
"""
