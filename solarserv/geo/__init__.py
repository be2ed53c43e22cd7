"""Where things are: geocoders (place name → places, coordinates → display name) and timezones.

Here: the ``Geocoder`` protocol that the offline and online geocoders follow, and ``build_geocoder``, which
picks one by GEOCODER.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from solarserv.models import Place

if TYPE_CHECKING:  # the offline geocoder's modules are imported only when it is chosen (build_geocoder)
    from solarserv.geo.discs import PlaceDiscs


@dataclass(frozen=True)
class Located:
    """The place a name resolved to, with plain sentences on how it was chosen (for validation)."""

    place: Place
    notes: tuple[str, ...] = ()
    # True when the name matched several places in one country and the most populous was taken.
    chosen_among_several: bool = False


class Geocoder(Protocol):
    name: str
    # Answers at once (/healthz's geocoder_ready): the offline gazetteer's is False while it builds or loads its index,
    # or for good if that failed; an online one's while its provider's rate-limit refusal holds.
    ready: bool

    async def locate(self, place_name: str) -> Located:
        """Resolve a free-text name. Raises ApiError PLACE_NOT_FOUND (404), AMBIGUOUS_LOCATION (409,
        with candidates), or GEOCODER_UNAVAILABLE (503) when an online provider fails or the offline
        index could not be built or read."""
        ...

    async def describe(self, latitude: float, longitude: float) -> Place | None:
        """A place to show for coordinates; None when nothing sensible is near. Its ``timezone``, given only for a
        town holding the point, is the point's zone where no zone's polygon holds it."""
        ...


def geocoder_module(name: str) -> str:
    """The module of the geocoder GEOCODER names, imported only when it is chosen: with an online geocoder, the
    gazetteer and rapidfuzz are never imported."""
    return "solarserv.geo.offline" if name == "offline" else "solarserv.geo.online"


def build_geocoder(settings: Any, towns: PlaceDiscs | None = None) -> Geocoder:
    """The geocoder `settings.geocoder` names: "offline" (the embedded gazetteer, the default) or a
    geopy service ("nominatim", "photon"). Returns at once; nothing here waits for the network.
    ``towns``: the offline gazetteer's places already read (`geo.offline.read_towns`)."""
    geocoders = importlib.import_module(geocoder_module(settings.geocoder))
    if settings.geocoder == "offline":
        return geocoders.OfflineGeocoder(settings.data_dir, towns)
    return geocoders.OnlineGeocoder.from_settings(settings)
