"""solarserv: civil clock time at a place and date → true solar time (what a sundial reads)."""

__version__ = "0.1.0"
